#include "pipeline/kernelbench/roofline.h"

#include <algorithm>

namespace kj {

namespace {
double positive(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number() && it->get<double>() > 0 ? it->get<double>() : 0.0;
}
}  // namespace

void set_roofline(kjudge::v1::Performance& perf, const nlohmann::json& roofline) {
  const double median_ms = perf.candidate().median_ms();
  if (!roofline.is_object() || median_ms <= 0) return;
  const double bytes = positive(roofline, "bytes"), gbps = positive(roofline, "peak_gbps");
  const double flops = positive(roofline, "flops"), tflops = positive(roofline, "peak_tflops");
  double floor_ms = 0;
  if (bytes > 0 && gbps > 0) {  // GB/s = 1e6 bytes per ms
    floor_ms = bytes / (gbps * 1e6);
    perf.set_achieved_gbps(bytes / (median_ms * 1e6));
    perf.set_peak_gbps(gbps);
  }
  if (flops > 0 && tflops > 0) {  // TFLOP/s = 1e9 FLOPs per ms
    floor_ms = std::max(floor_ms, flops / (tflops * 1e9));
    perf.set_achieved_tflops(flops / (median_ms * 1e9));
    perf.set_peak_tflops(tflops);
  }
  if (floor_ms <= 0) return;
  perf.set_roofline_floor_ms(floor_ms);
  perf.set_peak_fraction(floor_ms / median_ms);
}

}  // namespace kj
