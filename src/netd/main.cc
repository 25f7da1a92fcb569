// sbx-netd: enforces a run's network allowlist from the host's network namespace, on sockets
// the sandbox bound inside its own (netpolicy/netd_protocol.h says how it is started
// and spoken to). This file is the order; each step's how lives in its own file.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>

#include <boost/asio/io_context.hpp>

#include "netpolicy/netd_protocol.h"
#include "src/netd/ca_files.h"
#include "src/netd/control.h"
#include "src/netd/hardening.h"
#include "src/netd/host_addresses.h"
#include "src/netd/mitm_context.h"
#include "src/netd/netd_context.h"
#include "src/netd/netd_server.h"

namespace {

using namespace sbx;
using namespace sbx::netd;

// Says why on the control socket (the runner reports it) and on stderr, then fails.
int Fail(const Error& error) {
  (void)SendError(kNetdControlFd, error.ToString());
  std::fprintf(stderr, "sbx-netd: %s\n", error.ToString().c_str());
  return 1;
}

int Serve() {
  // 0. Names are resolved exactly as the policy allows them. An empty LOCALDOMAIN replaces
  //    resolv.conf's `search` and `domain` lines (and the domain of the host name) with no
  //    search list, so glibc never dials "<allowed name>.<search domain>", whatever `ndots`
  //    says (Kubernetes sets 5). Not a trailing dot on each name: that would also skip
  //    /etc/hosts (localhost, --add-host, hostAliases), whose files backend has no dotted form.
  if (setenv("LOCALDOMAIN", "", 1) != 0) {
    return Fail(SysError(ErrorCode::kSetupFailed, "setenv(LOCALDOMAIN)"));
  }
  // 1. Harden before reading anything: no privileges, no new processes, only the syscalls
  //    serving needs.
  if (auto hardened = HardenProcess(); !hardened) return Fail(hardened.error());

  // 2. The run's id, whether it keeps an audit log (fd 4), the allowlist, the texts of its CA
  //    files and, with inject rules, the secrets.
  auto hello = ReceiveHello(kNetdControlFd);
  if (!hello) return Fail(hello.error());
  if (hello->audit_log && fcntl(kNetdAuditLogFd, F_GETFL) < 0) {
    return Fail(SysError(ErrorCode::kInvalidInput, "audit_log is true but fd 4 is not open"));
  }
  //    The CA files are parsed as X.509 here, not in the runner (which links no libcrypto):
  //    a damaged one refuses the run, naming the policy's field.
  if (auto checked = CheckCaFiles("network.extra_ca_files", hello->extra_ca_pems,
                                  hello->allowlist.extra_ca_files);
      !checked) {
    return Fail(checked.error());
  }
  //    With inject rules, the run's CA is minted and its certificate sent at once (the
  //    runner needs it for the sandbox's bundle before it clones; the key stays here), then
  //    the MITM path's TLS contexts are built: a bad upstream CA refuses the start, it does not
  //    surface at the first connection.
  std::shared_ptr<MitmContext> mitm;
  if (hello->tls) {
    if (auto checked = CheckCaFiles("network.upstream_ca_files", hello->tls->upstream_ca_pems,
                                    hello->allowlist.upstream_ca_files);
        !checked) {
      return Fail(checked.error());
    }
    auto ca = MitmContext::MintCa(hello->allowlist.inject, hello->run_id);
    if (!ca) return Fail(ca.error());
    if (auto sent = SendRunCa(kNetdControlFd, ca->cert_pem); !sent) return 1;
    auto created = MitmContext::Create(std::move(*hello->tls), hello->allowlist.inject,
                                       std::move(*ca));
    if (!created) return Fail(created.error());
    mitm = std::move(*created);
  }
  NetdContext context(std::move(hello->allowlist), hello->audit_log ? kNetdAuditLogFd : -1,
                      hello->run_id);
  context.mitm = std::move(mitm);
  //    The host's own addresses, read once in the host's network namespace (netd's own).
  auto host_addresses = ReadHostAddresses();
  if (!host_addresses) return Fail(host_addresses.error());
  context.host_addresses = std::move(*host_addresses);
  if (auto sent = SendReady(kNetdControlFd); !sent) return 1;

  // 3. The capture sockets, served as soon as all have arrived.
  auto captures = ReceiveCaptureSockets(kNetdControlFd);
  if (!captures) return Fail(captures.error());
  // splice(2) into a socket has no MSG_NOSIGNAL: a sandbox that resets a connection netd is
  // writing to would otherwise kill netd, and with it the run.
  if (signal(SIGPIPE, SIG_IGN) == SIG_ERR) {
    return Fail(SysError(ErrorCode::kSetupFailed, "signal(SIGPIPE)"));
  }
  // 4. Serve until "stop" or until the runner hangs up (exit at once: the run is over or the
  //    runner died, and nobody reads a summary).
  bool stopped = false;
  {
    boost::asio::io_context io(1);
    NetdServer server(io, context);
    for (CaptureSocket& capture : *captures) {
      if (auto added = server.AddCapture(capture.kind, capture.port, std::move(capture.fd));
          !added) {
        return Fail(added.error());
      }
    }
    if (auto sent = SendServing(kNetdControlFd); !sent) return 1;
    ControlWatcher watcher(io, kNetdControlFd);
    watcher.Start(
        [&] {
          server.Stop();
          stopped = true;
          io.stop();
        },
        [] { _exit(1); });
    io.run();
  }  // the server, its connections and their pending handlers are gone
  if (!stopped) return 1;  // io.run() ran out of work: never without "stop"

  // 5. The summary, netd's last word: the runner kills netd as soon as it has it. So first the
  //    secrets go (the injected values, placeholders and the run CA's key, wiped by their
  //    owners' destructors), and the log's digest is taken now that no record can follow.
  context.mitm.reset();
  RunSummary summary = context.counters.summary();
  summary.log_sha256 = context.log.Sha256Hex();
  return SendSummary(kNetdControlFd, summary) ? 0 : 1;
}

}  // namespace

int main() {
  try {
    return Serve();
  } catch (const std::exception& error) {
    std::fprintf(stderr, "sbx-netd: %s\n", error.what());
    return 1;
  }
}
