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

#include "sandbox/error.h"

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
};

// `443` (the default), `22,443`, `8000-8100`, `*`.
struct PortSet {
  bool any = false;
  std::vector<PortRange> ranges;
  bool Contains(uint16_t port) const;
};

enum class HostPatternKind {
  kExactName,  // "pypi.org": that name only
  kSuffix,     // "*.example.com": any name below example.com at any depth, not the apex
  kAddress,    // "203.0.113.0/24", "203.0.113.7", "[2001:db8::/32]", "[2001:db8::1]"
};

struct NetworkRule {
  std::string text;  // the entry as written in the policy (logged as the rule's source)
  HostPatternKind kind = HostPatternKind::kExactName;
  std::string name;  // kExactName: lower-case, no trailing dot; kSuffix: the part after "*."
  IpAddress address;  // kAddress: the network address (host bits zero)
  int prefix_length = 0;  // kAddress: 0..32 (v4) or 0..128 (v6)
  PortSet ports;

  bool MatchesName(std::string_view lower_case_name, uint16_t port) const;
  bool MatchesAddress(const IpAddress& address, uint16_t port) const;
};

// Parses one entry. `field` names it in errors ("network.allow[2]"); the error says what is
// wrong and what to write instead. Rejected: URLs ("http://x"), paths, userinfo, unbracketed
// IPv6 ("2001:db8::1:443"), "*", "**", "*.com" (fewer than two labels after "*."), mid-label
// or non-leading wildcards ("a*.b.com", "a.*.com"), non-LDH or non-ASCII labels (write the
// punycode form), labels over 63 bytes, names over 253 bytes, ports 0 or above 65535,
// reversed ranges, bad prefix lengths.
Result<NetworkRule> ParseNetworkRule(std::string_view entry, const std::string& field);

struct NetworkLimits {
  uint32_t max_connections = 256;                // per run; more are denied (limit_connections)
  uint64_t egress_bytes_max = 1ull << 30;        // bytes sent upstream per run (limit_bytes)
  double connect_timeout_seconds = 10.0;
  double idle_timeout_seconds = 300.0;
};

// The `network` object of a policy when its mode is "allowlist".
struct NetworkAllowlist {
  std::vector<NetworkRule> allow;
  std::vector<NetworkRule> deny;
  std::vector<NetworkRule> allow_private;  // internal addresses these rules cover may be dialled
  NetworkLimits limits;
};

// Why a query or connection was decided as it was. The audit log writes `reason` from the
// fixed list in policies/SCHEMA.md and `rule` as "allow[3]" / "deny[0]".
struct NetworkDecision {
  bool allowed = false;
  std::string rule;    // the matching rule, "" when none matched
  std::string reason;  // "" when allowed; else "deny_rule", "no_rule", "port", ...
};

// A name (DNS query, SNI, Host) on a port. port 0 means "any port": used for DNS, where a name
// gets an answer when some allow rule names it on any port.
NetworkDecision DecideName(const NetworkAllowlist& policy, std::string_view name, uint16_t port);
// An IP literal the code connected to directly.
NetworkDecision DecideAddress(const NetworkAllowlist& policy, const IpAddress& address,
                              uint16_t port);

// Loopback, unspecified (0.0.0.0/8, ::), private (10/8, 172.16/12, 192.168/16, 100.64/10,
// fc00::/7), link-local (169.254/16 incl. cloud metadata, fe80::/10), multicast, broadcast,
// reserved (240/4), the fake range 198.18.0.0/15, and the IPv6 forms that embed IPv4
// (::ffff:0:0/96, ::/96, 64:ff9b::/96, 2002::/16) when the embedded address is internal.
bool IsInternalAddress(const IpAddress& address);
// True when an allow_private rule covers this (address, port).
bool AllowPrivateCovers(const NetworkAllowlist& policy, const IpAddress& address, uint16_t port);

// Lower-cases a DNS name and strips one trailing dot; nullopt if it is not a valid LDH name
// (labels of [a-z0-9-_], 1..63 bytes, total <= 253). Used for queries, SNI and Host alike.
std::optional<std::string> NormalizeHostName(std::string_view name);

}  // namespace sbx
