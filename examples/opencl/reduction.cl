// Partial sums: each work-group of 256 adds its slice in local memory.
__kernel void partial_sums(__global const float* x, __global float* sums) {
  __local float scratch[256];
  size_t lid = get_local_id(0);
  scratch[lid] = x[get_global_id(0)];
  barrier(CLK_LOCAL_MEM_FENCE);
  for (size_t stride = get_local_size(0) / 2; stride > 0; stride /= 2) {
    if (lid < stride) scratch[lid] += scratch[lid + stride];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) sums[get_group_id(0)] = scratch[0];
}
