// The legality trace's facts (reported by the candidate's harness) classified with the versioned
// data in kernelbench/legality.json: which framework ops ran inside ModelNew.forward that are
// compute rather than plumbing, and which GPU kernels were the candidate's own, a library's or the
// framework's. The verdict itself is decided in verdict/verdict.cpp (decide_legality); the facts'
// types live beside it (verdict/legality_facts.h), so the verdict layer needs nothing from this one.
#pragma once

#include <string>
#include <vector>

#include "pipeline/verdict/legality_facts.h"

namespace kj {

const std::string& legality_policy_version();
LegalityClass classify_legality(const LegalityTrace& trace);

}  // namespace kj
