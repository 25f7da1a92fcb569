// Transparent capture for the network allowlist, the sandbox child's side.
//
// Inside the sandbox's fresh network namespace every destination is made local ("local
// default dev lo" in the local table, IPv4 and IPv6), so a connect() to any address lands on
// a socket of this namespace whatever the code does: no proxy variables, no cooperation. The
// child binds those sockets while it still holds its namespace capabilities (ports below
// 1024 need them), hands them to the runner over a dedicated socket, and closes its copies:
// the program never holds them. The runner passes them to sbx-netd, which serves them from
// the host's network namespace (netd_protocol.h). Only the runner prepares memory;
// the child allocates nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "netpolicy/netd_protocol.h"
#include "sandbox/launch/child_report.h"
#include "sandbox/net/network_redirect.h"

namespace sbx {

// How TCP is captured (network_redirect.h): all ports through the nf_tables redirect, or one
// listener per port.
enum class RedirectMode {
  kOff,        // per-port listeners only
  kPreferred,  // the redirect; per-port listeners when the kernel has no nf_tables NAT
  kRequired,   // the redirect or no run (a `*` port in the policy)
};

// What the child binds, in the order the fds are sent: the nf_tables redirect, one dual-stack
// listener on kRedirectCapturePort and one on kDnsPort (DNS over TCP to loopback), or
// (redirect off or unavailable) one dual-stack TCP listener per port of tcp_ports; the proxy's
// TCP listener on 127.0.0.1:proxy_port (proxy_env only), then UDP 53 on 0.0.0.0 and (when the
// kernel has IPv6) on [::], then the UDP audit taps, IPv4 and (with IPv6) IPv6
// (network_udp_tap.h).
struct CapturePlan {
  bool enabled = false;
  std::vector<uint16_t> tcp_ports;
  RedirectMode redirect = RedirectMode::kOff;
  // The redirect's netlink batches, built by the runner (network_redirect.h): IPv4 and IPv6
  // in one transaction, and IPv4 alone for a kernel without IPv6.
  RedirectBatches redirect_both, redirect_v4_only;
  uint16_t proxy_port = 0;  // 0: no proxy listener
  int send_fd = -1;  // the child's end of the capture socketpair (SOCK_SEQPACKET)
  // Room for the fds, sized by the runner (the child must not allocate).
  mutable std::vector<int> fds;

  size_t SocketCount() const {
    return tcp_ports.size() + (redirect != RedirectMode::kOff ? 2 : 0) +
           (proxy_port != 0 ? 1 : 0) + 2 + 2;  // UDP 53 and the UDP tap, per family
  }
};

// `tcp_ports` are the fallback of kPreferred; with kRequired they are not used.
CapturePlan PrepareCapturePlan(const std::vector<uint16_t>& tcp_ports, RedirectMode redirect,
                               uint16_t proxy_port, int send_fd);

// Child, in its new network namespace with lo up and its namespace capabilities: adds the
// local default routes (and the redirect), binds and sends every capture socket, closes them. 0 or an errno,
// with *failed_step naming what failed. Async-signal-safe.
int SetUpCaptureInChild(const CapturePlan& plan, ChildStep* failed_step);

// One socket the runner received, matched with what it is.
struct CapturedSocket {
  CaptureKind kind = CaptureKind::kTcp;
  uint16_t port = 0;
  int fd = -1;  // owned by the receiver
  Tracking tracking = Tracking::kTcpShortLived;  // kRedirect: what its batch left tracked
};

// Runner: receives the child's sockets from `receive_fd` within `timeout_ms`. An empty
// result means the child sent nothing (it failed setup or died; its report says why), or not
// a whole set of one of the plan's modes. One kRedirect socket among them says that every
// TCP port is captured. The fds are CLOEXEC.
std::vector<CapturedSocket> ReceiveCapturedSockets(const CapturePlan& plan, int receive_fd,
                                                   int timeout_ms);

}  // namespace sbx
