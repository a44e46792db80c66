// Sanitizer builds only: keep the runner's contract that a crashing kernel kills the process with
// its signal (ASan would otherwise catch SIGSEGV/SIGBUS/SIGFPE, print a report and exit 1, which
// reads as "report written with ok=false"). The environment's ASAN_OPTIONS still override these.
#if defined(__SANITIZE_ADDRESS__)
extern "C" const char* __asan_default_options() {
  return "handle_segv=0:handle_sigbus=0:handle_sigfpe=0";
}
#endif
