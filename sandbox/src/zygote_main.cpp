// The static zygote executable embedded in libkjsandbox (sandbox/CMakeLists.txt): it only serves
// the library that started it (zygote.cpp), never runs on its own.
#include "zygote.h"

int main() {
  kjsandbox::zygote_serve_from_environment();  // returns only when not started as a zygote
  return 2;
}
