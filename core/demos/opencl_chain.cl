// Two stages on one queue: A is heavy (a long polynomial per element), B is light.
__kernel void stage_a(__global const float* x, __global float* y, const int rounds) {
  int i = get_global_id(0);
  float v = x[i];
  for (int r = 0; r < rounds; ++r) {
    v = v * 0.999f + 0.001f * (v * v - 0.5f);
  }
  y[i] = v;
}

__kernel void stage_b(__global const float* y, __global float* z) {
  int i = get_global_id(0);
  z[i] = 2.0f * y[i] + 1.0f;
}
