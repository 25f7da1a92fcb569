// The host side of the warm pool's zygote (rootfs/zygote.py): starting it in its base sandbox,
// and asking it for isolated sessions, each of which becomes a DriverProcess.
//
// Usage (SessionPool does this; see session_pool.h):
//   1. `auto zygote = Zygote::Start(options, workspaces_root);` runs rootfs/zygote.py as the
//      program of a sandbox started with RunSpec::zygote_keeps_namespace_capabilities, with
//      `workspaces_root` (a temporary workspace) as its /workspace and the session library
//      (sandbox/session_setup) bound in; sends it the session configuration (the library's
//      path, the compiled seccomp program, the tmpfs sizes, the highest capability) and waits
//      until it has imported the stack.
//   2. `zygote->Spawn(workspace)` for a directory directly under `workspaces_root`: creates
//      the session's cgroup (DecideRunLayers, as the cold path), sends the request with
//      the session's socket and an O_PATH fd of its workspace (SCM_RIGHTS), learns the
//      session's host pid from the credentials the kernel attaches to its first byte
//      (SO_PASSCRED), holds it with a pidfd, moves it into the cgroup while it builds its
//      namespaces and mounts, tells it "cgroup placed", and waits for its "prepared" frame.
//      Any failure discards the session (killed through its pidfd) and the error names the
//      step that failed. The result's channel is ready for PythonSession::Start.
//   3. Destroying the Zygote (or Stop()) kills its sandbox: every session is nested in its pid
//      namespace and dies with it.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "sandbox/cgroup/cgroup.h"
#include "sandbox/policy/policy.h"
#include "sandbox/workspace/workspace.h"
#include "src/executor/driver_process.h"

namespace sbx::executor {

struct ZygoteOptions {
  ValidPolicy policy;      // limits of the zygote and of each session (network must be none)
  std::string image_dir;   // verified by the launcher
  CgroupOptions cgroup_options;
  double session_idle_seconds = 900;
  double start_timeout_seconds = 120;  // the zygote's imports
  double spawn_timeout_seconds = 30;   // one session's setup
  std::string warmup_code;             // run once in the zygote before it forks anything
  std::string prefault_code;           // its pages are learned in a fork (zygote_prefault.py)
  size_t prefault_budget_bytes = 0;    // pre-copied per session at most; 0: no pre-fault
  size_t first_execution_prefault_bytes = 0;  // more learned pages, copied at the first execution
  size_t max_sessions = 256;           // alive at once (warm, in use or ending); Spawn refuses more
};

// What each live session leaves charged to the zygote's memory cgroup: the page tables its
// fork copied, and the zygote's pages it still maps after the zygote wrote its own copies
// (about half of this; docs/performance.md). A cgroup keeps the charge of a page it was first
// charged for when the session moves to a cgroup of its own, so the zygote's memory limit is
// the policy's plus this much per session it may hold; without it, a pool of the default
// policy lost its zygote to the cgroup's OOM killer after a few hundred sessions.
inline constexpr uint64_t kSessionResidueBytes = uint64_t{4} << 20;

// One of the zygote's max_sessions places, held by a session from its spawn to its end.
class SessionSlot {
 public:
  // A place, or nullopt when `max` are taken.
  static std::optional<SessionSlot> Take(const std::shared_ptr<std::atomic<size_t>>& taken, size_t max);
  SessionSlot(SessionSlot&& other) noexcept = default;
  SessionSlot& operator=(SessionSlot&& other) = delete;
  ~SessionSlot();

 private:
  explicit SessionSlot(std::shared_ptr<std::atomic<size_t>> taken) : taken_(std::move(taken)) {}
  std::shared_ptr<std::atomic<size_t>> taken_;
};

// A session forked by the zygote: its socket, a pidfd of its pid 1 (readable once the whole
// session is gone) and its own cgroup (removed when this is destroyed).
class PooledDriver final : public DriverProcess {
 public:
  PooledDriver(UniqueFd channel, UniqueFd pidfd, pid_t host_pid, std::optional<RunCgroup> cgroup,
               std::vector<std::string> degraded, SessionSlot slot);
  ~PooledDriver() override;
  int ended_fd() const override { return pidfd_.get(); }
  void Stop() override;
  void Kill() override;
  Result<RunResult> Wait() override;
  // Called once by Zygote::Spawn: moves the session into its cgroup (if it has one) and
  // tells it so; nothing of the session's program runs before.
  Result<void> PlaceInCgroup();
  pid_t host_pid() const { return host_pid_; }
  const std::vector<std::string>& degraded() const { return degraded_; }

 private:
  UniqueFd pidfd_;
  pid_t host_pid_;
  std::optional<RunCgroup> cgroup_;
  std::vector<std::string> degraded_;
  bool killed_ = false;
  SessionSlot slot_;  // given back after the destructor has ended the session
};

class Zygote {
 public:
  static Result<std::unique_ptr<Zygote>> Start(const ZygoteOptions& options, const Workspace& workspaces_root);
  ~Zygote();

  // Thread-safe. `name` is the workspace's directory name under the root ([A-Za-z0-9-]).
  Result<std::unique_ptr<PooledDriver>> Spawn(const Workspace& workspace, const std::string& name);
  // False once the zygote's sandbox has ended.
  bool alive() const;
  // True while max_sessions sessions are alive (Spawn would refuse).
  bool full() const { return *live_sessions_ >= options_.max_sessions; }
  // Kills the zygote's sandbox and with it every session; idempotent.
  void Stop();
  // Pages each session pre-copies while it is prepared, and when its first execution arrives,
  // as the zygote reported when it was ready.
  size_t prefault_pages() const { return prefault_pages_; }
  size_t first_execution_prefault_pages() const { return first_execution_prefault_pages_; }

 private:
  Zygote(const ZygoteOptions& options, std::unique_ptr<DriverProcess> driver);
  Result<void> SendSpawn(const std::string& request, int session_fd, int workspace_fd);

  ZygoteOptions options_;
  std::unique_ptr<DriverProcess> driver_;
  std::mutex control_mutex_;  // one request at a time on the control socket
  std::shared_ptr<std::atomic<size_t>> live_sessions_ = std::make_shared<std::atomic<size_t>>(0);
  size_t prefault_pages_ = 0;
  size_t first_execution_prefault_pages_ = 0;
};

// Where the zygote lives inside the image.
inline constexpr const char* kZygotePath = "/usr/lib/sbx/zygote.py";

}  // namespace sbx::executor
