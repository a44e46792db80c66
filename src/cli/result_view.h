// How the CLI shows a Result: one summary line (verdict and key figures), the feedback, or JSON
// in protobuf's own JSON mapping.
#pragma once

#include <string>

#include "kjudge/v1/result.pb.h"

namespace kj::cli {

std::string summary_line(const kjudge::v1::Result& r);
std::string text_view(const kjudge::v1::Result& r);  // summary + message + feedback
std::string json_view(const kjudge::v1::Result& r);

}  // namespace kj::cli
