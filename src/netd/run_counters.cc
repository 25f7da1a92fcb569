// Counts decisions and bytes for the run's summary.
#include "src/netd/run_counters.h"

#include <algorithm>

namespace sbx::netd {

void RunCounters::CountDenied(const std::string& what) {
  ++summary_.denied;
  std::vector<std::string>& names = summary_.denied_names;
  if (what.empty() || names.size() >= kMaxDeniedNames) return;
  if (std::find(names.begin(), names.end(), what) == names.end()) names.push_back(what);
}

}  // namespace sbx::netd
