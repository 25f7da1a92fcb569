// Result naming, the exit-code table and the JSON form of a RunResult.
#include "sandbox/launch/run_result.h"

#include <nlohmann/json.hpp>

namespace sbx {

const char* RunStatusName(RunStatus status) {
  switch (status) {
    case RunStatus::kExited: return "exited";
    case RunStatus::kSignaled: return "signaled";
    case RunStatus::kTimedOut: return "timed_out";
    case RunStatus::kOomKilled: return "oom_killed";
    case RunStatus::kPidsLimit: return "pids_limit";
    case RunStatus::kSeccompViolation: return "seccomp_violation";
    case RunStatus::kSetupFailed: return "setup_failed";
    case RunStatus::kCancelled: return "cancelled";
    case RunStatus::kNetdDied: return "network_helper_died";
  }
  return "unknown";
}

int ExitCodeFor(const RunResult& result) {
  switch (result.status) {
    case RunStatus::kSetupFailed:
    case RunStatus::kNetdDied: return 125;
    case RunStatus::kTimedOut: return 124;
    case RunStatus::kCancelled: return 128 + (result.signal != 0 ? result.signal : 15);
    case RunStatus::kExited:
      return result.exec_failure_code != 0 ? result.exec_failure_code : result.exit_code;
    case RunStatus::kPidsLimit:
      return result.signal != 0 ? 128 + result.signal : result.exit_code;
    case RunStatus::kOomKilled:
    case RunStatus::kSignaled:
    case RunStatus::kSeccompViolation:
      return 128 + (result.signal != 0 ? result.signal : 9);
  }
  return 125;
}

namespace {

nlohmann::ordered_json NetworkOutcomeJson(const NetworkOutcome& network) {
  nlohmann::ordered_json out;
  out["mode"] = network.mode;
  if (network.mode != "allowlist") return out;
  // What the capture covers: TCP on every port (or, without the kernel's NAT, the listed
  // ports plus the audit-only ones), UDP only DNS, IPv6 captured and denied unless an
  // address rule allows it.
  out["coverage"] = {{"tcp", network.tcp_coverage},
                     {"udp", "dns"},
                     {"ipv6", "address_rules_only"},
                     {"conntrack", network.conntrack}};
  out["dns_queries"] = network.dns_queries;
  out["allowed"] = network.allowed;
  out["denied"] = network.denied;
  out["denied_names"] = network.denied_names;
  out["bytes_up"] = network.bytes_up;
  out["bytes_down"] = network.bytes_down;
  out["log_path"] = network.log_path;
  out["log_sha256"] = network.log_sha256;
  return out;
}

}  // namespace

std::string RunResultToJson(const RunResult& result) {
  nlohmann::ordered_json out;
  out["run_id"] = result.run_id;
  out["status"] = RunStatusName(result.status);
  out["exit_code"] = ExitCodeFor(result);
  out["signal"] = result.signal;
  out["wall_ms"] = result.wall_ms;
  out["cpu_ms"] = result.cpu_ms;
  out["peak_memory_bytes"] = result.peak_memory_bytes;
  // Program output need not be UTF-8: invalid bytes are replaced rather than failing.
  out["stdout"] = result.stdout_data;
  out["stderr"] = result.stderr_data;
  out["stdout_truncated"] = result.stdout_truncated;
  out["stderr_truncated"] = result.stderr_truncated;
  nlohmann::ordered_json enforcement = nlohmann::ordered_json::object();
  for (const auto& item : result.enforcement) enforcement[item.what] = item.mechanism;
  out["enforcement"] = enforcement;
  out["degraded"] = result.degraded;
  out["network"] = NetworkOutcomeJson(result.network);
  if (!result.setup_error.empty()) out["error"] = result.setup_error;
  return out.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace sbx
