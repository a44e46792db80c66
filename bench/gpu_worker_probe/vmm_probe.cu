// Settles two questions before the GPU worker relies on them (issue 12):
//  1. Does the driver fault a write through a VMM mapping whose access is PROT_READ, and can the
//     importing process upgrade its own access to read-write (then read-only is not a defence)?
//  2. Does a VMM allocation exported as a POSIX fd and passed over a unix socket (SCM_RIGHTS)
//     import in a process inside kjudge's sandbox (other user, PID, mount and net namespaces)?
// exporter <sock> <n>: allocates, fills with a pattern, serves the fd to n clients one after
//   another, and after each reports whether its memory still holds the pattern.
// importer <sock> <mode>: mode read | write_kernel | memcpy | upgrade_write. Prints one JSON line.
#include <cuda.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

constexpr unsigned kPattern = 0x5A5A1234u;

#define CK(x)                                                                      \
  do {                                                                             \
    CUresult r_ = (x);                                                             \
    if (r_ != CUDA_SUCCESS) {                                                      \
      const char* n_ = nullptr;                                                    \
      cuGetErrorName(r_, &n_);                                                     \
      std::printf("{\"step\":\"%s\",\"error\":\"%s\"}\n", #x, n_ ? n_ : "?");     \
      std::fflush(stdout);                                                         \
      std::exit(3);                                                                \
    }                                                                              \
  } while (0)

__global__ void count_pattern(const unsigned* p, size_t n, unsigned long long* bad) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    if (p[i] != kPattern) atomicAdd(bad, 1ull);
}
__global__ void scribble(unsigned* p, size_t n) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) p[i] = 7;
}

static CUcontext init_ctx() {
  CK(cuInit(0));
  CUdevice dev;
  CK(cuDeviceGet(&dev, 0));
  CUcontext ctx;
  CK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CK(cuCtxSetCurrent(ctx));
  return ctx;
}

static CUmemAllocationProp prop() {
  CUmemAllocationProp p{};
  p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  p.location.id = 0;
  p.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  return p;
}

static size_t granule() {
  CUmemAllocationProp p = prop();
  size_t g = 0;
  CK(cuMemGetAllocationGranularity(&g, &p, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  return g;
}

static CUdeviceptr map(CUmemGenericAllocationHandle h, size_t size, CUmemAccess_flags flags) {
  CUdeviceptr va;
  CK(cuMemAddressReserve(&va, size, 0, 0, 0));
  CK(cuMemMap(va, size, 0, h, 0));
  CUmemAccessDesc a{};
  a.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  a.location.id = 0;
  a.flags = flags;
  CK(cuMemSetAccess(va, size, &a, 1));
  return va;
}

static unsigned long long bad_words(CUdeviceptr va, size_t size) {
  unsigned long long* bad;
  CK(cuMemAlloc(reinterpret_cast<CUdeviceptr*>(&bad), sizeof *bad));
  CK(cuMemsetD8(reinterpret_cast<CUdeviceptr>(bad), 0, sizeof *bad));
  count_pattern<<<256, 256>>>(reinterpret_cast<const unsigned*>(va), size / 4, bad);
  CK(cuCtxSynchronize());
  unsigned long long host = 0;
  CK(cuMemcpyDtoH(&host, reinterpret_cast<CUdeviceptr>(bad), sizeof host));
  return host;
}

static void send_fd(int sock, int fd, size_t size) {
  char ctl[CMSG_SPACE(sizeof(int))] = {};
  iovec iov{&size, sizeof size};
  msghdr m{};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  m.msg_control = ctl;
  m.msg_controllen = sizeof ctl;
  cmsghdr* c = CMSG_FIRSTHDR(&m);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
  if (sendmsg(sock, &m, 0) < 0) perror("sendmsg");
}

static int recv_fd(int sock, size_t* size) {
  char ctl[CMSG_SPACE(sizeof(int))] = {};
  iovec iov{size, sizeof *size};
  msghdr m{};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  m.msg_control = ctl;
  m.msg_controllen = sizeof ctl;
  if (recvmsg(sock, &m, 0) <= 0) return -1;
  cmsghdr* c = CMSG_FIRSTHDR(&m);
  if (!c || c->cmsg_type != SCM_RIGHTS) return -1;
  int fd;
  std::memcpy(&fd, CMSG_DATA(c), sizeof fd);
  return fd;
}

static int exporter(const char* path, int clients) {
  init_ctx();
  const size_t size = 4 * granule();
  CUmemAllocationProp p = prop();
  CUmemGenericAllocationHandle h;
  CK(cuMemCreate(&h, size, &p, 0));
  CUdeviceptr va = map(h, size, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  CK(cuMemsetD32(va, kPattern, size / 4));
  int fd = -1;
  CK(cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
  int ls = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
  unlink(path);
  if (bind(ls, reinterpret_cast<sockaddr*>(&a), sizeof a) || listen(ls, 4)) { perror("bind"); return 2; }
  chmod(path, 0777);
  std::printf("{\"exporter\":\"ready\",\"bytes\":%zu}\n", size);
  std::fflush(stdout);
  for (int i = 0; i < clients; ++i) {
    int s = accept(ls, nullptr, nullptr);
    send_fd(s, fd, size);
    char done;
    while (read(s, &done, 1) > 0) {}  // the client closes when it is finished (or dies)
    close(s);
    const unsigned long long bad = bad_words(va, size);
    std::printf("{\"exporter_after_client\":%d,\"words_changed\":%llu}\n", i, bad);
    std::fflush(stdout);
    if (bad) CK(cuMemsetD32(va, kPattern, size / 4));
  }
  return 0;
}

static int importer(const char* path, const std::string& mode) {
  int s = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
  if (connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a)) { perror("connect"); return 2; }
  size_t size = 0;
  int fd = recv_fd(s, &size);
  if (fd < 0) { std::printf("{\"mode\":\"%s\",\"error\":\"no fd received\"}\n", mode.c_str()); return 2; }
  init_ctx();
  CUmemGenericAllocationHandle h;
  CK(cuMemImportFromShareableHandle(&h, reinterpret_cast<void*>(static_cast<uintptr_t>(fd)),
                                    CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
  CUdeviceptr va = map(h, size, CU_MEM_ACCESS_FLAGS_PROT_READ);
  const unsigned long long bad = bad_words(va, size);
  std::string result = "ok";
  if (mode == "write_kernel") {
    scribble<<<256, 256>>>(reinterpret_cast<unsigned*>(va), size / 4);
    CUresult r = cuCtxSynchronize();
    const char* n = nullptr;
    cuGetErrorName(r, &n);
    result = n ? n : "?";
  } else if (mode == "memcpy") {
    unsigned v = 7;
    CUresult r = cuMemcpyHtoD(va, &v, sizeof v);
    if (r == CUDA_SUCCESS) r = cuCtxSynchronize();
    const char* n = nullptr;
    cuGetErrorName(r, &n);
    result = n ? n : "?";
  } else if (mode == "upgrade_write") {
    CUmemAccessDesc d{};
    d.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    d.location.id = 0;
    d.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CUresult r = cuMemSetAccess(va, size, &d, 1);
    const char* n = nullptr;
    cuGetErrorName(r, &n);
    std::string up = n ? n : "?";
    if (r == CUDA_SUCCESS) {
      scribble<<<256, 256>>>(reinterpret_cast<unsigned*>(va), size / 4);
      r = cuCtxSynchronize();
      cuGetErrorName(r, &n);
    }
    result = "set_access=" + up + ",write=" + (n ? n : "?");
  }
  std::printf("{\"mode\":\"%s\",\"imported_bytes\":%zu,\"words_not_pattern_at_import\":%llu,\"result\":\"%s\"}\n",
              mode.c_str(), size, bad, result.c_str());
  std::fflush(stdout);
  close(s);
  return 0;
}

int main(int argc, char** argv) {
  if (argc == 4 && std::string(argv[1]) == "exporter") return exporter(argv[2], std::atoi(argv[3]));
  if (argc == 4 && std::string(argv[1]) == "importer") return importer(argv[2], argv[3]);
  std::fprintf(stderr, "usage: vmm_probe exporter <sock> <clients> | importer <sock> <mode>\n");
  return 2;
}
