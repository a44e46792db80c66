// How far two loops of one kernel move apart on a device, over its recent jobs. A job's own
// reference loops (beside the candidate, and prepared or cached) show one pair of moments; the
// spread between jobs, which a speedup's interval must hold, is what many such pairs show.
#pragma once

#include <cstddef>
#include <deque>
#include <mutex>

namespace kj {

class LoopDrift {
 public:
  static constexpr std::size_t kWindow = 64;     // the recent jobs kept
  static constexpr std::size_t kMinSamples = 8;  // before this, no figure (0)

  // This process's record for one device (kjudged's slots share it; `kjudge eval` starts empty).
  static LoopDrift& of_device(int gpu);

  void record(double shift);
  // p75 of the recorded shifts, 0 until kMinSamples were recorded.
  double p75() const;

 private:
  mutable std::mutex mu_;
  std::deque<double> shifts_;
};

}  // namespace kj
