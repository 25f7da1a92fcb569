// netd's reading of network.inject in the first control message, until the policy code's
// ParseNetworkAllowlistJson reads it itself (then this file goes, and control.cc passes the
// whole network object through). The entries are the policy's (policies/SCHEMA.md): netd uses
// name, hosts and header; format, secret_from and sandbox_placeholder_env are checked to be
// strings and otherwise ignored (the runner resolved them into the "tls" object).
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "sandbox/error.h"
#include "sandbox/network_rules.h"

namespace sbx::netd {

// Strict; errors name the field ("network.inject[0].hosts[1]").
Result<std::vector<InjectRule>> ReadInjectRulesJson(const nlohmann::json& list);

// Every inject host must be allowed on 443 by `policy`, else an error naming it: netd would
// otherwise hold a secret for a host it never lets the sandbox reach, or worse, one it denies.
Result<void> CheckInjectHostsAllowed(const NetworkAllowlist& policy);

}  // namespace sbx::netd
