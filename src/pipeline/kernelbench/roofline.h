// The fraction-of-peak figure of a timed KernelBench candidate: the trusted worker reports the
// problem's least work per call (bytes it must move; the reference's FLOPs where torch can count
// them) and the device's measured peaks (python/kjudge_worker/roofline.py); here they meet the
// candidate's median.
#pragma once

#include <nlohmann/json.hpp>

#include "kjudge/v1/result.pb.h"

namespace kj {

// Sets roofline_floor_ms, achieved/peak GB/s and TFLOP/s, and peak_fraction from `roofline`
// ({"bytes", "flops", "peak_gbps", "peak_tflops"}; missing or null parts are left out) and the
// candidate's median; nothing when there is no median or no usable part.
void set_roofline(kjudge::v1::Performance& perf, const nlohmann::json& roofline);

}  // namespace kj
