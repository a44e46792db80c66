// Attack programs of the adversarial battery: one small program, one attack per mode
// (argv[1]). Compiled at test-build time without sanitizers; run inside real sandboxes.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double thread_cpu(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}
static double burn_seconds = 1;
static void* burn(void* arg) {
  (void)arg;
  volatile unsigned long x = 0;
  while (thread_cpu() < burn_seconds) ++x;
  return NULL;
}
static void* spin(void* arg) {
  (void)arg;
  for (volatile unsigned long x = 0;; ++x) {
  }
  return NULL;
}

int main(int argc, char** argv) {
  if (argc < 2) return 100;
  const char* m = argv[1];
  const char* a2 = argc > 2 ? argv[2] : "0";
  // --- privilege and namespace escapes (expected: killed by seccomp before returning)
  if (!strcmp(m, "unshare")) return unshare(CLONE_NEWUSER | CLONE_NEWNS) == 0 ? 0 : 1;
  if (!strcmp(m, "clone_ns")) {
    long r = syscall(SYS_clone, CLONE_NEWNS | CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);
    if (r == 0) _exit(0);
    return r > 0 ? 0 : 1;
  }
  if (!strcmp(m, "setns")) return setns(open("/proc/self/ns/net", O_RDONLY), 0) == 0 ? 0 : 1;
  if (!strcmp(m, "mount")) return mount("none", "/tmp", "tmpfs", 0, NULL) == 0 ? 0 : 1;
  if (!strcmp(m, "ptrace")) return ptrace(PTRACE_TRACEME, 0, 0, 0) == 0 ? 0 : 1;
  if (!strcmp(m, "mknod_dev")) return mknod("/tmp/mem", S_IFCHR | 0666, makedev(1, 1)) == 0 ? 0 : 1;
  if (!strcmp(m, "mkfifo")) return mkfifo("/tmp/fifo", 0600) == 0 ? 0 : 1;
  if (!strcmp(m, "chroot")) return chroot("/tmp") == 0 ? 0 : 1;
  // --- syscall surface
  if (!strcmp(m, "io_uring")) {
    char params[120] = {0};
    return syscall(SYS_io_uring_setup, 8, params) >= 0 ? 0 : 1;
  }
  if (!strcmp(m, "userfaultfd")) return syscall(SYS_userfaultfd, 0) >= 0 ? 0 : 1;
  if (!strcmp(m, "perf_event_open")) {
    struct perf_event_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.size = sizeof attr;
    attr.type = PERF_TYPE_SOFTWARE;
    return syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0) >= 0 ? 0 : 1;
  }
  if (!strcmp(m, "bpf")) return syscall(SYS_bpf, 0, NULL, 0) >= 0 ? 0 : 1;
  if (!strcmp(m, "keyctl")) return syscall(SYS_keyctl, 0 /* KEYCTL_GET_KEYRING_ID */, -3, 0) >= 0 ? 0 : 1;
  if (!strcmp(m, "add_key")) return syscall(SYS_add_key, "user", "k", "v", 1, -3) >= 0 ? 0 : 1;
  if (!strcmp(m, "tiocsti")) {
    char c = 'x';
    int r = ioctl(0, TIOCSTI, &c);
    printf("%d\n", r == 0 ? 0 : errno);
    return 0;
  }
  if (!strcmp(m, "tiocsti_high")) {  // upper bits set: the kernel truncates cmd to 32 bits
    char c = 'x';
    long r = syscall(SYS_ioctl, 0, 0x100000000ul | TIOCSTI, &c);
    printf("%d\n", r == 0 ? 0 : errno);
    return 0;
  }
  if (!strcmp(m, "int80")) {  // i386 getpid through the 32-bit ABI
    long ret;
    __asm__ volatile("int $0x80" : "=a"(ret) : "a"(20) : "memory");
    return ret > 0 ? 0 : 1;
  }
  if (!strcmp(m, "x32")) return syscall(0x40000000 | 39) > 0 ? 0 : 1;
  if (!strcmp(m, "sockets")) {  // prints "family:errno" per family
    int fams[] = {AF_UNIX, AF_INET, AF_INET6, AF_NETLINK, AF_PACKET};
    for (unsigned i = 0; i < sizeof fams / sizeof fams[0]; ++i) {
      int fd = socket(fams[i], SOCK_DGRAM, 0);
      printf("%d:%d\n", fams[i], fd >= 0 ? 0 : errno);
    }
    return 0;
  }
  if (!strcmp(m, "clone3")) {
    char args[88] = {0};
    long r = syscall(SYS_clone3, args, sizeof args);
    printf("clone3:%d\n", r < 0 ? errno : 0);
    pthread_t t;
    burn_seconds = 0;
    if (pthread_create(&t, NULL, burn, NULL) != 0) return 2;
    pthread_join(t, NULL);
    return 0;
  }
  if (!strcmp(m, "kill_all")) {
    kill(-1, SIGKILL);
    return 7;
  }
  if (!strcmp(m, "kill_pid")) {
    int r = kill(atoi(a2), SIGKILL);
    printf("%d\n", r == 0 ? 0 : errno);
    return 0;
  }
  // --- resources
  if (!strcmp(m, "forkbomb")) {
    for (;;) fork();
  }
  if (!strcmp(m, "membomb")) {
    for (;;) {
      char* p = malloc(1 << 20);
      if (p) memset(p, 1, 1 << 20);
    }
  }
  if (!strcmp(m, "fill")) {  // fill a file system until it refuses; prints errno
    int fd = open(a2, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) return 2;
    static char buf[1 << 16];
    memset(buf, 'x', sizeof buf);
    signal(SIGXFSZ, SIG_IGN);
    for (;;)
      if (write(fd, buf, sizeof buf) < 0) break;
    printf("%d\n", errno);
    return 0;
  }
  if (!strcmp(m, "spin_threads")) {
    int n = atoi(a2);
    pthread_t t;
    for (int i = 0; i < n; ++i) pthread_create(&t, NULL, spin, NULL);
    spin(NULL);
  }
  if (!strcmp(m, "sleep")) {
    for (;;) pause();
  }
  if (!strcmp(m, "sigstop")) {
    raise(SIGSTOP);
    return 0;
  }
  if (!strcmp(m, "daemon")) {  // double fork + setsid, the grandchild execs sleep a2
    if (fork() == 0) {
      setsid();
      if (fork() == 0) {
        execl("/bin/sleep", "sleep", a2, (char*)NULL);
        _exit(1);
      }
      _exit(0);
    }
    wait(NULL);
    return 0;
  }
  if (!strcmp(m, "ignore_signals")) {
    for (int s = 1; s < 65; ++s) signal(s, SIG_IGN);
    for (volatile unsigned long x = 0;; ++x) {
    }
  }
  if (!strcmp(m, "fds")) {  // open until refused: prints count and errno
    int n = 0;
    while (open("/dev/null", O_RDONLY) >= 0) ++n;
    printf("%d %d\n", n, errno);
    return 0;
  }
  if (!strcmp(m, "flood")) {  // 10 GiB to stdout
    static char buf[1 << 20];
    memset(buf, 'y', sizeof buf);
    for (int i = 0; i < 10240; ++i)
      if (write(1, buf, sizeof buf) < 0) return 3;
    return 0;
  }
  // --- reporting accuracy
  if (!strcmp(m, "alloc")) {  // touch a2 MiB, then hold it briefly
    size_t n = (size_t)atol(a2) << 20;
    char* p = malloc(n);
    if (!p) return 2;
    for (size_t i = 0; i < n; i += 4096) p[i] = 1;
    usleep(50000);
    return p[n / 2] == 1 ? 0 : 3;
  }
  if (!strcmp(m, "burn")) {  // a2 threads, each 1 s of its own CPU time
    int n = atoi(a2);
    pthread_t t[64];
    for (int i = 0; i < n && i < 64; ++i) pthread_create(&t[i], NULL, burn, NULL);
    for (int i = 0; i < n && i < 64; ++i) pthread_join(t[i], NULL);
    return 0;
  }
  if (!strcmp(m, "signal")) {
    signal(atoi(a2), SIG_DFL);
    raise(atoi(a2));
    return 99;
  }
  if (!strcmp(m, "exit")) return atoi(a2);
  return 100;
}
