// The Daemon's private helpers for the entries it holds: how an entry is named to the queue, and
// its key in the Daemon's held_ map.
#pragma once

#include <string>
#include <utility>

#include "kjqueue/queue.h"

namespace kj {

inline kjqueue::EntryRef ref_of(const kjqueue::Delivery& d) { return {d.tenant, d.lane, d.entry_id}; }

// Entry ids are unique per stream only: a tenant's lanes are separate streams.
inline std::pair<std::string, std::string> held_key(const kjqueue::Delivery& d) {
  return {kjqueue::Keys::jobs(d.partition, d.tenant, d.lane), d.entry_id};
}

}  // namespace kj
