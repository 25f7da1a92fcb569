// The allowlist as JSON and its checks, the same in sbx and sbx-netd: the policy loader reads a
// policy's "network" object with them (sandbox/policy), the runner writes the allowlist for
// sbx-netd, and sbx-netd reads it back with the same strict rules.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "base/error.h"
#include "netpolicy/network_rules.h"

namespace sbx {

// Ranges of the allowlist's limits (network.limits) and list sizes.
struct NetworkLimitRanges {
  static constexpr uint32_t kMinConnections = 1;
  static constexpr uint32_t kMaxConnections = 1000000;
  static constexpr uint64_t kMinEgress = 1024;
  static constexpr uint64_t kMaxEgress = 1ull << 40;
  static constexpr double kMinConnectTimeout = 0.1;
  static constexpr double kMaxConnectTimeout = 300;
  static constexpr double kMinIdleTimeout = 1;
  static constexpr double kMaxIdleTimeout = 24 * 3600.0;
  static constexpr size_t kMaxRules = 1024;  // per list
};

// Checks an allowlist as a whole: limits in range, allow_private holds address rules only, the
// allow ports can be captured (CheckCapturePorts), and its JSON fits the one message that carries
// it to sbx-netd. Errors name "network.<field>".
Result<void> ValidateNetworkAllowlist(const NetworkAllowlist& allowlist);
// The inject rules against each other and the allow rules: names, hosts and placeholder
// variables unique, every host allowed on port 443 (ValidateNetworkAllowlist calls it).
Result<void> ValidateInjectRules(const NetworkAllowlist& allowlist);

// The allowlist as JSON, for sbx-netd: the policy's network object without "mode", every key
// present, rules as written ({"allow":[...],"deny":[...],"allow_private":[...],"limits":{...},
// "inject":[...],"extra_ca_files":[...],"upstream_ca_files":[...]}). No secret is in it: inject
// rules say where the runner reads each secret, not the secret.
std::string NetworkAllowlistToJson(const NetworkAllowlist& allowlist);
// Its strict inverse (the policy loader's rules for the network object, then
// ValidateNetworkAllowlist): ParseNetworkAllowlistJson(NetworkAllowlistToJson(a)) == a.
Result<NetworkAllowlist> ParseNetworkAllowlistJson(const std::string& text);

}  // namespace sbx
