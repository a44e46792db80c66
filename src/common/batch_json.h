#pragma once
// A batch's counters as JSON: what `kjudge batch --json` prints and the gateway's
// GET /v1/batches/<id> answers, and how the CLI reads the gateway's answer back.

#include <nlohmann/json.hpp>

#include "kjqueue/queue.h"

namespace kj {

// A share of the batch's groups, or null when no job named a group.
inline nlohmann::json turn_rate(std::uint64_t n, const kjqueue::TurnTally& t) {
  return t.groups == 0 ? nlohmann::json(nullptr) : nlohmann::json(double(n) / double(t.groups));
}

inline nlohmann::json batch_json(const kjqueue::BatchStatus& b) {
  const auto& t = b.turns;
  return {{"submitted", b.submitted}, {"completed", b.completed}, {"expected", b.expected}, {"cancelled", b.cancelled},
          {"verdicts", b.verdicts},
          {"turns", {{"groups", t.groups}, {"solved_first_turn", t.solved_first_turn}, {"solved", t.solved},
                     {"last_turn", t.last_turn}, {"first_turn", turn_rate(t.solved_first_turn, t)},
                     {"best_of_turns", turn_rate(t.solved, t)}}}};
}

inline kjqueue::BatchStatus batch_from_json(const nlohmann::json& j) {
  kjqueue::BatchStatus b;
  b.submitted = j.value("submitted", 0ull);
  b.completed = j.value("completed", 0ull);
  b.expected = j.value("expected", 0ull);
  b.cancelled = j.value("cancelled", false);
  b.verdicts = j.value("verdicts", std::map<std::string, std::uint64_t>{});
  const auto t = j.value("turns", nlohmann::json::object());
  b.turns = {t.value("groups", 0ull), t.value("solved_first_turn", 0ull), t.value("solved", 0ull), t.value("last_turn", 0ull)};
  return b;
}

}  // namespace kj
