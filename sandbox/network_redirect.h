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

// Netlink messages for one transaction and how many acknowledgements they ask for.
struct NetfilterBatch {
  std::vector<uint8_t> bytes;
  int acks = 0;
};

// What the redirect's batch also exempts from connection tracking. The NAT makes the kernel
// track every flow of the namespace, and conntrack entries are kernel memory no cgroup is
// charged for, up to nf_conntrack_max (262,144 here; read-only outside the host's namespace)
// per namespace, each held for up to its protocol's timeout: code sending UDP to 20,000
// addresses made 20,000 entries in 0.3 s. Only TCP needs tracking (netd reads a redirected
// connection's original destination from it; its replies are translated back by it).
enum class Untracked {
  kAllButTcp,  // notrack for every protocol but TCP (what runs use)
  kNothing,    // the redirect alone, every flow tracked (the tests' control)
};

// One netlink batch (one transaction: all of it or nothing) that redirects TCP to any
// non-loopback IPv4 address, and with `with_ipv6` IPv6 too, to `to_port`: per family a table,
// a nat chain on the output hook and its rule, and (kAllButTcp) a raw-priority chain whose
// rule exempts all but TCP from conntrack.
NetfilterBatch BuildRedirectBatch(bool with_ipv6, uint16_t to_port,
                                  Untracked untracked = Untracked::kAllButTcp);

// What a child installs, in order of preference: the redirect with its notrack chain, and the
// redirect alone for a kernel whose nf_tables lacks the notrack expression (nft_ct).
struct RedirectBatches {
  NetfilterBatch untracking;
  NetfilterBatch redirect_only;
};
RedirectBatches BuildRedirectBatches(bool with_ipv6, uint16_t to_port);

struct NetfilterOutcome {
  int err = 0;  // 0: all acknowledged; else an errno (EPROTO for a short or malformed answer)
  // The kernel refused the batch (or has no nfnetlink): certainly nothing was installed. An
  // error without it (the answers could not be read) leaves the state unknown.
  bool rejected = false;
};
// Child: installs `batches.untracking`, or where the kernel refused it (nothing installed),
// `batches.redirect_only`; the outcome is the last attempt's. Async-signal-safe.
NetfilterOutcome InstallRedirect(const RedirectBatches& batches);

}  // namespace sbx
