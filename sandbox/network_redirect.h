// All-port capture for the network allowlist: an nf_tables NAT rule in the sandbox's network
// namespace that redirects every TCP connection to a non-loopback destination to one listener.
//
// Per-port listeners (network_capture.h) cannot cover `*` ports (65,535 sockets), leave every
// other port unlogged, and hold their ports on every address of the sandbox, loopback too (a
// dev server on 8000 failed with EADDRINUSE). Instead the sandbox child, while it holds its
// namespace's CAP_NET_ADMIN, installs in its own namespace (never the host's)
// `tcp daddr != loopback -> redirect to :kRedirectCapturePort`, IPv4 and IPv6. sbx-netd reads
// each connection's original destination from conntrack (SO_ORIGINAL_DST) and decides it
// like any captured connection, so every TCP attempt, on any port, is logged. Loopback stays
// out so that servers the code starts for itself still work.
//
// The messages are nf_tables netlink (no nft binary, no libnftables): built by the runner,
// sent by the child, which must not allocate.
#pragma once

#include <cstdint>
#include <vector>

namespace sbx {

// Where redirected connections arrive. Below 1024: the program (no capabilities) cannot bind
// it first; 1 (tcpmux) is unused in practice.
inline constexpr uint16_t kRedirectCapturePort = 1;

// One netlink batch (one transaction: all of it or nothing) that redirects TCP to any
// non-loopback IPv4 address, and with `with_ipv6` IPv6 too, to `to_port`: per family a table,
// a nat chain on the output hook and a rule, each asking for an acknowledgement.
std::vector<uint8_t> BuildRedirectBatch(bool with_ipv6, uint16_t to_port);
inline constexpr int RedirectBatchAcks(bool with_ipv6) { return with_ipv6 ? 6 : 3; }

struct NetfilterOutcome {
  int err = 0;  // 0: all acknowledged; else an errno (EPROTO for a short or malformed answer)
  // The kernel refused the batch (or has no nfnetlink): certainly nothing was installed. An
  // error without it (the answers could not be read) leaves the state unknown.
  bool rejected = false;
};
// Child: sends `batch` on a NETLINK_NETFILTER socket and checks that all `acks` came back
// without error. Async-signal-safe.
NetfilterOutcome InstallNetfilterBatch(const std::vector<uint8_t>& batch, int acks);

}  // namespace sbx
