// out = a * x + y
__kernel void saxpy(__global const float* x, __global const float* y, __global float* out, const float a) {
  size_t i = get_global_id(0);
  out[i] = a * x[i] + y[i];
}
