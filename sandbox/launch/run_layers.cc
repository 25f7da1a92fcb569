// Which layers a run gets, decided once against the policy's allow_degraded.
#include "sandbox/launch/run_layers.h"

#include <utility>

namespace sbx {
namespace {

Result<const SeccompProgram*> DecideSeccomp(const Policy& policy, std::vector<std::string>& degraded) {
  auto compiled = CompileSeccompProgram(SeccompOptions{});
  if (compiled) return *compiled;
  if (!policy.AllowsDegraded(Layer::kSeccomp))
    return compiled.error().Context("seccomp (required; allow_degraded may list \"seccomp\")");
  degraded.push_back("seccomp");
  return static_cast<const SeccompProgram*>(nullptr);
}

Result<std::optional<RunCgroup>> DecideCgroup(const std::string& run_id, const Policy& policy,
                                              const CgroupOptions& options, std::vector<std::string>& degraded) {
  auto created = options.try_v2 || options.try_v1
                     ? RunCgroup::CreateInParent(run_id, policy.limits, options)
                     : Result<RunCgroup>(MakeError(ErrorCode::kUnavailable, "cgroups turned off (--cgroup none)"));
  if (!created) {
    if (created.error().code == ErrorCode::kUnavailable && policy.AllowsDegraded(Layer::kCgroup)) {
      degraded.push_back("cgroup");
      return std::optional<RunCgroup>();
    }
    return created.error().Context(
        "cgroup (required for memory, pids and cpu limits; allow_degraded may list \"cgroup\" to "
        "fall back to rlimits)");
  }
  const CgroupEnforcement& enforced = created->enforcement();
  if (!(enforced.memory && enforced.pids && enforced.cpu)) {
    // A hierarchy without one of the controllers: that limit would fall to an rlimit (or to
    // nothing, for cpu), which only the policy may accept.
    std::string missing = std::string(enforced.memory ? "" : " memory") + (enforced.pids ? "" : " pids") +
                          (enforced.cpu ? "" : " cpu");
    if (!policy.AllowsDegraded(Layer::kCgroup)) {
      return MakeError(ErrorCode::kSetupFailed,
                       "cgroup: no usable controller for" + missing +
                           "; allow_degraded may list \"cgroup\" to fall back to rlimits");
    }
    degraded.push_back("cgroup:" + missing.substr(1));
  }
  return std::optional<RunCgroup>(std::move(*created));
}

}  // namespace

Result<RunLayers> DecideRunLayers(const std::string& run_id, const Policy& policy,
                                  const CgroupOptions& cgroup_options, LayerRequest request) {
  RunLayers layers;
  if (request.seccomp) {
    SBX_ASSIGN_OR_RETURN(layers.seccomp, DecideSeccomp(policy, layers.degraded));
  }
  SBX_ASSIGN_OR_RETURN(layers.cgroup, DecideCgroup(run_id, policy, cgroup_options, layers.degraded));
  return layers;
}

}  // namespace sbx
