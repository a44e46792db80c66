#include "pipeline/run/result_flags.h"

namespace kj {

void add_flag(kjudge::v1::Result& r, const std::string& flag) {
  for (const auto& x : r.legality().flags())
    if (x == flag) return;
  r.mutable_legality()->add_flags(flag);
}

}  // namespace kj
