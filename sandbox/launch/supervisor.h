// The parent's watch over a running sandbox: output, reports, the timeout, the final reap.
#pragma once

#include <sys/resource.h>
#include <sys/types.h>

#include <functional>
#include <optional>

#include "sandbox/launch/child_report.h"
#include "sandbox/launch/output_capture.h"

namespace sbx {

struct SupervisedChild {
  pid_t pid = -1;     // our direct child, the sandbox's init (reaped by pid: it is ours)
  int pidfd = -1;     // every signal goes through the pidfd, never a raw pid
  int sync_fd = -1;
  int stdout_fd = -1;
  int stderr_fd = -1;
  int cancel_fd = -1;  // readable or hung up: stop the run as at the timeout (-1: none)
  // sbx-netd's control socket (network allowlist): readable or hung up means the
  // helper died or misbehaved; the run is killed at once, without a grace (-1: none).
  int helper_fd = -1;
  // Isolation::kOuter: the init is stopped by a byte on sync_fd, on which it kills and reaps the
  // program's tree and exits; never SIGKILLed before that (it would orphan the tree).
  bool init_kills_tree = false;
};

struct SupervisionOutcome {
  bool timed_out = false;
  bool cancelled = false;  // stopped through cancel_fd (and not by the timeout first)
  bool helper_died = false;  // killed because helper_fd fired
  std::optional<ChildReport> setup_failure;  // first kSetupFailed report
  std::optional<int> exec_errno;             // kExecFailed
  std::optional<int> program_status;         // wait status reported by the init
  int init_status = 0;                       // wait status of the init itself (once reaped)
  // The init's exit is still under way (it reported the program's end, so every other process
  // of the namespace is reaped): the caller reaps it, with ReapInit or ReapLater (reap_later.h).
  bool init_exiting = false;
  uint64_t cpu_us = 0;       // the init and everything it reaped: its report, or wait4()
  uint64_t max_rss_kib = 0;  // the same, the largest resident set
  uint32_t report_flags = 0;  // of the init's final report (kReportRootMoved)
  uint64_t wall_ns = 0;
};

// Drains both pipes concurrently into the captures, collects reports, enforces the timeout
// (SIGTERM to the init, then after `grace_seconds` SIGKILL to it, or the outer init's stop
// byte, and `kill_all()`), then drains
// the pipes to EOF. Returns when no sandboxed process but the init is left, and the init is
// either reaped or exiting (`init_exiting`, SIGKILL sent): once the init reports the program's
// end it has killed and reaped everything else, and what remains of its exit is the kernel's
// teardown of the namespaces (their mounts and superblocks), which bubblewrap does not wait
// for either.
SupervisionOutcome Supervise(const SupervisedChild& child, OutputCapture& out, OutputCapture& err,
                             double timeout_seconds, double grace_seconds,
                             const std::function<void()>& kill_all);

// Waits for the init's exit (needed before its cgroup can be removed).
void ReapInit(const SupervisedChild& child, SupervisionOutcome& outcome);

}  // namespace sbx
