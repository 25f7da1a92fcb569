// Per-run cgroups: cgroup v2 first, v1 (memory, pids, cpu) second, nothing (rlimits) last.
//
// Usage, all in the parent:
//   1. `auto cg = RunCgroup::CreateInParent(run_id, limits, options);` makes the run's cgroup(s)
//      under a writable, delegated parent and writes the limits. Before creating, it removes
//      stale `sbx-<pid>-*` cgroups of sbx runners that are no longer alive (only those: never a
//      cgroup sbx did not create).
//   2. cgroup v2: pass `cg->CloneIntoFd()` to clone3(CLONE_INTO_CGROUP) so the child starts
//      inside (no migration, no RCU grace period). Otherwise, after clone and before the child
//      runs the payload, `cg->AddProcessInParent(pid)` (v1: one write per hierarchy).
//   3. On timeout, `cg->KillAll()` (v2: cgroup.kill; v1: returns false and the launcher relies
//      on the pid namespace).
//   4. Once no process of the run but the init is left (the init has reaped the rest, or is
//      reaped itself): `cg->ReadUsage()`; after the init's reap, `cg->RemoveInParent()` (also
//      done by the destructor; retries rmdir briefly while the kernel finishes exits).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/unique_fd.h"
#include "sandbox/policy/policy.h"

namespace sbx {

enum class CgroupVersion { kNone, kV1, kV2 };

struct CgroupOptions {
  bool try_v2 = true;
  bool try_v1 = true;
  // Root of the cgroup v2 hierarchy; empty means "find it in /proc/self/mountinfo".
  std::string v2_root;
};

// What the cgroup saw after the run. Missing values (file absent) are nullopt.
struct CgroupUsage {
  std::optional<uint64_t> peak_memory_bytes;  // v2 memory.peak, v1 memory.max_usage_in_bytes
  std::optional<uint64_t> cpu_usage_ns;       // v2 cpu.stat usage_usec, v1 cpuacct.usage
  uint64_t oom_kills = 0;                      // v2 memory.events oom_kill, v1 oom_control
  uint64_t pids_max_hits = 0;                  // pids.events "max"
};

// Which mechanism enforces each limit, for the result's `enforcement` field.
struct CgroupEnforcement {
  CgroupVersion version = CgroupVersion::kNone;
  bool memory = false;
  bool pids = false;
  bool cpu = false;
};

class RunCgroup {
 public:
  // run_id must match [A-Za-z0-9-]{1,64}. Fails with kUnavailable when neither v2 nor v1 can
  // be used (DecideRunLayers, run_layers.h, then decides whether that may degrade); fails with
  // kSetupFailed when a cgroup was found but a limit could not be written.
  static Result<RunCgroup> CreateInParent(const std::string& run_id, const Limits& limits,
                                          const CgroupOptions& options = {});

  RunCgroup(RunCgroup&&) noexcept;
  RunCgroup& operator=(RunCgroup&&) noexcept;
  ~RunCgroup();

  CgroupVersion version() const;
  const CgroupEnforcement& enforcement() const;
  // v2: an O_DIRECTORY fd of the run's cgroup for CLONE_INTO_CGROUP; -1 otherwise.
  int CloneIntoFd() const;
  Result<void> AddProcessInParent(pid_t pid);
  // v2: writes cgroup.kill and returns true. v1: returns false.
  bool KillAll();
  CgroupUsage ReadUsage() const;
  Result<void> RemoveInParent();
  // The directories created, for tests and `sbx doctor` (one for v2; for v1 one per hierarchy:
  // memory, pids, cpu and cpuacct, or three when cpu and cpuacct are co-mounted).
  std::vector<std::string> Paths() const;

 private:
  RunCgroup() = default;
  struct State;
  State* state_ = nullptr;  // owned; a pointer so the header stays free of detail
};

// A fresh run id ("<counter>-<random hex>"), minted once per run: it names the run's cgroup and
// network log and is in its result.
std::string NewRunId();

// Describes the host's cgroup situation for `sbx doctor`: "v2 at /sys/fs/cgroup/..., controllers
// memory pids cpu delegated" or "v1: memory at ..., pids at ..., cpu at ..." or why neither works.
std::string DescribeCgroupSupport(const CgroupOptions& options = {});

// True when `id` matches [A-Za-z0-9-]{1,64} (used for run ids that become path components).
bool IsValidRunId(const std::string& id);

}  // namespace sbx
