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

// One netlink batch (begin, table, nat chain on the output hook, rule, end) for `family`
// (AF_INET or AF_INET6) that redirects TCP to any non-loopback address to `to_port`.
// Three of its messages ask for an acknowledgement.
std::vector<uint8_t> BuildRedirectBatch(int family, uint16_t to_port);
inline constexpr int kRedirectBatchAcks = 3;

// Child: sends `batch` on a NETLINK_NETFILTER socket and checks that all `acks` came back
// without error. 0 or an errno (EPROTO for a short or malformed answer). Async-signal-safe.
int InstallNetfilterBatch(const std::vector<uint8_t>& batch, int acks);

}  // namespace sbx
