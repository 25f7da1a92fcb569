// Starts sbx-netd per the control protocol and speaks the runner's side of it.
#include "sandbox/net/netd_process.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <nlohmann/json.hpp>

#include "base/fd_passing.h"
#include "base/sibling_executable.h"
#include "base/wipe.h"
#include "base/write_all.h"
#include "netpolicy/netd_protocol.h"
#include "netpolicy/network_allowlist_json.h"
#include "sandbox/launch/child_wait.h"
#include "sandbox/launch/reap_later.h"
#include "sandbox/policy/policy.h"

namespace sbx {
namespace {

using nlohmann::json;

Error HelperError(const std::string& what) {
  return MakeError(ErrorCode::kSetupFailed, "sbx-netd: " + what);
}

Result<void> SendDatagram(int fd, const std::string& text, const std::vector<int>& fds = {}) {
  if (SendWithFds(fd, text.data(), text.size(), fds.data(), fds.size()) < 0)
    return SysError(ErrorCode::kIo, "sbx-netd: sendmsg(control)");
  return Ok{};
}

// The helper's next message as a JSON object; `expected` is its one key ("ready", ...). An
// {"error":...} answer becomes the error.
Result<json> ReceiveReply(int fd, const char* expected) {
  pollfd wait{fd, POLLIN, 0};
  int ready;
  do {
    ready = poll(&wait, 1, kNetdReplyTimeoutMs);
  } while (ready < 0 && errno == EINTR);
  if (ready < 0) return SysError(ErrorCode::kIo, "sbx-netd: poll(control)");
  if (ready == 0) {
    return HelperError(std::string("no \"") + expected + "\" within " +
                       std::to_string(kNetdReplyTimeoutMs / 1000) + " s");
  }
  std::string buffer(kNetdMaxMessage + 1, '\0');
  ssize_t size;
  do {
    size = recv(fd, buffer.data(), buffer.size(), 0);
  } while (size < 0 && errno == EINTR);
  if (size < 0) return SysError(ErrorCode::kIo, "sbx-netd: recv(control)");
  if (size == 0) {
    return HelperError(std::string("exited before \"") + expected + "\" (see its stderr)");
  }
  buffer.resize(static_cast<size_t>(size));
  json reply;
  try {
    reply = json::parse(buffer);
  } catch (const json::exception&) {
    return HelperError("answered with something that is not JSON");
  }
  if (!reply.is_object()) return HelperError("answered with something that is not an object");
  if (reply.contains("error") && reply["error"].is_string()) {
    return HelperError(reply["error"].get<std::string>());
  }
  if (!reply.contains(expected)) {
    return HelperError(std::string("answered without \"") + expected + "\"");
  }
  return reply;
}

Result<NetworkSummary> ParseSummary(const json& reply) {
  const json& summary = reply["summary"];
  NetworkSummary result;
  try {
    result.dns_queries = summary.at("dns_queries").get<uint64_t>();
    result.allowed = summary.at("allowed").get<uint64_t>();
    result.denied = summary.at("denied").get<uint64_t>();
    result.denied_names = summary.at("denied_names").get<std::vector<std::string>>();
    result.bytes_up = summary.at("bytes_up").get<uint64_t>();
    result.bytes_down = summary.at("bytes_down").get<uint64_t>();
    result.log_sha256 = summary.at("log_sha256").get<std::string>();
  } catch (const json::exception& error) {
    return HelperError(std::string("malformed summary: ") + error.what());
  }
  return result;
}

// The CA files' texts back to back in a sealed memfd (the protocol's step 1): a datagram is
// too small for a distribution's bundle. The seals make the texts the runner checked the ones
// netd reads.
Result<UniqueFd> CaFilesMemfd(const std::vector<std::string>& pems) {
  UniqueFd fd(memfd_create("sbx-netd-ca-files", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd) return SysError(ErrorCode::kSetupFailed, "sbx-netd: memfd_create (CA files)");
  for (const std::string& pem : pems) {
    if (auto wrote = WriteAll(fd.get(), pem); !wrote) {
      return wrote.error().Context("sbx-netd: CA files memfd");
    }
  }
  if (fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0) {
    return SysError(ErrorCode::kSetupFailed, "sbx-netd: F_ADD_SEALS (CA files memfd)");
  }
  return fd;
}

// In the forked child: only async-signal-safe calls. Returns only on failure, with errno.
int ExecHelperInChild(const char* binary, int control, int audit, int dev_null, pid_t parent) {
  char* const argv[] = {const_cast<char*>("sbx-netd"), nullptr};
  char* const envp[] = {nullptr};
  if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) return errno;
  if (getppid() != parent) return ESRCH;
  // Lift every source above the target numbers first, so no dup2 overwrites another source.
  const int high_control = fcntl(control, F_DUPFD_CLOEXEC, 10);
  const int high_audit = audit >= 0 ? fcntl(audit, F_DUPFD_CLOEXEC, 10) : -1;
  const int high_null = fcntl(dev_null, F_DUPFD_CLOEXEC, 10);
  if (high_control < 0 || high_null < 0 || (audit >= 0 && high_audit < 0)) return errno;
  if (dup2(high_null, 0) < 0 || dup2(high_null, 1) < 0 || dup2(high_control, kNetdControlFd) < 0)
    return errno;
  if (high_audit >= 0) {
    if (dup2(high_audit, kNetdAuditLogFd) < 0) return errno;
  } else {
    close(kNetdAuditLogFd);
  }
  // Everything above fd 4 closes at execve (the exec-error pipe stays open until then).
  if (syscall(SYS_close_range, kNetdAuditLogFd + 1, ~0U, CLOSE_RANGE_CLOEXEC) != 0) return errno;
  execve(binary, argv, envp);
  return errno;
}

}  // namespace

Result<std::string> NetdNextToExecutable() {
  return SiblingExecutable("sbx-netd", "build it, or give the helper's path explicitly");
}

Result<std::unique_ptr<NetdProcess>> StartNetd(const std::string& binary,
                                                          const std::string& run_id,
                                                          const NetworkAllowlist& allowlist,
                                                          int audit_fd,
                                                          const std::string& tls_json,
                                                          const std::vector<std::string>& ca_pems) {
  std::string hello;
  // The hello may carry secrets (tls_json): wiped however this function returns.
  ScopedWipe wipe_hello(hello);
  try {
    json public_part = {{"v", 1},
                        {"run", run_id},
                        {"audit_log", audit_fd >= 0},
                        {"network", json::parse(NetworkAllowlistToJson(allowlist))}};
    if (!ca_pems.empty()) {
      json sizes = json::array();
      for (const std::string& pem : ca_pems) sizes.push_back(pem.size());
      public_part["ca_file_sizes"] = std::move(sizes);
    }
    hello = public_part.dump(-1, ' ', true, json::error_handler_t::replace);
  } catch (const json::exception& error) {
    return MakeError(ErrorCode::kInternal, std::string("sbx-netd: policy JSON: ") + error.what());
  }
  if (!tls_json.empty()) {
    hello.pop_back();  // the closing brace: "tls" joins the object without a library copy
    hello.reserve(hello.size() + tls_json.size() + 16);
    hello += ",\"tls\":";
    hello += tls_json;
    hello += '}';
  }
  if (hello.size() > kNetdMaxMessage) {
    return InvalidInput("network: the allowlist and secrets are larger than sbx-netd's " +
                        std::to_string(kNetdMaxMessage / 1024) +
                        " KiB message limit (fewer rules or inject rules)");
  }
  UniqueFd ca_files;
  if (!ca_pems.empty()) {
    SBX_ASSIGN_OR_RETURN(auto memfd, CaFilesMemfd(ca_pems));
    ca_files = std::move(memfd);
  }
  // The usual failure, said at once; execve's own errors come with the wait for "ready".
  if (access(binary.c_str(), X_OK) != 0) {
    return SysError(ErrorCode::kSetupFailed, "sbx-netd: execve(" + binary + ")");
  }
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) {
    return SysError(ErrorCode::kSetupFailed, "sbx-netd: socketpair");
  }
  UniqueFd runner_end(pair[0]), helper_end(pair[1]);
  int exec_pipe[2];
  if (pipe2(exec_pipe, O_CLOEXEC) != 0) return SysError(ErrorCode::kSetupFailed, "sbx-netd: pipe2");
  UniqueFd exec_read(exec_pipe[0]), exec_write(exec_pipe[1]);
  UniqueFd dev_null(open("/dev/null", O_RDWR | O_CLOEXEC));
  if (!dev_null) return SysError(ErrorCode::kSetupFailed, "sbx-netd: open(/dev/null)");
  const pid_t parent = getpid();

  const pid_t pid = fork();
  if (pid < 0) return SysError(ErrorCode::kSetupFailed, "sbx-netd: fork");
  if (pid == 0) {
    int err = ExecHelperInChild(binary.c_str(), helper_end.get(), audit_fd, dev_null.get(), parent);
    (void)!write(exec_write.get(), &err, sizeof(err));
    _exit(127);
  }
  std::unique_ptr<NetdProcess> helper(new NetdProcess);
  helper->pid_ = pid;
  helper->binary_ = binary;
  helper->control_ = std::move(runner_end);
  // Not waited for here: the helper's execve and start overlap the building of the sandbox.
  helper->exec_status_ = std::move(exec_read);
  helper_end.reset();
  exec_write.reset();
  helper->pidfd_ = UniqueFd(static_cast<int>(syscall(SYS_pidfd_open, pid, 0)));
  if (!helper->pidfd_) return SysError(ErrorCode::kUnavailable, "sbx-netd: pidfd_open");
  // A helper whose execve failed may be gone already (EPIPE): its own reason is the error.
  std::vector<int> hello_fds;
  if (ca_files) hello_fds.push_back(ca_files.get());
  if (auto sent = SendDatagram(helper->control_fd(), hello, hello_fds); !sent) {
    return helper->ExecFailureOr(sent.error());
  }
  // "ready" is awaited in SendCaptureSockets: the helper starts while the runner builds the
  // sandbox, instead of before it (a refused policy still fails the run before its program).
  return helper;
}

Error NetdProcess::ExecFailureOr(Error otherwise) {
  // The child writes execve's errno to the CLOEXEC pipe before it exits; an exec'd helper
  // closes the pipe without a word.
  int exec_errno = 0;
  ssize_t got;
  do {
    got = read(exec_status_.get(), &exec_errno, sizeof(exec_errno));
  } while (got < 0 && errno == EINTR);
  if (got == sizeof(exec_errno)) {
    return SysError(ErrorCode::kSetupFailed, "sbx-netd: execve(" + binary_ + ")", exec_errno);
  }
  return otherwise;
}

Result<void> NetdProcess::AwaitReady() {
  if (ready_) return Ok{};
  auto ready = ReceiveReply(control_fd(), "ready");
  if (!ready) return ExecFailureOr(ready.error());
  ready_ = true;
  exec_status_.reset();
  return Ok{};
}

Result<std::string> NetdProcess::AwaitRunCaCertificate() {
  auto reply = ReceiveReply(control_fd(), "ca_cert_pem");
  if (!reply) return ExecFailureOr(reply.error());
  const json& cert = (*reply)["ca_cert_pem"];
  if (!cert.is_string() || cert.get_ref<const std::string&>().empty()) {
    return HelperError("ca_cert_pem: expected the run CA's certificate (PEM)");
  }
  return cert.get<std::string>();
}

Result<void> NetdProcess::SendCaptureSockets(const std::vector<CapturedSocket>& sockets) {
  SBX_TRY(AwaitReady());
  size_t at = 0;
  do {
    const size_t count = std::min(kNetdMaxFdsPerMessage, sockets.size() - at);
    json batch = {{"capture", json::array()}, {"last", at + count == sockets.size()}};
    std::vector<int> fds;
    for (size_t i = at; i < at + count; ++i) {
      const CapturedSocket& socket = sockets[i];
      batch["capture"].push_back(
          {{"proto", CaptureKindName(socket.kind)},
           {"port", socket.port}});
      fds.push_back(socket.fd);
    }
    SBX_TRY(SendDatagram(control_fd(), batch.dump(), fds));
    at += count;
  } while (at < sockets.size());
  SBX_TRY(ReceiveReply(control_fd(), "serving"));
  return Ok{};
}

void NetdProcess::RequestStop() {
  if (!ready_ || stop_sent_) return;
  stop_sent_ = static_cast<bool>(SendDatagram(control_fd(), json{{"stop", true}}.dump()));
}

Result<NetworkSummary> NetdProcess::Stop() {
  if (auto ready = AwaitReady(); !ready) {  // a run that ended before its capture sockets arrived
    KillAndReap();
    return ready.error();
  }
  if (!stop_sent_) SBX_TRY(SendDatagram(control_fd(), json{{"stop", true}}.dump()));
  stop_sent_ = true;
  auto reply = ReceiveReply(control_fd(), "summary");
  if (!reply) {
    KillAndReap();
    return reply.error();
  }
  auto summary = ParseSummary(*reply);
  // The summary is netd's last word: its server has stopped and the log's digest is taken,
  // so no record can follow. What is left is its exit, which the run need not wait for.
  syscall(SYS_pidfd_send_signal, pidfd_.get(), SIGKILL, nullptr, 0);
  ReapLater(pid_);
  reaped_ = true;
  return summary;
}

void NetdProcess::KillAndReap() {
  if (reaped_ || pid_ <= 0) return;
  KillAndWaitForChild(pid_, pidfd_.get());
  reaped_ = true;
}

NetdProcess::~NetdProcess() { KillAndReap(); }

}  // namespace sbx
