// RunResult: how a sandboxed run ended, what it used, which mechanism enforced each limit.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sbx {

enum class RunStatus {
  kExited,            // the program exited; exit_code holds its code
  kSignaled,          // killed by a signal (not the sandbox's own enforcement)
  kTimedOut,          // the wall-clock timeout ended it
  kOomKilled,         // the memory limit ended it (seen in the cgroup's events)
  kPidsLimit,         // it failed after hitting the pids limit
  kSeccompViolation,  // killed by SIGSYS from the syscall filter
  kSetupFailed,       // the sandbox could not be set up; nothing of the program ran
  kCancelled,         // the caller stopped it (RunSpec::cancel_fd), like a timeout
  kNetdDied,  // sbx-netd (network allowlist) died: the run was killed at once
};

// One line of the `enforcement` map: a limit or layer and what enforced it.
struct Enforcement {
  std::string what;       // "memory", "pids", "cpu", "timeout", "user_namespace", ...
  std::string mechanism;  // "cgroup_v2", "cgroup_v1", "rlimit", "pid_namespace", "none", ...
};

// What the network policy did during the run (RunResult::network).
struct NetworkOutcome {
  std::string mode = "none";  // "none", "host", "allowlist"
  // allowlist only:
  uint64_t dns_queries = 0;
  uint64_t allowed = 0;  // connections let through
  uint64_t denied = 0;   // DNS answers refused and connections refused
  std::vector<std::string> denied_names;  // the first few denied names or addresses
  uint64_t bytes_up = 0;
  uint64_t bytes_down = 0;
  std::string log_path;    // the audit log (JSON lines), outside the sandbox; "" if none
  std::string log_sha256;  // of the log as the run left it
  // Which TCP ports were captured (and logged): "all" (the nf_tables redirect) or
  // "listed+audit" (a listener per listed and audit-only port; the kernel had no NAT).
  std::string tcp_coverage = "listed+audit";
  // What the redirect left to connection tracking: "tcp_short_lived" (TCP only, its closed
  // states held seconds), "tcp_default_timeouts" (a kernel without ct timeout objects: closed
  // TCP entries stay for the kernel's timeouts, minutes), "all_flows" (a kernel without
  // notrack: every flow tracked), or "no_redirect" (listeners per port, no NAT).
  std::string conntrack = "no_redirect";
};

struct RunResult {
  std::string run_id;  // names the run's cgroup and network log (NewRunId)
  RunStatus status = RunStatus::kSetupFailed;
  int exit_code = 0;  // the program's own exit code when status is kExited
  int signal = 0;     // the signal that ended it, or cancelled it (sbx run), when there was one
  uint64_t wall_ms = 0;
  uint64_t cpu_ms = 0;
  uint64_t peak_memory_bytes = 0;
  std::string stdout_data;
  std::string stderr_data;
  bool stdout_truncated = false;
  bool stderr_truncated = false;
  std::vector<Enforcement> enforcement;
  std::vector<std::string> degraded;  // layers the policy allowed to be missing, and were
  NetworkOutcome network;
  std::string setup_error;            // set when status is kSetupFailed
  // The command could not be started inside: 126 cannot execute, 127 not found (0 if it ran).
  int exec_failure_code = 0;
  std::string exec_error;  // then: why, one line (also the last line of stderr_data)
};

const char* RunStatusName(RunStatus status);

// The CLI exit code for a result (docs/architecture.md, Conventions): the program's code; 128+N for
// signal N; 124 timed out; 125 setup failed or sbx-netd died; 126 cannot execute; 127 not
// found; cancelled: 128+N when signal N cancelled it (`sbx run` under Ctrl-C: 130), else 143
// (stopped with SIGTERM, as `docker stop` reports it).
int ExitCodeFor(const RunResult& result);

// The whole result as one JSON object (the `sbx run --json` contract).
std::string RunResultToJson(const RunResult& result);

}  // namespace sbx
