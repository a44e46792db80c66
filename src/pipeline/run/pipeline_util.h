// Small helpers shared by the pipelines: per-stage wall time into the Result, file reading and
// log truncation.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>

#include "kjudge/v1/result.pb.h"

namespace kj {

// Records how long each stage took; start() ends the previous stage.
class StageClock {
 public:
  explicit StageClock(kjudge::v1::Result& r) : r_(r) {}
  ~StageClock() { stop(); }
  StageClock(const StageClock&) = delete;
  StageClock& operator=(const StageClock&) = delete;
  void start(kjudge::v1::Stage s);
  void stop();

 private:
  kjudge::v1::Result& r_;
  kjudge::v1::Stage stage_ = kjudge::v1::STAGE_UNSPECIFIED;
  std::chrono::steady_clock::time_point t0_;
};

std::string read_file(const std::filesystem::path& p);
// Writes through a temporary name and a rename, so a reader never sees half a file (cache
// entries); a failed write leaves nothing behind.
void write_file_atomic(const std::filesystem::path& p, const std::string& data);

// At most 16 KiB, with a marker when cut.
std::string truncate_log(const std::string& log, bool& truncated);

// The last n bytes, "..." in front when cut.
std::string tail(const std::string& s, std::size_t n);

// The last non-blank line (a Python traceback's says what went wrong): "" for a blank text, cut
// to max_chars with "..." behind when longer (a message's line; the full text goes to feedback).
std::string last_line(const std::string& text, std::size_t max_chars = std::string::npos);

}  // namespace kj
