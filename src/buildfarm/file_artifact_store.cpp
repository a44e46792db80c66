#include "buildfarm/file_artifact_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <random>
#include <regex>
#include <stdexcept>

#include "common/sha256.h"

namespace kj::buildfarm {
namespace fs = std::filesystem;

namespace {

constexpr std::string_view kRefMagic = "kjref1 ";
constexpr auto kTempMaxAge = std::chrono::hours(1);  // a publisher that takes longer has crashed

std::runtime_error sys_error(const std::string& what, const fs::path& p) {
  return std::runtime_error(what + " " + p.string() + ": " + std::strerror(errno));
}

// Closes on scope exit.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

void write_all(int fd, const std::string& bytes, const fs::path& p) {
  for (std::size_t off = 0; off < bytes.size();) {
    const ssize_t n = ::write(fd, bytes.data() + off, bytes.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw sys_error("cannot write", p);
    off += static_cast<std::size_t>(n);
  }
}

// The rename is durable only once the directory's entry is on disk.
void fsync_dir(const fs::path& dir) {
  Fd d{::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
  if (d.fd < 0 || ::fsync(d.fd) != 0) throw sys_error("cannot fsync directory", dir);
}

std::string temp_name(const std::string& digest) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  return ".tmp-" + digest + "-" + std::to_string(::getpid()) + "-" + std::to_string(rng());
}

}  // namespace

std::string format_ref(const ArtifactRef& ref) {
  return std::string(kRefMagic) + ref.digest + " " + std::to_string(ref.size);
}

std::optional<ArtifactRef> parse_ref(const std::string& value) {
  static const std::regex form("kjref1 ([0-9a-f]{64}) ([0-9]{1,19})");
  std::smatch m;
  if (value.size() > 100 || !std::regex_match(value, m, form)) return std::nullopt;
  ArtifactRef ref{m[1].str(), 0};
  const std::string n = m[2].str();
  if (std::from_chars(n.data(), n.data() + n.size(), ref.size).ec != std::errc{}) return std::nullopt;
  return ref;
}

FileArtifactStore::FileArtifactStore(fs::path root) : root_(std::move(root)) {
  if (root_.empty() || !root_.is_absolute()) throw std::runtime_error("build.artifact_dir must be an absolute path");
}

fs::path FileArtifactStore::path_of(const std::string& digest) const {
  return root_ / "sha256" / digest.substr(0, 2) / digest;
}

ArtifactRef FileArtifactStore::put(const std::string& bytes) {
  const ArtifactRef ref{sha256_hex(bytes), bytes.size()};
  const fs::path target = path_of(ref.digest), dir = target.parent_path();
  struct stat st {};
  if (::stat(target.c_str(), &st) == 0 && static_cast<std::uint64_t>(st.st_size) == ref.size) {
    ::utimensat(AT_FDCWD, target.c_str(), nullptr, 0);  // in use again: prune keeps it
    return ref;
  }
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw std::runtime_error("cannot create " + dir.string() + ": " + ec.message());
  const fs::path tmp = dir / temp_name(ref.digest);
  {
    Fd f{::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644)};
    if (f.fd < 0) throw sys_error("cannot create", tmp);
    try {
      write_all(f.fd, bytes, tmp);
      if (::fsync(f.fd) != 0) throw sys_error("cannot fsync", tmp);
    } catch (...) {
      ::unlink(tmp.c_str());
      throw;
    }
  }
  // rename replaces atomically: a concurrent publisher of the same digest wrote the same bytes
  if (::rename(tmp.c_str(), target.c_str()) != 0) {
    const auto e = sys_error("cannot rename into", target);
    ::unlink(tmp.c_str());
    throw e;
  }
  fsync_dir(dir);
  return ref;
}

std::optional<std::string> FileArtifactStore::get(const ArtifactRef& ref, std::uint64_t max_bytes, std::string& why) {
  const fs::path p = path_of(ref.digest);
  Fd f{::open(p.c_str(), O_RDONLY | O_CLOEXEC)};
  if (f.fd < 0) return why = errno == ENOENT ? "missing" : std::string("unreadable: ") + std::strerror(errno), std::nullopt;
  struct stat st {};
  if (::fstat(f.fd, &st) != 0 || !S_ISREG(st.st_mode)) return why = "not a regular file", std::nullopt;
  const auto size = static_cast<std::uint64_t>(st.st_size);
  auto bad = [&](std::string reason) -> std::optional<std::string> {
    ::unlink(p.c_str());
    why = std::move(reason);
    return std::nullopt;
  };
  if (size != ref.size) return bad("size " + std::to_string(size) + " != " + std::to_string(ref.size));
  if (size > max_bytes) return why = "larger than artifact_max_bytes", std::nullopt;
  std::string bytes(size, '\0');
  for (std::size_t off = 0; off < size;) {
    const ssize_t n = ::read(f.fd, bytes.data() + off, size - off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return why = std::string("read error: ") + std::strerror(errno), std::nullopt;
    if (n == 0) return bad("truncated while read");
    off += static_cast<std::size_t>(n);
  }
  if (sha256_hex(bytes) != ref.digest) return bad("sha256 mismatch");
  return bytes;
}

std::size_t FileArtifactStore::prune(std::chrono::seconds older_than) {
  std::size_t removed = 0;
  std::error_code ec;
  const auto now = fs::file_time_type::clock::now();
  for (fs::recursive_directory_iterator it(root_ / "sha256", ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code e;
    if (!it->is_regular_file(e)) continue;
    const auto age = now - it->last_write_time(e);
    if (e) continue;
    const bool temp = it->path().filename().string().rfind(".tmp-", 0) == 0;
    if (age > (temp ? std::chrono::duration_cast<fs::file_time_type::duration>(kTempMaxAge)
                    : std::chrono::duration_cast<fs::file_time_type::duration>(older_than)) &&
        fs::remove(it->path(), e))
      ++removed;
  }
  return removed;
}

}  // namespace kj::buildfarm
