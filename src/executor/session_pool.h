// The warm pool: isolated Python sessions forked from a zygote that has already imported numpy,
// pandas, matplotlib (Agg) and scipy, so a fresh session costs a socket handover instead of a
// cold interpreter start.
//
// Usage:
//   PoolOptions options;                       // policy (limits of every session), image
//   options.warm_sessions = 4;                 // kept forked, placed and waiting
//   auto pool = SessionPool::Create(options);  // starts the zygote (~0.5 s of imports)
//   auto session = (*pool)->Acquire();         // a PooledSessionExecutor
//   (*session)->Execute({{"python", "import pandas as pd\npd.DataFrame(...).describe()"}});
//   session.reset();  // ends it on the pool's reaper thread: its tree, cgroup and workspace go
//
// What a pooled session is (rootfs/zygote.py forks it, sandbox/session_setup isolates it with the
// cold path's code, zygote.h holds the host's steps):
// pid 1 of its own pid namespace, nested in the zygote's; its own mount namespace with an
// overlay root (the image below, a bounded tmpfs above), its own workspace, a fresh masked
// /proc, a minimal /dev and a /tmp tmpfs; its own net (lo only), ipc and uts namespaces and
// a cgroup namespace; its own cgroup with the policy's memory, pids and cpu limits (or the
// rlimit fallback, only if the policy allows degrading cgroup); uid and gid 1000, every
// capability set empty, no_new_privs; the default seccomp filter installed last. Sessions
// share the zygote's user namespace (each cold sandbox has its own); inside it they hold no
// capability and cannot see one another's processes, files, sockets or IPC objects.
//
// Lifetimes: an executor ends its session when it is closed (at once) or destroyed (the pool's
// reaper thread finishes it, and removes its cgroup and workspace; WaitForRetired waits). Destroying the pool kills the zygote and every session, including those
// of executors still alive (their next Execute fails). If the owning process dies, the
// zygote's sandbox dies with it and every session with the zygote's pid namespace.
//
// Not (yet) per session: the policy (limits, environment) is the pool's; the session's
// maximum lifetime is not enforced (only its idle timeout); numpy and OpenMP run
// single-threaded (the zygote sets OPENBLAS/OMP/MKL_NUM_THREADS=1 to fork safely).
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

#include "base/error.h"
#include "sandbox/cgroup/cgroup.h"
#include "sandbox/policy/policy.h"
#include "sandbox/workspace/manifest.h"
#include "src/executor/executors.h"

namespace sbx::executor {

// Run once in the zygote before it forks: pulls in the lazily imported parts of the stack
// that typical agent code reaches (DataFrame construction and describe, groupby, a figure).
extern const char* const kDefaultZygoteWarmup;
// A typical first execution (DataFrame construction, describe, groupby, repr). The zygote runs an
// empty cell and then this once in a throwaway fork and learns which of its own pages they write;
// every session copies those pages (rootfs/zygote_prefault.py), so its first execution does not
// take a copy-on-write fault for each (dear under shadow paging; docs/performance.md): the first
// PoolOptions::prefault_budget_bytes of them (with the pages its set-up writes, copied at its
// fork) while it is prepared (the empty cell's pages first: every first execution writes those),
// since an idle session holds them from the start; the next
// PoolOptions::first_execution_prefault_bytes in one batch when its first execution arrives.
extern const char* const kDefaultPrefaultCode;
inline constexpr size_t kMaxPoolSessions = 8192;
inline constexpr size_t kDefaultPrefaultBudgetBytes = size_t{4} << 20;
inline constexpr size_t kDefaultFirstExecutionPrefaultBytes = size_t{16} << 20;
inline constexpr size_t kMaxPrefaultBudgetBytes = size_t{256} << 20;

struct PoolOptions {
  ValidPolicy policy;        // every session's limits and environment; network must be "none"
  std::string image_dir;     // as ResolveImageDir takes it: a name, a dir; empty: policy.image
  size_t warm_sessions = 4;  // 0..64 sessions kept ready; 0 forks each on Acquire
  // Sessions alive at once, warm ones included (warm_sessions..kMaxPoolSessions): Acquire
  // fails beyond it. The zygote's memory limit grows by kSessionResidueBytes (zygote.h) and
  // prefault_budget_bytes each.
  size_t max_sessions = 256;
  double session_idle_seconds = 900;  // a session (warm or in use) ends after this idle time
  CgroupOptions cgroup_options;
  std::string warmup_code = kDefaultZygoteWarmup;
  std::string prefault_code = kDefaultPrefaultCode;  // empty: no pre-fault
  // Pre-copied memory per session before it is handed out, at most: at its fork the pages its
  // set-up copies anyway (in one batch instead of a fault each), once it is isolated pages a
  // first execution writes. 4 MiB keeps an idle session within the pool's 8 MiB target (it
  // holds ~3.3 MiB without any pre-fault); 0 turns this pre-fault off.
  size_t prefault_budget_bytes = kDefaultPrefaultBudgetBytes;
  // More of the learned pages, past prefault_budget_bytes, copied in one batch when a session's
  // first execution arrives, before the cell runs: an idle session does not hold them, and a
  // used one copies them at a third of what a fault each costs where faults are dear. A cell
  // that writes fewer of them holds the rest anyway (the default pre-fault code leaves ~7 MiB
  // of them past the 4 MiB above). 0: those pages are left to faults.
  size_t first_execution_prefault_bytes = kDefaultFirstExecutionPrefaultBytes;
  double start_timeout_seconds = 120;
  // Refilling waits while any pooled session executes (from Acquire to the end of its first
  // execution or its Close, and during each later execution), at most this long, and not at
  // all once fewer than half the warm sessions are ready (clients then take sessions faster
  // than deferred refills make them). A spawn (the zygote's fork, mounts, the pre-fault) and
  // an execution contend for the same page-table work, so on a host with few cores a refill
  // beside a first execution slows the execution a client waits for (sbx_pool_bench;
  // docs/performance.md). 0: refill at once.
  double refill_deferral_seconds = 0.5;
};

// Per-session settings for Acquire.
struct PooledSessionOptions {
  Manifest manifest;              // staged into the session's workspace before it runs
  double timeout_seconds = 60;    // per block, as policy.limits.timeout_seconds of a session
  double grace_seconds = 2;
  std::string figures_dir = "output/figures";
  double stream_idle_seconds = 15;  // as ExecutorOptions'
};

class SessionPool;
struct PoolCore;

class PooledSessionExecutor final : public SessionExecutor {
 public:
  ~PooledSessionExecutor() override;
  std::string Name() const override { return "pooled session"; }
  // As SessionExecutor's. From Acquire to the end of the first execution (or Close), and
  // during every later one, the pool defers refilling (PoolOptions::refill_deferral_seconds).
  Result<CodeResult> ExecuteStreaming(const std::vector<CodeBlock>& blocks, const OutputSink& sink,
                                      CancelToken* cancel) override;
  // As SessionExecutor's; a closed session no longer holds refills back.
  void Close() override;
  // The host pid of the current session's pid 1 (0 before one exists), for measurements.
  pid_t host_pid() const { return host_pid_; }

 private:
  friend class SessionPool;
  PooledSessionExecutor(ExecutorOptions options, std::shared_ptr<PoolCore> core);
  // The warm session on the first call; afterwards (the previous one was lost) a fresh fork
  // on the same workspace.
  Result<std::unique_ptr<DriverProcess>> StartDriver() override;

  std::shared_ptr<PoolCore> core_;
  std::string workspace_name_;
  std::unique_ptr<DriverProcess> first_;
  pid_t host_pid_ = 0;
  // Counted in the pool's `executing` (refill waits while it is non-zero).
  void MarkBusy(bool busy);
  bool busy_ = false;
};

class SessionPool {
 public:
  static Result<std::unique_ptr<SessionPool>> Create(PoolOptions options);
  ~SessionPool();

  // A fresh isolated session, from the warm ones if any are ready. Thread-safe.
  Result<std::unique_ptr<PooledSessionExecutor>> Acquire(PooledSessionOptions options = {});
  // Sessions ready now; blocks until `count` are (or `timeout_seconds` passed).
  size_t WaitForWarm(size_t count, double timeout_seconds) const;
  // Executors end their session on the pool's reaper thread (session_reaper.h), after they
  // are destroyed. True once every session dropped so far is gone with its cgroup and
  // workspace (blocks up to `timeout_seconds`).
  bool WaitForRetired(double timeout_seconds) const;
  // Pages each session pre-copies while it is prepared, and when its first execution arrives
  // (what the zygote learned, within each budget).
  size_t prefault_pages() const;
  size_t first_execution_prefault_pages() const;
  // The directory that holds every session's workspace (removed with the pool).
  const std::string& workspaces_root() const;

 private:
  explicit SessionPool(std::shared_ptr<PoolCore> core) : core_(std::move(core)) {}
  std::shared_ptr<PoolCore> core_;
};

}  // namespace sbx::executor
