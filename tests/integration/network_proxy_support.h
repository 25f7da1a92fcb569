// What the proxy_env tests share (network_proxy_env*_test.cc): the policy that turns the proxy
// on, and the checks of its refusal page and of the audit records it writes.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/integration/network_audit.h"

namespace sbx::testing {

// An allowlist of `allow` with "proxy_env": true.
nlohmann::json ProxyPolicy(const std::vector<std::string>& allow);

// The records of `match` that came through the proxy (and only those exist for it).
void ExpectViaProxy(const AuditLog& log, const AuditMatch& match);

// The proxy's refusal page: the status, and the reason in its body.
void ExpectProxyRefusal(const nlohmann::json& probe, int status, const std::string& reason);

}  // namespace sbx::testing
