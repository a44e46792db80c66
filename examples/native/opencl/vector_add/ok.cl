// Correct candidate: same result, restrict-qualified buffers.
__kernel void vector_add(__global const float* restrict a, __global const float* restrict b,
                         __global float* restrict out, long n) {
  const long i = get_global_id(0);
  if (i < n) out[i] = a[i] + b[i];
}
