// INCORRECT's feedback: which sets fail, how many elements, NaN/Inf counts and the worst elements
// by position, the candidate's value and the class of the expected one (never the expected value:
// strict mode keeps the sets secret).
#pragma once

#include <string>

#include "kjudge/v1/result.pb.h"

namespace kj {

std::string wrong_output_feedback(const kjudge::v1::Result& result);

}  // namespace kj
