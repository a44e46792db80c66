// Wrong candidate: subtracts instead of adding (expect INCORRECT).
__kernel void vector_add(__global const float* a, __global const float* b, __global float* out,
                         long n) {
  const long i = get_global_id(0);
  if (i < n) out[i] = a[i] - b[i];
}
