// Does not compile: undeclared identifier and a missing semicolon (expect COMPILE_ERROR).
__kernel void vector_add(__global const float* a, __global const float* b, __global float* out,
                         long n) {
  const long i = get_global_id(0);
  if (i < n) out[i] = a[i] + b[i] + bias
}
