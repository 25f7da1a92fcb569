// The runner's side of an allowlist run; the order is in allowlist_run.h.
#include "sandbox/net/allowlist_run.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <vector>

#include "netpolicy/network_proxy_env.h"

namespace sbx {
namespace {

// The child binds its sockets within a few ms of starting; 10 s covers a loaded machine.
constexpr int kHandOverTimeoutMs = 10'000;

Result<UniqueFd> CreateLog(const std::string& path) {
  // O_EXCL: a log is never appended to another run's, and never written through a symlink;
  // it starts empty, so sbx-netd's digest of what it wrote is the file's. Write-only: netd
  // never reads it.
  UniqueFd fd(
      ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd) {
    return SysError(ErrorCode::kInvalidInput,
                    "network log " + path + ": cannot create it (it must not exist yet; choose a new path)");
  }
  return fd;
}

std::string DefaultLogPath(const std::string& run_id) {
  const char* tmpdir = std::getenv("TMPDIR");
  std::string dir = tmpdir != nullptr && tmpdir[0] == '/' ? tmpdir : "/tmp";
  return dir + "/sbx-network-" + run_id + ".jsonl";
}

}  // namespace

std::string DefaultNetdPath() {
  auto next_to_us = NetdNextToExecutable();
  return next_to_us ? *next_to_us : SBX_NETD_BUILD_PATH;
}

Result<std::unique_ptr<AllowlistRun>> AllowlistRun::Start(const NetworkAllowlist& allowlist,
                                                         const AllowlistRunOptions& options) {
  std::unique_ptr<AllowlistRun> run(new AllowlistRun());
  // First: a secret that cannot be read refuses the run before anything exists.
  SBX_ASSIGN_OR_RETURN(auto trust, PrepareNetworkTrust(allowlist, options.image_fd));
  run->trust_ = std::move(trust);
  run->log_path_ = options.log_path.empty() ? DefaultLogPath(options.run_id) : options.log_path;
  SBX_ASSIGN_OR_RETURN(auto log, CreateLog(run->log_path_));
  run->log_ = std::move(log);
  const std::string binary = options.helper_binary.empty() ? DefaultNetdPath() : options.helper_binary;
  auto helper = StartNetd(binary, options.run_id, allowlist, run->log_.get(),
                                   run->trust_.netd_tls_json(), run->trust_.netd_ca_pems());
  run->trust_.ForgetNetdTlsJson();
  if (!helper) {
    return helper.error().Context("network allowlist: sbx-netd (" + binary + ")");
  }
  run->helper_ = std::move(*helper);
  if (!allowlist.inject.empty()) {
    // The sandbox's bundle needs the run CA, which netd mints: the one wait for netd before
    // the sandbox exists, and only for runs that inject secrets.
    auto ca = run->helper_->AwaitRunCaCertificate();
    if (!ca) return ca.error().Context("network allowlist: sbx-netd (" + binary + ")");
    run->trust_.AddRunCa(*ca);
  } else if (!allowlist.extra_ca_files.empty()) {
    // netd parses the CA files as X.509 before "ready" (inject runs: before the certificate
    // above). A damaged one must refuse the run before its program exists, so such a run
    // waits for netd here instead of overlapping netd's start with the sandbox's.
    if (auto ready = run->helper_->AwaitReady(); !ready) {
      return ready.error().Context("network allowlist: sbx-netd (" + binary + ")");
    }
  }
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) != 0) {
    return SysError(ErrorCode::kSetupFailed, "socketpair (network capture)");
  }
  run->receive_.reset(fds[0]);
  run->child_end_.reset(fds[1]);
  // The redirect logs every TCP attempt and leaves the code's own loopback ports free; a
  // kernel without nf_tables NAT falls back to listeners per port, unless a `*` needs it.
  run->plan_ = PrepareCapturePlan(CapturePorts(allowlist),
                                  CapturesAllPorts(allowlist) ? RedirectMode::kRequired
                                                              : RedirectMode::kPreferred,
                                  allowlist.proxy_env ? kProxyEnvPort : 0, fds[1]);
  run->sandbox_env_ = run->trust_.sandbox_env();
  // The proxy variables win over anything before them (validation refuses a placeholder
  // variable that names one; this keeps it so should a check be missed).
  if (allowlist.proxy_env) {
    for (const auto& [name, value] : ProxyEnvironment()) {
      run->sandbox_env_.insert_or_assign(name, value);
    }
  }
  return run;
}

AllowlistRun::~AllowlistRun() {
  // The helper is killed and reaped by its own destructor.
  if (!finished_ && !log_path_.empty()) ::unlink(log_path_.c_str());
}

void AllowlistRun::ChildStarted() { child_end_.reset(); }

Result<void> AllowlistRun::HandOver(bool* child_failed) {
  std::vector<CapturedSocket> sockets = ReceiveCapturedSockets(plan_, receive_.get(), kHandOverTimeoutMs);
  receive_.reset();
  *child_failed = sockets.empty();
  if (sockets.empty()) return Ok{};
  for (const auto& socket : sockets) {
    if (socket.kind != CaptureKind::kRedirect) continue;
    all_tcp_ports_ = true;
    tracking_ = socket.tracking;
  }
  auto sent = helper_->SendCaptureSockets(sockets);  // borrows the fds
  for (const auto& socket : sockets) ::close(socket.fd);  // netd holds them now
  if (!sent) return sent.error().Context("network allowlist: handing the capture sockets to sbx-netd");
  return Ok{};
}

void AllowlistRun::RequestStop() {
  if (helper_) helper_->RequestStop();
}

void AllowlistRun::Finish(NetworkOutcome* outcome) {
  finished_ = true;
  if (helper_) {
    if (auto summary = helper_->Stop(); summary) {
      outcome->dns_queries = summary->dns_queries;
      outcome->allowed = summary->allowed;
      outcome->denied = summary->denied;
      outcome->denied_names = summary->denied_names;
      outcome->bytes_up = summary->bytes_up;
      outcome->bytes_down = summary->bytes_down;
      outcome->log_sha256 = summary->log_sha256;
    }
    helper_.reset();
  }
  log_.reset();
  outcome->log_path = log_path_;
  outcome->tcp_coverage = all_tcp_ports_ ? "all" : "listed+audit";
  outcome->conntrack = !all_tcp_ports_                         ? "no_redirect"
                       : tracking_ == Tracking::kTcpShortLived ? "tcp_short_lived"
                       : tracking_ == Tracking::kTcp           ? "tcp_default_timeouts"
                                                               : "all_flows";
}

}  // namespace sbx
