// TEMPORARY: a minimal stand-in for the allowlist JSON functions declared in sandbox/policy.h
// (branch netrules, sandbox/policy_network.cc), so sbx-netd and its tests link before that
// branch's policy part is merged. Delete this file then.
#include <nlohmann/json.hpp>

#include "sandbox/network_rules.h"
#include "sandbox/policy.h"

namespace sbx {

Result<NetworkAllowlist> ParseNetworkAllowlistJson(const std::string& text) {
  NetworkAllowlist allowlist;
  try {
    const nlohmann::json json = nlohmann::json::parse(text);
    for (const char* key : {"allow", "deny", "allow_private"}) {
      std::vector<NetworkRule>& rules = std::string(key) == "allow"  ? allowlist.allow
                                        : std::string(key) == "deny" ? allowlist.deny
                                                                     : allowlist.allow_private;
      for (const auto& entry : json.value(key, nlohmann::json::array())) {
        auto rule = ParseNetworkRule(
            entry.get<std::string>(), key,
            std::string(key) == "deny" ? DefaultPorts::kAll : DefaultPorts::kHttps);
        if (!rule) return rule.error();
        rules.push_back(*rule);
      }
    }
    const nlohmann::json limits = json.value("limits", nlohmann::json::object());
    allowlist.limits.max_connections = limits.value("max_connections", 256u);
    allowlist.limits.egress_bytes_max = limits.value("egress_bytes_max", uint64_t{1} << 30);
    allowlist.limits.connect_timeout_seconds = limits.value("connect_timeout_seconds", 10.0);
    allowlist.limits.idle_timeout_seconds = limits.value("idle_timeout_seconds", 300.0);
  } catch (const std::exception& error) {
    return InvalidInput(std::string("network: ") + error.what());
  }
  return allowlist;
}

std::string NetworkAllowlistToJson(const NetworkAllowlist& allowlist) {
  nlohmann::json json;
  auto texts = [](const std::vector<NetworkRule>& rules) {
    nlohmann::json out = nlohmann::json::array();
    for (const NetworkRule& rule : rules) out.push_back(rule.text);
    return out;
  };
  json["allow"] = texts(allowlist.allow);
  json["deny"] = texts(allowlist.deny);
  json["allow_private"] = texts(allowlist.allow_private);
  json["limits"] = {{"max_connections", allowlist.limits.max_connections},
                    {"egress_bytes_max", allowlist.limits.egress_bytes_max},
                    {"connect_timeout_seconds", allowlist.limits.connect_timeout_seconds},
                    {"idle_timeout_seconds", allowlist.limits.idle_timeout_seconds}};
  return json.dump();
}

}  // namespace sbx
