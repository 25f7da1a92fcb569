// The runner's side of sbx-netd: starts the helper that enforces a run's network allowlist,
// hands it the sandbox's capture sockets, and stops it for the run's network summary
// (netpolicy/netd_protocol.h is the protocol, message by message).
//
// Usage, in the runner (the parent of the sandbox):
//   1. `auto helper = StartNetd(path, run_id, allowlist, audit_fd);` (path: the run's
//      own setting, else DefaultNetdPath() in allowlist_run.h) before cloning the
//      sandbox child: forks and executes sbx-netd and sends the run's policy without waiting
//      for either (a binary that is missing or not executable fails here; any other execve
//      error and a policy netd refuses fail at step 2).
//   1b. With inject rules, `helper->AwaitRunCaCertificate()` (once, before anything else
//      waits on the helper) before cloning: netd mints the run's CA and sends only its
//      certificate, for the sandbox's trust bundle, before it builds its TLS contexts.
//   2. `helper->SendCaptureSockets(sockets)` with the sockets the child bound inside its
//      network namespace; returns once netd serves them. The runner then closes its copies.
//   3. While the run lasts, poll `control_fd()` (POLLIN/POLLHUP before Stop means netd died:
//      end the run as network_helper_died) or the pidfd.
//   4. `helper->RequestStop()` as soon as the run has ended (optional: netd winds down while
//      the runner cleans up), then `helper->Stop()`: the summary for the run's result.
// Destroying a NetdProcess kills the helper (SIGKILL) and reaps it, whatever state it is in;
// after Stop() it is already killed and being reaped in the background (reap_later.h).
// The helper also dies with the thread that started it (PR_SET_PDEATHSIG): start it from a
// thread that lives as long as the run.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/unique_fd.h"
#include "netpolicy/netd_protocol.h"
#include "netpolicy/network_rules.h"
#include "sandbox/net/network_capture.h"

namespace sbx {

// What the helper counted over the run. allowed/denied count decisions of every kind (each DNS
// query with a usable question, each TCP connection); denied_names are the first 10 distinct
// denied names (or addresses, for IP literals).
struct NetworkSummary {
  uint64_t dns_queries = 0;
  uint64_t allowed = 0;
  uint64_t denied = 0;
  std::vector<std::string> denied_names;
  uint64_t bytes_up = 0;
  uint64_t bytes_down = 0;
  std::string log_sha256;  // of the audit log after its last record; "" without one
};

class NetdProcess {
 public:
  ~NetdProcess();
  NetdProcess(const NetdProcess&) = delete;
  NetdProcess& operator=(const NetdProcess&) = delete;

  // Step 1b (inject rules only): the run CA's certificate. A policy netd refuses before it
  // mints the CA (a CA file that does not parse) comes back here as the error.
  Result<std::string> AwaitRunCaCertificate();
  // Waits for "ready" (step 2) once; an execve failure of the helper, or a policy netd
  // refuses (a CA file that does not parse), is reported here.
  Result<void> AwaitReady();
  // Waits for "ready" (step 2) if it has not come yet, then step 3 of the protocol, in
  // batches of kNetdMaxFdsPerMessage; waits for "serving". The fds stay the caller's to close.
  Result<void> SendCaptureSockets(const std::vector<CapturedSocket>& sockets);
  // Step 5 without waiting for the answer; nothing before "ready" (Stop handles that case).
  void RequestStop();
  // Step 5 (unless RequestStop sent it), then the summary. The helper is then killed and
  // reaped in the background (reap_later.h): the summary is its last word.
  Result<NetworkSummary> Stop();

  int control_fd() const { return control_.get(); }
  pid_t pid() const { return pid_; }
  int pidfd() const { return pidfd_.get(); }

 private:
  friend Result<std::unique_ptr<NetdProcess>> StartNetd(const std::string&,
                                                                   const std::string&,
                                                                   const NetworkAllowlist&, int,
                                                                   const std::string&,
                                                                   const std::vector<std::string>&);
  NetdProcess() = default;
  // execve's error if the helper's execve failed (read from exec_status_), else `otherwise`.
  Error ExecFailureOr(Error otherwise);
  void KillAndReap();

  std::string binary_;
  UniqueFd control_;
  UniqueFd exec_status_;  // the exec-error pipe's read end, until "ready"
  UniqueFd pidfd_;
  pid_t pid_ = -1;
  bool reaped_ = false;
  bool ready_ = false;  // "ready" received (SendCaptureSockets waits for it first)
  bool stop_sent_ = false;
};

// <directory of the running executable>/sbx-netd, where the build puts it next to sbx; an error
// naming that path when no executable file is there.
Result<std::string> NetdNextToExecutable();

// How long the runner waits for each of the helper's answers before it gives up on it.
inline constexpr int kNetdReplyTimeoutMs = 10'000;

// audit_fd: the run's network log, a new empty file opened O_WRONLY|O_APPEND by the caller
// (becomes the helper's fd 4), or -1 for none; netd hashes what it writes. tls_json: the first
// message's "tls" object (NetworkTrust::netd_tls_json), "" without inject rules; ca_pems: the
// texts of network.extra_ca_files then, with inject rules, upstream_ca_files
// (NetworkTrust::netd_ca_pems), each at most kNetdMaxCaFileBytes + 1, sent in a sealed memfd
// (any number of them fits; the hello datagram is 64 KiB). The error says why the helper
// refused or could not start.
Result<std::unique_ptr<NetdProcess>> StartNetd(
    const std::string& binary, const std::string& run_id, const NetworkAllowlist& allowlist,
    int audit_fd, const std::string& tls_json = "",
    const std::vector<std::string>& ca_pems = {});

}  // namespace sbx
