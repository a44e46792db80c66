#include "pipeline/run/pipeline_util.h"

#include <fstream>
#include <iterator>

#include "common/random.h"

namespace kj {

namespace {
constexpr std::size_t kLogLimit = 16 * 1024;
}

void StageClock::start(kjudge::v1::Stage s) {
  stop();
  stage_ = s;
  r_.set_stage_reached(s);
  t0_ = std::chrono::steady_clock::now();
}

void StageClock::stop() {
  if (stage_ == kjudge::v1::STAGE_UNSPECIFIED) return;
  auto* st = r_.add_stages();
  st->set_stage(stage_);
  st->set_seconds(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count());
  stage_ = kjudge::v1::STAGE_UNSPECIFIED;
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_file_atomic(const std::filesystem::path& p, const std::string& data) {
  const std::filesystem::path tmp = p.string() + random_suffix();
  std::error_code ec;
  {
    std::ofstream out(tmp, std::ios::binary);
    out << data;
    out.close();  // a full disk may only show here: never rename half a file into a cache
    if (!out) {
      std::filesystem::remove(tmp, ec);
      return;
    }
  }
  std::filesystem::rename(tmp, p, ec);
  if (ec) std::filesystem::remove(tmp, ec);
}

std::string truncate_log(const std::string& log, bool& truncated) {
  truncated = log.size() > kLogLimit;
  return truncated ? log.substr(0, kLogLimit) + "\n[... log truncated by kjudge ...]\n" : log;
}

std::string tail(const std::string& s, std::size_t n) { return s.size() > n ? "..." + s.substr(s.size() - n) : s; }

std::string last_line(const std::string& text, std::size_t max_chars) {
  const auto end = text.find_last_not_of(" \n");
  if (end == std::string::npos) return "";
  const auto nl = text.rfind('\n', end);
  const auto start = nl == std::string::npos ? 0 : nl + 1;
  const std::string line = text.substr(start, end + 1 - start);
  return line.size() > max_chars ? line.substr(0, max_chars) + "..." : line;
}

}  // namespace kj
