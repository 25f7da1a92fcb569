// The control protocol between the runner (sandbox/net/netd_process.cc) and sbx-netd, the
// helper that enforces a network allowlist from the host's network namespace.
//
// How sbx-netd is started: fork + execve of the sbx-netd binary with argv {"sbx-netd"}, an
// empty environment, stdin and stdout /dev/null, stderr inherited (fatal diagnostics only),
// fd 3 the helper's end of a SOCK_SEQPACKET socketpair (the control socket) and, when the
// run keeps an audit log, fd 4 the log, new and empty, opened O_WRONLY|O_APPEND|O_CLOEXEC by
// the runner (netd appends its records and hashes them as it writes them).
// Every other fd is closed. The helper dies with the runner (PR_SET_PDEATHSIG and EOF on fd 3).
//
// Messages are single SOCK_SEQPACKET datagrams holding one JSON object (at most
// kNetdMaxMessage bytes), in this order:
//  1. runner -> netd  {"v":1,"run":"<run id>","audit_log":true|false,
//                      "network":<NetworkAllowlistToJson(...)>,
//                      "ca_file_sizes":[N, ...],  (only when there are CA files to send, below)
//                      "tls":{...}}            (only when network.inject is not empty)
//     The CA files' texts do not travel in the datagram (a distribution's bundle is ~200 KB):
//     with "ca_file_sizes", the message carries one fd (SCM_RIGHTS), a sealed memfd holding
//     the texts back to back: network.extra_ca_files[0..], then, with inject rules,
//     network.upstream_ca_files[0..]; ca_file_sizes[i] is text i's length, at most
//     kNetdMaxCaFileBytes + 1 (the runner ends each text with a newline), and they add up to
//     the memfd's size. netd reads it with pread (the runner's writes left the shared offset
//     at the end).
//     "tls" is what secret injection needs, resolved by the runner so netd reads no file:
//       {"secrets":[{"value":"Bearer sk-...","placeholder":"sbx-ph-<32 hex>"|""}, ...]}
//     secrets[i] belongs to network.inject[i]: `value` is the whole header value (format with
//     {secret} replaced), `placeholder` what the sandbox's environment holds instead, if any.
//     netd never writes a value or a placeholder to the log, stderr or a reply.
//     The runner links no libcrypto (its static relocations cost every run's start-up): it
//     checks the CA files only for a PEM certificate block, and netd does the X.509 work.
//  1b. netd -> runner {"ca_cert_pem":"..."}   (only when network.inject is not empty)
//                     the run's CA, minted by netd for the inject hosts (src/netd/tls_ca.h)
//                     before it builds its TLS contexts (loading the host's store is slow);
//                     its key never leaves netd. The runner waits for this before cloning
//                     and adds the certificate to the sandbox's trust bundle.
//  2. netd -> runner  {"ready":true}
//     Instead of 1b or 2: {"error":"<why>"} (then netd exits 1), e.g. a CA file that does
//     not parse: "network.extra_ca_files[0]: <path>: certificate 1 of 1 is not valid
//     X.509 (...)"
//  3. runner -> netd  {"capture":[{"proto":"tcp"|"redirect"|"proxy"|"udp","port":N}, ...],
//                      "last":...}
//                     with SCM_RIGHTS carrying exactly those fds, in that order (at most
//                     kNetdMaxFdsPerMessage per message; "last" marks the final batch).
//                     The fds are sockets bound inside the sandbox's network namespace:
//                     TCP ones already listening (dual-stack [::]:port), UDP ones bound
//                     (0.0.0.0:53 and [::]:53 with IPV6_V6ONLY). "redirect" is the
//                     listener that the sandbox's nf_tables NAT sends every non-loopback
//                     TCP connection to: its destination is SO_ORIGINAL_DST
//                     (sandbox/net/network_redirect.h); per-port "tcp" listeners only when the
//                     kernel has no NAT. "proxy" (proxy_env only) is a TCP
//                     listener on 127.0.0.1:port served as an HTTP proxy.
//                     netd serves them at once.
//  4. netd -> runner  {"serving":true}
//  5. runner -> netd  {"stop":true} when the run has ended
//  6. netd -> runner  {"summary":{"dns_queries":N,"allowed":N,"denied":N,
//                      "denied_names":[<= 10 names],"bytes_up":N,"bytes_down":N,
//                      "log_sha256":"<64 hex>"|""}}
//                     log_sha256: of the audit log after netd's last record (its server
//                     stopped), kept as netd wrote it; "" without a log or when the file's
//                     size is not what netd wrote. The runner writes nothing to the log.
//                     Then netd closes every socket and exits 0.
// EOF or an error on the control socket at any point makes netd exit at once. If netd exits
// or its control socket hangs up before step 6, the runner kills the run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace sbx {

// What one capture socket is (step 3's "proto").
// The stub DNS's port, on UDP and TCP (sbx-netd answers TCP 53 itself, never relays it).
inline constexpr uint16_t kDnsPort = 53;

enum class CaptureKind : uint8_t {
  kTcp,       // a listener on `port`: the accepted socket's local address is the destination
  kRedirect,  // the all-port listener: the destination is the connection's SO_ORIGINAL_DST
  kProxy,     // the proxy_env listener (TCP)
  kUdp,       // DNS
  kUdpTap,    // a raw UDP socket: datagrams to non-loopback addresses (network_udp_tap.h)
};
inline constexpr const char* kCaptureKindNames[] = {"tcp", "redirect", "proxy", "udp", "udp_tap"};
inline const char* CaptureKindName(CaptureKind kind) {
  return kCaptureKindNames[static_cast<size_t>(kind)];
}
inline std::optional<CaptureKind> ParseCaptureKind(std::string_view name) {
  for (size_t i = 0; i < std::size(kCaptureKindNames); ++i) {
    if (name == kCaptureKindNames[i]) return static_cast<CaptureKind>(i);
  }
  return std::nullopt;
}

inline constexpr int kNetdControlFd = 3;
inline constexpr int kNetdAuditLogFd = 4;
inline constexpr size_t kNetdMaxMessage = 64 * 1024;
// Room left in the first message for everything but the allowlist:
// {"v":1,"run":"<id>","audit_log":true,"network":...}.
inline constexpr size_t kNetdEnvelopeBytes = 1024;
inline constexpr size_t kNetdMaxFdsPerMessage = 200;  // below the kernel's SCM_MAX_FD (253)
// One CA file of the policy (network.extra_ca_files[i], upstream_ca_files[i]); a bigger one
// refuses the run, naming it. Bundles of whole distributions are ~200 KB.
inline constexpr size_t kNetdMaxCaFileBytes = 1 << 20;

}  // namespace sbx
