// The network allowlist's rules: the `host[:ports]` grammar, matching a name or an address
// against allow/deny/allow_private, and the internal-address classifier.
//
// Pure data and pure functions: the policy loader builds a NetworkAllowlist, sbx-netd (the
// helper that enforces it outside the sandbox) decides each DNS query and connection with it.
// Deny wins over allow. Name rules match names only; address rules match IP literals only.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"

namespace sbx {

// An IPv4 or IPv6 address in network byte order. IPv4 uses bytes[0..3].
struct IpAddress {
  bool v6 = false;
  std::array<uint8_t, 16> bytes{};

  static std::optional<IpAddress> Parse(std::string_view text);  // "1.2.3.4", "2001:db8::1"
  std::string ToString() const;  // canonical (inet_ntop) form, no brackets
  bool operator==(const IpAddress&) const = default;
};

struct PortRange {
  uint16_t first = 0;
  uint16_t last = 0;
  bool operator==(const PortRange&) const = default;
};

// `443` (the default), `22,443`, `8000-8100`, `*`.
struct PortSet {
  bool any = false;
  std::vector<PortRange> ranges;
  bool Contains(uint16_t port) const;  // false for port 0
  bool operator==(const PortSet&) const = default;
};

enum class HostPatternKind {
  kExactName,  // "pypi.org": that name only
  kSuffix,     // "*.example.com": any name below example.com at any depth, not the apex
  kAddress,    // "203.0.113.0/24", "203.0.113.7", "[2001:db8::/32]", "[2001:db8::1]"
};

struct NetworkRule {
  std::string text;  // the entry as written in the policy (logged as the rule's source)
  HostPatternKind kind = HostPatternKind::kExactName;
  std::string name;       // kExactName: lower-case, no trailing dot; kSuffix: the part after "*."
  IpAddress address;      // kAddress: the network address (host bits zero)
  int prefix_length = 0;  // kAddress: 0..32 (v4) or 0..128 (v6)
  PortSet ports;

  // Port 0 is never a destination and matches no rule. An IPv4-mapped address
  // (::ffff:a.b.c.d, what a dual-stack listener reports for an IPv4 peer) matches IPv4 rules.
  bool MatchesName(std::string_view lower_case_name, uint16_t port) const;
  bool MatchesAddress(const IpAddress& address, uint16_t port) const;
  bool operator==(const NetworkRule&) const = default;
};

// What an entry without ":ports" means: 443 in allow and allow_private rules; every port in
// deny rules, so that a denied host stays denied on the ports some allow rule opens.
enum class DefaultPorts { kHttps, kAll };

// Parses one entry. `field` names it in errors ("network.allow[2]"); the error says what is
// wrong and what to write instead. Rejected: URLs ("http://x"), paths, userinfo, unbracketed
// IPv6 ("2001:db8::1:443"), "*", "**", "*.com" (fewer than two labels after "*."), mid-label
// or non-leading wildcards ("a*.b.com", "a.*.com"), non-LDH or non-ASCII labels (write the
// punycode form), labels over 63 bytes, names over 253 bytes, ports 0 or above 65535,
// reversed ranges, bad prefix lengths, CIDRs with host bits set, and names whose last label is
// numeric (a mistyped IPv4 address). An IPv6 rule inside ::ffff:0:0/96 becomes the IPv4 rule.
Result<NetworkRule> ParseNetworkRule(std::string_view entry, const std::string& field,
                                     DefaultPorts default_ports = DefaultPorts::kHttps);

struct NetworkLimits {
  uint32_t max_connections = 4096;  // TCP connections per run; more are denied (limit_connections)
  uint64_t egress_bytes_max = 1ull << 30;  // bytes sent upstream per run (limit_bytes)
  double connect_timeout_seconds = 10.0;
  double idle_timeout_seconds = 300.0;
  bool operator==(const NetworkLimits&) const = default;
};

// One `inject` entry (policies/SCHEMA.md): on a TLS connection to one of `hosts` on port 443,
// sbx-netd terminates the sandbox's TLS with a certificate from the run's CA, verifies the
// real server, removes every `header` field the client sent and sets `header: <format with
// {secret} replaced>` on the upstream leg. The secret itself never enters the sandbox; the
// sandbox may get a random placeholder in `sandbox_placeholder_env` so SDKs that insist on a
// key start. The runner resolves `secret_from` at run start (sbx-netd gets the value over its
// control socket, never argv or the environment).
struct InjectRule {
  std::string name;                     // a label for logs ("openai"): [a-z0-9_-]{1,32}
  std::vector<std::string> hosts;       // exact names (normalized), each allowed on 443
  std::string header;                   // an HTTP field-name token ("Authorization")
  std::string format = "{secret}";      // contains "{secret}" exactly once, no CR/LF
  std::string secret_from;              // "env:NAME" (sbx's environment) or "file:/abs/path"
  std::string sandbox_placeholder_env;  // "" or an environment variable name
  bool operator==(const InjectRule&) const = default;
};

// The `network` object of a policy when its mode is "allowlist".
struct NetworkAllowlist {
  std::vector<NetworkRule> allow;
  std::vector<NetworkRule> deny;
  // Address rules only (IP or CIDR). They allow like allow rules, and an internal address they
  // cover may be dialled (whether it came as an IP literal or from resolving an allowed name).
  std::vector<NetworkRule> allow_private;
  NetworkLimits limits;
  std::vector<InjectRule> inject;
  // PEM files of the runner's host: CAs the sandbox trusts besides the image's bundle
  // (extra_ca_files) and CAs sbx-netd trusts besides the host's store when it verifies an
  // inject host's real server (upstream_ca_files: a corporate or test CA).
  std::vector<std::string> extra_ca_files;
  std::vector<std::string> upstream_ca_files;
  // The opt-in HTTP proxy for tools that ignore transparent capture (network_proxy_env.h).
  bool proxy_env = false;
  bool operator==(const NetworkAllowlist&) const = default;
};

// Why a query or connection was decided as it was. The audit log writes `reason` from the
// fixed list in policies/SCHEMA.md and `rule` as "allow[3]" / "deny[0]".
struct NetworkDecision {
  bool allowed = false;
  std::string rule;    // the matching rule, "" when none matched (for "port": the rule that
                       // names the host on other ports)
  std::string reason;  // "" when allowed; else "deny_rule", "no_rule", "port", ...
};

// A connection to a name (SNI, Host, the name behind a fake address) on `port`; the name is
// normalized here (NormalizeHostName), and an invalid name is denied "no_rule". Port 0 is
// never a valid destination: denied "port" whatever the rules say.
NetworkDecision DecideName(const NetworkAllowlist& policy, std::string_view name, uint16_t port);
// A DNS query for a name: answered when some allow rule names it on a port that no deny rule
// for it covers (the port is decided when the connection comes, by DecideName).
NetworkDecision DecideNameQuery(const NetworkAllowlist& policy, std::string_view name);
// An IP literal the code connected to directly: deny rules, then allow, then allow_private
// rules; port 0 is denied "port" as in DecideName. An internal address that no allow_private
// rule covers is denied "internal_address" even when an allow rule matches it.
NetworkDecision DecideAddress(const NetworkAllowlist& policy, const IpAddress& address,
                              uint16_t port);

// Loopback, unspecified (0.0.0.0/8, ::), private (10/8, 172.16/12, 192.168/16, 100.64/10,
// fc00::/7), link-local (169.254/16 incl. cloud metadata, fe80::/10), multicast, broadcast,
// reserved (240/4), the fake range 198.18.0.0/15, and the IPv6 forms that embed IPv4
// (::ffff:0:0/96, ::/96, 64:ff9b::/96, 2002::/16) when the embedded address is internal.
// Also fec0::/10 (deprecated site-local) and 64:ff9b:1::/48 (local-use NAT64). The
// documentation ranges (192.0.2/24, 198.51.100/24, 203.0.113/24, 2001:db8::/32) are not
// internal: the tests use them as "the internet".
bool IsInternalAddress(const IpAddress& address);
// The IPv4 address inside ::ffff:0:0/96, ::/96, 64:ff9b::/96 or 2002::/16; nullopt otherwise.
std::optional<IpAddress> EmbeddedIpv4(const IpAddress& address);
// True when an allow_private rule covers this (address, port).
bool AllowPrivateCovers(const NetworkAllowlist& policy, const IpAddress& address, uint16_t port);

// Lower-cases a DNS name and strips one trailing dot; nullopt if it is not a valid LDH name
// (labels of [a-z0-9-_], 1..63 bytes, total <= 253). Used for queries, SNI and Host alike.
std::optional<std::string> NormalizeHostName(std::string_view name);

// A `*` port in an allow or allow_private rule: only the all-port redirect
// (sandbox/net/network_redirect.h) can capture it, so the run needs it (no per-port fallback).
bool CapturesAllPorts(const NetworkAllowlist& policy);
// The per-port fallback of capture (a kernel without nf_tables NAT): the TCP ports the sandbox
// then listens on for sbx-netd, sorted and unique: 80, 443, the audit-only
// ports (connections there are logged and refused unless a rule allows them) and every port of
// every allow and allow_private rule; empty when CapturesAllPorts. DNS (53) is captured
// separately and is not listed.
inline constexpr uint16_t kAuditOnlyPorts[] = {22, 25, 853, 3306, 5432, 6379, 8000, 8080, 8443};
inline constexpr size_t kMaxCapturePorts = 512;
std::vector<uint16_t> CapturePorts(const NetworkAllowlist& policy);
// Per-port capture needs one listening socket per port: more than kMaxCapturePorts ports in
// all, or port 3128 under proxy_env, is an error naming the rule ("<field>.allow[2]"). With
// a `*` port (CapturesAllPorts) neither applies.
Result<void> CheckCapturePorts(const NetworkAllowlist& policy, const std::string& field);

}  // namespace sbx
