// Crashes: work-item 0 writes through a null global pointer. The pointer lives in a volatile
// private variable, so the compiler must load it at run time and cannot drop the store as UB.
// On PoCL (CPU) this is a SIGSEGV of the process; on a GPU an error from the queue (clFinish /
// the event status). Both are runtime errors (expect RUNTIME_ERROR).
__kernel void vector_add(__global const float* a, __global const float* b, __global float* out,
                         long n) {
  const long i = get_global_id(0);
  __global float* volatile target = 0;
  if (i < n) out[i] = a[i] + b[i];
  if (i == 0) *target = out[0];
}
