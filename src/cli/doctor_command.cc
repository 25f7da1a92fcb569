// `sbx doctor`: prints the host probes and what `sbx run` would use; non-zero when `sbx run`
// with the default policy would not run (unsafe host, no usable cgroup, no image).
#include "src/cli/doctor_command.h"

#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sandbox/cgroup/cgroup.h"
#include "sandbox/host/host_probe.h"
#include "sandbox/image/image.h"
#include "sandbox/launch/run_layers.h"

namespace sbx::cli {
namespace {

// What `sbx run` with the default policy does with the cgroup layer on this host, found the
// way it does it: a run's cgroup is created with the default limits, then removed.
struct DefaultRun {
  bool cgroup_ok = false;
  std::string cgroup;  // "v2", "v1", or why not (the error names the fixes)
};

DefaultRun ProbeDefaultRun() {
  DefaultRun run;
  auto layers = DecideRunLayers(NewRunId(), Policy{}, CgroupOptions{}, {.seccomp = false});
  if (!layers) {
    run.cgroup = layers.error().ToString();
    return run;
  }
  std::optional<RunCgroup>& cgroup = layers->cgroup;
  run.cgroup_ok = cgroup.has_value();
  run.cgroup = !cgroup ? "none" : cgroup->version() == CgroupVersion::kV2 ? "v2" : "v1";
  if (cgroup) (void)cgroup->RemoveInParent();
  return run;
}

constexpr char kCgroupFixes[] =
    "Fixes: run sbx as root; or delegate a "
    "cgroup v2 subtree with memory, pids and cpu (systemd-run --user -p Delegate=yes --scope sbx "
    "run ...; in a container, a writable cgroupfs); or let the policy fall back to rlimits "
    "(--allow-degraded cgroup, or \"allow_degraded\": [\"cgroup\"]: per-process limits, not "
    "the whole tree's).";

}  // namespace

int RunDoctorCommand(int argc, char** argv) {
  bool json = argc > 1 && std::string(argv[1]) == "--json";
  auto probes = ProbeHost();
  bool safe = true;
  for (const auto& probe : probes) safe = safe && (probe.available || !probe.required);
  auto image = FindDefaultImage();
  const DefaultRun run = ProbeDefaultRun();
  // The verdict is what `sbx run -- CMD` with no policy flags would do: isolate, limit memory,
  // pids and cpu with a cgroup, from the default image; otherwise refuse, exit 125.
  const bool runs = safe && run.cgroup_ok && static_cast<bool>(image);
  std::string refusal;
  if (!safe) refusal = "a required isolation layer is missing (the items marked [required] above)";
  if (safe && !run.cgroup_ok) refusal = run.cgroup + ". " + kCgroupFixes;
  if (safe && run.cgroup_ok && !image) refusal = image.error().ToString();
  std::string mode = ::geteuid() == 0 ? "root (sandbox uid 1000 maps to an unprivileged host uid)"
                                      : "rootless (your uid maps to 1000 inside)";
  if (json) {
    nlohmann::ordered_json out;
    for (const auto& probe : probes) {
      out["features"][probe.name] = {{"available", probe.available}, {"required", probe.required},
                                     {"detail", probe.detail}};
    }
    out["mode"] = mode;
    out["image"] = image ? image->path : "missing: " + image.error().ToString();
    out["can_run_safely"] = safe;
    out["default_run"] = {{"runs", runs},
                          {"cgroup", run.cgroup_ok ? run.cgroup : "refused"},
                          {"refusal", refusal}};
    std::printf("%s\n", out.dump(2).c_str());
  } else {
    for (const auto& probe : probes) {
      std::printf("%-28s %-4s %s%s\n", probe.name.c_str(), probe.available ? "yes" : "NO",
                  probe.detail.c_str(), probe.required && !probe.available ? "  [required]" : "");
    }
    std::printf("%-28s %s\n", "mode", mode.c_str());
    std::printf("%-28s %s\n", "image", image ? image->path.c_str() : image.error().ToString().c_str());
    std::printf("%-28s %-4s %s\n", "default_policy_cgroup", run.cgroup_ok ? "yes" : "NO",
                run.cgroup_ok ? ("a run's cgroup (" + run.cgroup + ") limits memory, pids and cpu").c_str()
                              : run.cgroup.c_str());
    if (runs) {
      std::printf("\nsbx can run safely on this host, and `sbx run` with the default policy will.\n");
    } else if (!safe) {
      std::printf("\nsbx cannot run safely on this host: see the required items above.\n");
    } else {
      std::printf("\nsbx can isolate on this host, but `sbx run` with the default policy will refuse "
                  "(exit 125): %s\n",
                  run.cgroup_ok ? refusal.c_str()
                                : ("no cgroup it may use (default_policy_cgroup above). " +
                                   std::string(kCgroupFixes)).c_str());
    }
  }
  return runs ? 0 : 1;
}

}  // namespace sbx::cli
