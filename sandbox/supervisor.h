// The parent's watch over a running sandbox: output, reports, the timeout, the final reap.
#pragma once

#include <sys/resource.h>
#include <sys/types.h>

#include <functional>
#include <optional>

#include "sandbox/child_report.h"
#include "sandbox/output_capture.h"

namespace sbx {

struct SupervisedChild {
  pid_t pid = -1;     // our direct child, the sandbox's init (reaped by pid: it is ours)
  int pidfd = -1;     // every signal goes through the pidfd, never a raw pid
  int sync_fd = -1;
  int stdout_fd = -1;
  int stderr_fd = -1;
  int cancel_fd = -1;  // readable or hung up: stop the run as at the timeout (-1: none)
  // The network helper's control socket (network allowlist): readable or hung up means the
  // helper died or misbehaved; the run is killed at once, without a grace (-1: none).
  int helper_fd = -1;
};

struct SupervisionOutcome {
  bool timed_out = false;
  bool cancelled = false;  // stopped through cancel_fd (and not by the timeout first)
  bool helper_died = false;  // killed because helper_fd fired
  std::optional<ChildReport> setup_failure;  // first kSetupFailed report
  std::optional<int> exec_errno;             // kExecFailed
  std::optional<int> program_status;         // wait status reported by the init
  int init_status = 0;                       // wait status of the init itself
  struct rusage usage {};                    // the init and everything it reaped
  uint64_t wall_ns = 0;
};

// Drains both pipes concurrently into the captures, collects reports, enforces the timeout
// (SIGTERM to the init, then after `grace_seconds` SIGKILL to it and `kill_all()`), reaps the
// init, then drains the pipes to EOF. Returns when every sandboxed process is gone.
SupervisionOutcome Supervise(const SupervisedChild& child, OutputCapture& out, OutputCapture& err,
                             double timeout_seconds, double grace_seconds,
                             const std::function<void()>& kill_all);

}  // namespace sbx
