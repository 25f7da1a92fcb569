// The layers a run gets: its seccomp program and its cgroup, or, where one cannot be had and
// the policy's allow_degraded accepts losing it, what stands in. The one place that consults
// allow_degraded; the cgroup and seccomp code only report what the host gives.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "sandbox/cgroup/cgroup.h"
#include "sandbox/policy/policy.h"
#include "sandbox/seccomp/seccomp_filter.h"

namespace sbx {

struct RunLayers {
  // The filter the program installs last; null when it cannot be compiled and the policy
  // accepts losing it (or when it was not asked for).
  const SeccompProgram* seccomp = nullptr;
  // The run's cgroup with memory, pids and cpu; nullopt when none can be had (or one lacks a
  // controller) and the policy accepts losing it: rlimits then stand in (PlanRlimits).
  std::optional<RunCgroup> cgroup;
  // What was lost, in the result's words: "seccomp", "cgroup" or "cgroup:<missing controllers>".
  std::vector<std::string> degraded;

  CgroupEnforcement enforcement() const { return cgroup ? cgroup->enforcement() : CgroupEnforcement{}; }
};

struct LayerRequest {
  // False where the filter comes from elsewhere (a pooled session gets the zygote's, which
  // never runs without it) or is not needed (`sbx doctor`'s probe of the cgroup layer).
  bool seccomp = true;
};

// Decides both layers for one run against `policy`. A layer the policy requires and the host
// cannot give is an error that names the layer and the fix (allow_degraded). The cgroup's name
// carries run_id (NewRunId), the id the run's network log and result carry too. Used by the
// launcher, by the warm pool for each pooled session, and by `sbx doctor`.
Result<RunLayers> DecideRunLayers(const std::string& run_id, const Policy& policy,
                                  const CgroupOptions& cgroup_options, LayerRequest request = {});

}  // namespace sbx
