// The runner's side of a run under a network allowlist, in the launcher's order:
//   before clone   Start(): reads the secrets and CA files, opens the audit log, starts
//                  sbx-netd (with inject rules: waits for the run CA's certificate netd
//                  minted, for the sandbox's bundle), makes the socket the child sends its
//                  capture sockets over;
//   the child      plan(): routes + capture sockets (network_capture.h), resolv.conf;
//   after clone    ChildStarted(); HandOver(): the child's sockets go to sbx-netd;
//   supervision    helper_fd(): its hang-up kills the run (network_helper_died);
//   the end        RequestStop(): "stop", unanswered yet, while the runner cleans up;
//                  Finish(): the summary and the log's hash (netd's), into the run's result.
// Any failure before the program starts refuses the run: allowlist never degrades.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "base/error.h"
#include "base/unique_fd.h"
#include "sandbox/launch/run_result.h"
#include "sandbox/net/netd_process.h"
#include "sandbox/net/network_capture.h"
#include "sandbox/net/network_trust.h"
#include "sandbox/policy/policy.h"

namespace sbx {

struct AllowlistRunOptions {
  std::string helper_binary;  // "" : DefaultNetdPath()
  std::string log_path;       // "" : a new file in $TMPDIR (or /tmp) named after the run id
  std::string run_id;
  int image_fd = -1;          // the image's root: its CA bundle, for inject rules and extra CAs
};

// sbx-netd next to the running executable, else the one this source tree built.
std::string DefaultNetdPath();

class AllowlistRun {
 public:
  static Result<std::unique_ptr<AllowlistRun>> Start(const NetworkAllowlist& allowlist,
                                                    const AllowlistRunOptions& options);
  ~AllowlistRun();

  // What the child does; valid until ChildStarted().
  const CapturePlan& plan() const { return plan_; }
  // The sandbox's trust bundle (inject rules, extra CAs).
  const NetworkTrust& trust() const { return trust_; }
  // What the run adds to the sandbox's environment: the trust bundle's variables, the
  // placeholders and, with proxy_env, the proxy variables (network_proxy_env.h).
  const std::map<std::string, std::string>& sandbox_env() const { return sandbox_env_; }
  // The child exists (with its copy of the capture socket): drop ours.
  void ChildStarted();
  // Receives the child's sockets and hands them to sbx-netd. An error means the run must be
  // killed; a child that failed setup is not an error here (its own report explains it) and
  // leaves `*child_failed` set.
  Result<void> HandOver(bool* child_failed);
  int helper_fd() const { return helper_ ? helper_->control_fd() : -1; }
  // The run has ended: sbx-netd may wind down while the runner cleans up (no wait).
  void RequestStop();
  // Stops the helper and fills the result's network summary (also after a failed run).
  void Finish(NetworkOutcome* outcome);

 private:
  AllowlistRun() = default;

  bool finished_ = false;  // else the destructor removes the log: a refused run leaves nothing
  bool all_tcp_ports_ = false;  // the child's redirect is in place (HandOver saw its listener)
  Tracking tracking_ = Tracking::kTcpShortLived;  // what the redirect's batch left tracked

  std::unique_ptr<NetdProcess> helper_;
  UniqueFd log_;
  std::string log_path_;
  UniqueFd receive_;
  UniqueFd child_end_;
  CapturePlan plan_;
  NetworkTrust trust_;
  std::map<std::string, std::string> sandbox_env_;
};

}  // namespace sbx
