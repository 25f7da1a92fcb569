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

// How much connection tracking the redirect's batch leaves. The NAT makes the kernel track
// every flow of the namespace, and conntrack entries are kernel memory no cgroup is charged
// for, up to nf_conntrack_max (262,144 here; read-only outside the host's namespace) per
// namespace, each held for up to its protocol's timeout: code sending UDP to 20,000 addresses
// made 20,000 entries in 0.3 s. Only TCP needs tracking (netd reads a redirected connection's
// original destination from it; its replies are translated back by it). And a TCP entry
// outlives its connection by its state's timeout (TIME_WAIT 120 s, an unanswered SYN 120 s,
// after a reset 10 s), so connecting and closing in a loop held one entry per connection for
// minutes: the batch gives this namespace's TCP entries seconds in those states instead
// (kTcpShortLived), through a ct timeout object; open and half-closed connections keep the
// defaults, since their entries carry the redirect's NAT for as long as they last.
enum class Tracking {
  kTcpShortLived,  // notrack for all but TCP, TCP's closed states short-lived (what runs use)
  kTcp,            // notrack for all but TCP (a kernel without ct timeout objects)
  kEverything,     // the redirect alone, every flow tracked (a kernel without notrack)
};

// One netlink batch (one transaction: all of it or nothing) that redirects TCP to any
// non-loopback IPv4 address, and with `with_ipv6` IPv6 too, to `to_port`: per family a table,
// a nat chain on the output hook and its rule, and per `tracking` a raw-priority chain whose
// rule exempts all but TCP from conntrack and a ct timeout object that the nat chain sets on
// every new TCP connection, loopback ones included.
NetfilterBatch BuildRedirectBatch(bool with_ipv6, uint16_t to_port,
                                  Tracking tracking = Tracking::kTcpShortLived);

// What a child installs, in order of preference (a kernel refuses a transaction whole when it
// lacks one of its expressions or objects, and nothing of it is installed).
struct RedirectBatches {
  NetfilterBatch short_lived;    // Tracking::kTcpShortLived
  NetfilterBatch untracking;     // Tracking::kTcp: no ct timeout objects (CONFIG_NF_CONNTRACK_TIMEOUT)
  NetfilterBatch redirect_only;  // Tracking::kEverything: no notrack (nft_ct)
};
RedirectBatches BuildRedirectBatches(bool with_ipv6, uint16_t to_port);

struct NetfilterOutcome {
  int err = 0;  // 0: all acknowledged; else an errno (EPROTO for a short or malformed answer)
  // The kernel refused the batch (or has no nfnetlink): certainly nothing was installed. An
  // error without it (the answers could not be read) leaves the state unknown.
  bool rejected = false;
  Tracking tracking = Tracking::kTcpShortLived;  // InstallRedirect: the batch that was tried last
};
// Child: installs the first of `batches` the kernel accepts (a refused one installs nothing);
// the outcome is the last attempt's, and its `tracking` says which that was. Async-signal-safe.
NetfilterOutcome InstallRedirect(const RedirectBatches& batches);

}  // namespace sbx
