// Never finishes. The loop condition re-reads a volatile copy of the scalar argument n on every
// iteration and each iteration stores to global memory through a volatile pointer, so the loop can
// be neither folded nor assumed to terminate (expect TIMEOUT).
__kernel void vector_add(__global const float* a, __global const float* b, __global float* out,
                         long n) {
  const long i = get_global_id(0);
  volatile long limit = n;
  volatile __global float* dst = out;
  for (long k = 0; limit > 0; ++k) {  // limit never changes: loops forever for n > 0
    if (i < n) dst[i] = a[i] + b[i] + (float)(k & 1);
  }
}
