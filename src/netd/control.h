// sbx-netd's side of the control protocol with the runner (netpolicy/netd_protocol.h),
// message by message. The steps before serving are blocking calls on the control socket; the
// stop request is awaited on the io_context (ControlWatcher).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>

#include "base/error.h"
#include "base/unique_fd.h"
#include "netpolicy/netd_protocol.h"
#include "netpolicy/network_rules.h"
#include "src/netd/netd_server.h"
#include "src/netd/run_counters.h"
#include "src/netd/tls_config.h"

namespace sbx::netd {

// Step 1: {"v":1,"run":...,"audit_log":...,"network":...,"ca_file_sizes":[...],"tls":...}, with
// the CA files' memfd when there are CA files.
struct Hello {
  std::string run_id;
  bool audit_log = false;
  NetworkAllowlist allowlist;
  // extra_ca_pems[i]: the text of network.extra_ca_files[i], only to be checked (ca_files.h):
  // the sandbox's bundle already holds it.
  std::vector<std::string> extra_ca_pems;
  std::optional<TlsConfig> tls;  // exactly when allowlist.inject is not empty
};
Result<Hello> ReceiveHello(int control_fd);
// Parses step 1's message (strict: exactly those keys, "tls" exactly when network.inject is
// not empty, "ca_file_sizes" exactly when there are CA files to send, v == 1, a run id of
// 1..128 printable ASCII bytes). `ca_texts` is the memfd's content ("" without one), cut into
// extra_ca_pems and tls->upstream_ca_pems at ca_file_sizes. The copies the JSON parser made of
// the secrets are wiped; the caller wipes `text`.
Result<Hello> ParseHello(const std::string& text, const std::string& ca_texts = "");

struct CaptureSocket {
  CaptureKind kind = CaptureKind::kTcp;
  uint16_t port = 0;
  UniqueFd fd;
};
// Step 3: every batch of {"capture":[...],"last":...} with its SCM_RIGHTS fds, until "last".
Result<std::vector<CaptureSocket>> ReceiveCaptureSockets(int control_fd);

// Steps 1b (inject rules only: the run CA's certificate), 2, 4 and 6: one datagram each.
Result<void> SendRunCa(int control_fd, const std::string& ca_cert_pem);
Result<void> SendReady(int control_fd);
Result<void> SendError(int control_fd, const std::string& why);
Result<void> SendServing(int control_fd);
Result<void> SendSummary(int control_fd, const RunSummary& summary);
std::string SummaryMessage(const RunSummary& summary);

// Step 5 while serving: calls `on_stop` for {"stop":true}, `on_hangup` on EOF, an error or any
// other message (netd then exits at once).
class ControlWatcher {
 public:
  ControlWatcher(boost::asio::io_context& io, int control_fd) : descriptor_(io, control_fd) {}
  // The control socket stays open: the summary goes out on it after the watcher is gone.
  ~ControlWatcher() { descriptor_.release(); }
  ControlWatcher(const ControlWatcher&) = delete;
  ControlWatcher& operator=(const ControlWatcher&) = delete;
  void Start(std::function<void()> on_stop, std::function<void()> on_hangup);

 private:
  void Wait();

  boost::asio::posix::stream_descriptor descriptor_;
  std::function<void()> on_stop_;
  std::function<void()> on_hangup_;
};

}  // namespace sbx::netd
