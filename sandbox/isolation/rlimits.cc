// Plans and applies the run's rlimits.
#include "sandbox/isolation/rlimits.h"

#include <cerrno>

namespace sbx {

RlimitPlan PlanRlimits(const Limits& limits, bool cgroup_memory, bool cgroup_pids) {
  RlimitPlan plan;
  auto add = [&plan](int resource, rlim_t value) { plan.entries[plan.count++] = {resource, value}; };
  add(RLIMIT_FSIZE, static_cast<rlim_t>(limits.file_size_bytes));
  add(RLIMIT_NOFILE, static_cast<rlim_t>(limits.open_files));
  add(RLIMIT_CORE, 0);
  if (!cgroup_memory) {
    // Address space, not resident memory: a stand-in that also counts mappings never touched.
    add(RLIMIT_AS, static_cast<rlim_t>(limits.memory_bytes));
    plan.memory_fallback = true;
  }
  if (!cgroup_pids) {
    // Counted per host uid, so it also covers other sandboxes running as the same uid.
    add(RLIMIT_NPROC, static_cast<rlim_t>(limits.pids));
    plan.pids_fallback = true;
  }
  return plan;
}

int ApplyRlimitsInChild(const RlimitPlan& plan) {
  for (size_t i = 0; i < plan.count; ++i) {
    struct rlimit limit {plan.entries[i].value, plan.entries[i].value};
    if (::setrlimit(plan.entries[i].resource, &limit) != 0) return errno;
  }
  return 0;
}

}  // namespace sbx
