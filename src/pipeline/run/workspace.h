// Per-job scratch space on the host:
//   <state>/jobs/<job>-<rand>/inputs/set<k>/   written by the daemon, read-only to both parties
//   <state>/jobs/<job>-<rand>/candidate/        the candidate's /job (source, artifact, outputs)
//   <state>/jobs/<job>-<rand>/reference/        the reference's /job; never visible to the candidate
// Removed when the job is done (RAII) unless asked to keep it.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <sys/types.h>

namespace kj {

class Workspace {
 public:
  // `sandbox_uid/gid`: host ids the sandboxes run as; party dirs are handed to them.
  Workspace(const std::filesystem::path& state_dir, const std::string& job_id, uid_t sandbox_uid, gid_t sandbox_gid,
            bool keep);
  ~Workspace();
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;

  const std::filesystem::path& root() const { return root_; }
  std::filesystem::path inputs(unsigned set) const;
  std::filesystem::path party(const std::string& name) const { return root_ / name; }

  // Creates <root>/<name> owned by the sandbox ids so the sandboxed side can write there.
  std::filesystem::path make_party_dir(const std::string& name) const;
  // Creates a subdirectory inside a party dir, also owned by the sandbox ids.
  std::filesystem::path make_owned_dir(const std::filesystem::path& dir) const;
  void write_file(const std::filesystem::path& path, const std::string& data) const;

 private:
  std::filesystem::path root_;
  uid_t uid_;
  gid_t gid_;
  bool keep_;
};

// Host ids the sandboxes run as, from config (default: nobody when root, own ids otherwise).
uid_t sandbox_host_uid(const std::optional<std::uint32_t>& configured);
gid_t sandbox_host_gid(const std::optional<std::uint32_t>& configured);

// Called at start: creates <state>/jobs (0711), removes job dirs left behind by a daemon that
// crashed, and checks that every ancestor lets the sandbox uid through (o+x) — the sandbox binds
// job dirs as that uid. Throws std::runtime_error naming the directory that blocks it.
void prepare_state_dir(const std::filesystem::path& state_dir);

}  // namespace kj
