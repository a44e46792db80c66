// Artifacts on a shared filesystem path (an NFS/Lustre/GPFS mount every node sees, as HPC clusters
// have), content-addressed: <root>/sha256/<first 2 hex>/<sha256 of the bytes>. Redis keeps only
// a small marker (digest, size) per build key (redis_build_store.h), so artifact bytes never pass
// through Redis. A file is published atomically (a temp file in the same directory, fsync, rename,
// fsync of the directory): a reader sees the whole file or none. Every read checks the size and
// the SHA-256 against the marker; a file that fails is removed and reported as a miss (rebuilt),
// never used. Thread-safe (no state beyond the root).
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace kj::buildfarm {

// The marker Redis holds for a build key: "kjref1 <sha256 hex> <size>".
struct ArtifactRef {
  std::string digest;
  std::uint64_t size = 0;
};
std::string format_ref(const ArtifactRef& ref);
std::optional<ArtifactRef> parse_ref(const std::string& value);  // nullopt: not a marker

class FileArtifactStore {
 public:
  explicit FileArtifactStore(std::filesystem::path root);

  // Stores `bytes` under their SHA-256 (a file already there with that size is kept: same content).
  // Throws std::runtime_error (disk full, permissions, a root that is not there).
  ArtifactRef put(const std::string& bytes);
  // The verified bytes, or nullopt with `why` set: missing, size or SHA-256 mismatch (the bad file
  // is removed, so the next publisher writes it again).
  std::optional<std::string> get(const ArtifactRef& ref, std::uint64_t max_bytes, std::string& why);
  // Removes artifacts not modified for `older_than` and temp files a crashed publisher left behind.
  // -> files removed. Errors on single files are skipped (another node may be removing them too).
  std::size_t prune(std::chrono::seconds older_than);

  std::filesystem::path path_of(const std::string& digest) const;
  const std::filesystem::path& root() const { return root_; }

 private:
  std::filesystem::path root_;
};

}  // namespace kj::buildfarm
