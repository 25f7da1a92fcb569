// The UDP audit taps of the network allowlist: raw UDP sockets in the sandbox's namespace.
//
// UDP is not relayed: with every destination local (network_capture.h), a datagram to any
// address is delivered in the sandbox's own namespace, where nothing but the stub DNS listens,
// and the kernel refuses it (ECONNREFUSED on a connected socket). Listening on every UDP port
// is impossible and a NAT redirect would lose the destination. But the kernel gives a raw
// socket of protocol UDP a copy of every UDP datagram it delivers locally, bound port or not.
// So to log each attempt (QUIC to an allowed name among them) the child opens one per family
// while it holds its namespace's CAP_NET_RAW, with a classic BPF filter that keeps only
// datagrams to a non-loopback destination with neither port 53 (the stub's queries, logged as
// DNS, and its answers). sbx-netd reads them and logs one record per flow (src/netd/
// udp_tap.h). The program never holds them, and cannot open one (no capabilities).
//
// Not a packet socket: closing one waits for an RCU grace period (synchronize_net), which
// would add that wait to the end of every run.
#pragma once

namespace sbx {

// Child, in the sandbox's network namespace with its capabilities: the filtered raw UDP socket
// of `family` (AF_INET: reads give the IP header, then UDP; AF_INET6: reads give the UDP
// header, with the destination in an IPV6_PKTINFO message), or a negative errno.
// Async-signal-safe.
int OpenUdpTapInChild(int family);

}  // namespace sbx
