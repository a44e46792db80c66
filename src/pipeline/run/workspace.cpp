#include "pipeline/run/workspace.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <random>
#include <stdexcept>

namespace kj {
namespace fs = std::filesystem;

uid_t sandbox_host_uid(const std::optional<std::uint32_t>& configured) {
  if (configured) return *configured;
  return geteuid() == 0 ? 65534 : geteuid();
}

gid_t sandbox_host_gid(const std::optional<std::uint32_t>& configured) {
  if (configured) return *configured;
  return geteuid() == 0 ? 65534 : getegid();
}

Workspace::Workspace(const fs::path& state_dir, const std::string& job_id, uid_t uid, gid_t gid, bool keep)
    : uid_(uid), gid_(gid), keep_(keep) {
  std::random_device rd;
  root_ = state_dir / "jobs" / fmt::format("{}-{:08x}", job_id, rd());
  fs::create_directories(root_);
  fs::permissions(root_, fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
}

Workspace::~Workspace() {
  if (keep_) return;
  std::error_code ec;
  fs::remove_all(root_, ec);
}

fs::path Workspace::inputs(unsigned set) const { return root_ / "inputs" / fmt::format("set{}", set); }

fs::path Workspace::make_owned_dir(const fs::path& dir) const {
  fs::create_directories(dir);
  if (::chown(dir.c_str(), uid_, gid_) != 0 && geteuid() == 0)
    throw std::runtime_error(fmt::format("chown {}: {}", dir.string(), strerror(errno)));
  return dir;
}

fs::path Workspace::make_party_dir(const std::string& name) const { return make_owned_dir(root_ / name); }

void Workspace::write_file(const fs::path& path, const std::string& data) const {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  out.close();  // what was buffered reaches the filesystem here: ENOSPC may only show now
  if (!out) throw std::runtime_error("cannot write " + path.string() + ": " + strerror(errno));
  fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read | fs::perms::others_read);
}

void prepare_state_dir(const fs::path& state_dir) {
  const fs::path jobs = fs::absolute(state_dir) / "jobs";
  std::error_code ec;
  fs::remove_all(jobs, ec);
  fs::create_directories(jobs);
  const auto traversable = fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec;
  fs::permissions(jobs, traversable);
  fs::permissions(jobs.parent_path(), fs::perms::group_exec | fs::perms::others_exec, fs::perm_options::add);
  if (geteuid() != 0) return;  // unprivileged: sandboxes run as our own uid
  for (fs::path p = jobs; !p.empty() && p != p.root_path(); p = p.parent_path())
    if ((fs::status(p).permissions() & fs::perms::others_exec) == fs::perms::none)
      throw std::runtime_error(fmt::format(
          "{} is not searchable by others (o+x): sandboxes cannot reach job dirs under {}; chmod o+x it or "
          "choose another state_dir", p.string(), state_dir.string()));
}

}  // namespace kj
