// Faults of the host, not of the candidate (issue 14): a job's filesystem that is full, a job dir
// the judge itself cannot write. Both are INFRA_ERROR (retried, then dead-lettered): a candidate
// must never be scored for them.
//
// Nothing here trusts what the sandboxed side printed: a candidate can write "No space left on
// device" into its own log. Every fault is established from outside, by the judge: statvfs of
// the job's filesystem, and a probe file the judge writes into the job dir itself.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "common/config.h"

namespace kj {

// Before a job starts: nullopt when the state dir's filesystem has at least [limits]
// min_free_bytes and min_free_inodes available; otherwise the reason, naming the keys.
std::optional<std::string> check_free_space(const std::filesystem::path& state_dir, const LimitsConfig& limits);

// After a sandboxed step that failed, whose /job was `job_dir` (a party dir directly inside the
// job's workspace): the host's fault that explains the failure, or nullopt (the step's own
// outcome stands). Faults:
//   - the judge cannot write a probe file into job_dir: ENOSPC, EDQUOT, EROFS, EIO, EMFILE,
//     ENFILE, ENOMEM (the filesystem, the node's or the daemon's own file table);
//   - the filesystem has under 1 MiB or 64 inodes available to unprivileged users;
// except when this job's own workspace is what filled it (its size reaches the guaranteed
// headroom, min_free_bytes / min_free_inodes, or half of all that is used): the candidate's doing.
std::optional<std::string> host_fault_after_step(const std::filesystem::path& job_dir, const LimitsConfig& limits);

// After a job whose verdict blames a party, once its workspace is gone: the state dir's
// filesystem still full (or unwritable by the judge) without the job's files, so the job did not
// fill it. The net for what the per-step check cannot see (a comparison of outputs a full disk
// truncated, a harness that read half a file).
std::optional<std::string> host_fault_after_job(const std::filesystem::path& state_dir);

}  // namespace kj
