// A resume zygote for resume_test.cpp (the library's half linked in, no interpreter): serves
// launches; a resumed command prints its argv, its environment and what it sees of its own
// process, then exits with argv[1] as its status when that is a number.
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

extern "C" int kjsbx_resume_serve();
extern "C" int kjsbx_resumed_count(int which);
extern "C" const char* kjsbx_resumed_item(int which, int i);

namespace {

std::string line_of(const char* path, const std::string& key) {
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(key, 0) == 0) return line;
  return key + " ?";
}

}  // namespace

int main() {
  if (kjsbx_resume_serve() != 1) return 3;
  std::ostringstream out;
  for (int which = 0; which < 2; ++which) {
    out << (which == 0 ? "argv:" : "env:");
    for (int i = 0; i < kjsbx_resumed_count(which); ++i) out << " " << kjsbx_resumed_item(which, i);
    out << "\n";
  }
  out << "zygote env: " << (std::getenv("ZYGOTE_ONLY") ? "visible" : "absent") << "\n";
  out << "fd3: " << (::fcntl(3, F_GETFD) == -1 ? "closed" : "open") << "\n";
  out << "uid: " << ::getuid() << "\n";
  out << line_of("/proc/self/status", "NoNewPrivs:") << "\n" << line_of("/proc/self/status", "Seccomp:") << "\n";
  std::ifstream cmd("/proc/1/cmdline");
  std::string pid1;
  std::getline(cmd, pid1, '\0');
  out << "pid1: " << pid1 << "\n";
  std::fputs(out.str().c_str(), stdout);
  std::fflush(stdout);
  const int n = kjsbx_resumed_count(0);
  return n > 1 ? std::atoi(kjsbx_resumed_item(0, 1)) : 0;
}
