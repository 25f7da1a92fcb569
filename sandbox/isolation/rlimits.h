// Resource limits set with setrlimit in the child: always file size, open files and core
// dumps; memory (RLIMIT_AS) and processes (RLIMIT_NPROC) only as fallbacks when no cgroup
// enforces them.
#pragma once

#include <sys/resource.h>

#include <array>
#include <cstddef>

#include "sandbox/policy/policy.h"

namespace sbx {

struct RlimitPlan {
  struct Entry {
    int resource;
    rlim_t value;  // soft and hard
  };
  std::array<Entry, 6> entries{};
  size_t count = 0;
  bool memory_fallback = false;
  bool pids_fallback = false;
};

// Pure: the rlimits for `limits`, given which limits a cgroup already enforces.
RlimitPlan PlanRlimits(const Limits& limits, bool cgroup_memory, bool cgroup_pids);

// Async-signal-safe; returns 0 or an errno.
int ApplyRlimitsInChild(const RlimitPlan& plan);

}  // namespace sbx
