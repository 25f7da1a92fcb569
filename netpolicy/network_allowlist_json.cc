// The allowlist in JSON: read strictly (from a policy's network object or from the runner),
// checked as a whole, and written for sbx-netd.
#include "netpolicy/network_allowlist_json.h"

#include "base/range_check.h"
#include "netpolicy/netd_protocol.h"
#include "netpolicy/policy_json.h"

namespace sbx {
namespace {

using policy_json::CheckKeys;
using policy_json::FieldError;
using policy_json::json;

struct RuleList {
  const char* key;
  std::vector<NetworkRule> NetworkAllowlist::*rules;
  DefaultPorts default_ports;
};
constexpr RuleList kRuleLists[] = {
    {"allow", &NetworkAllowlist::allow, DefaultPorts::kHttps},
    {"deny", &NetworkAllowlist::deny, DefaultPorts::kAll},
    {"allow_private", &NetworkAllowlist::allow_private, DefaultPorts::kHttps},
};

constexpr std::pair<const char*, std::vector<std::string> NetworkAllowlist::*> kCaFileLists[] = {
    {"extra_ca_files", &NetworkAllowlist::extra_ca_files},
    {"upstream_ca_files", &NetworkAllowlist::upstream_ca_files},
};

Result<void> ReadRules(const std::string& field, const json& list, DefaultPorts default_ports,
                       std::vector<NetworkRule>& out) {
  if (!list.is_array()) return FieldError(field, "a list of \"host[:ports]\" strings", list);
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string item = field + "[" + std::to_string(i) + "]";
    if (!list[i].is_string()) return FieldError(item, "a string like \"pypi.org:443\"", list[i]);
    SBX_ASSIGN_OR_RETURN(auto rule,
                         ParseNetworkRule(list[i].get<std::string>(), item, default_ports));
    out.push_back(std::move(rule));
  }
  return Ok{};
}

Result<void> ReadLimits(const json& limits, NetworkLimits& out) {
  const std::string where = "network.limits";
  if (!limits.is_object()) return FieldError(where, "an object", limits);
  SBX_TRY(CheckKeys(where, limits,
                    {"max_connections", "egress_bytes", "connect_timeout", "idle_timeout"}));
  for (const auto& [key, value] : limits.items()) {
    const std::string field = where + "." + key;
    if (key == "max_connections") {
      SBX_ASSIGN_OR_RETURN(auto count, policy_json::Count32Field(field, value));
      out.max_connections = count;
    } else if (key == "egress_bytes") {
      SBX_ASSIGN_OR_RETURN(auto size, policy_json::SizeField(field, value));
      out.egress_bytes_max = size;
    } else {
      SBX_ASSIGN_OR_RETURN(auto seconds, policy_json::SecondsField(field, value));
      (key == "connect_timeout" ? out.connect_timeout_seconds : out.idle_timeout_seconds) =
          seconds;
    }
  }
  return Ok{};
}

}  // namespace

namespace policy_json {

Result<void> ReadNetworkAllowlist(const json& object, NetworkAllowlist& out) {
  for (const RuleList& list : kRuleLists) {
    if (object.contains(list.key)) {
      SBX_TRY(ReadRules(std::string("network.") + list.key, object[list.key], list.default_ports,
                        out.*list.rules));
    }
  }
  if (object.contains("limits")) SBX_TRY(ReadLimits(object["limits"], out.limits));
  if (object.contains("inject")) SBX_TRY(ReadInjectRules(object["inject"], out.inject));
  if (object.contains("proxy_env")) {
    const json& proxy_env = object["proxy_env"];
    if (!proxy_env.is_boolean()) {
      return FieldError("network.proxy_env",
                        "true or false (true serves an HTTP proxy at http://127.0.0.1:3128 "
                        "and sets HTTP_PROXY/HTTPS_PROXY)",
                        proxy_env);
    }
    out.proxy_env = proxy_env.get<bool>();
  }
  for (const auto& [key, files] : kCaFileLists) {
    if (object.contains(key)) {
      SBX_TRY(ReadCaFiles(std::string("network.") + key, object[key], out.*files));
    }
  }
  return Ok{};
}

}  // namespace policy_json

std::string NetworkAllowlistToJson(const NetworkAllowlist& allowlist) {
  json out = json::object();
  for (const RuleList& list : kRuleLists) {
    json texts = json::array();
    for (const NetworkRule& rule : allowlist.*list.rules) texts.push_back(rule.text);
    out[list.key] = std::move(texts);
  }
  const NetworkLimits& limits = allowlist.limits;
  out["limits"] = {{"max_connections", limits.max_connections},
                   {"egress_bytes", limits.egress_bytes_max},
                   {"connect_timeout", limits.connect_timeout_seconds},
                   {"idle_timeout", limits.idle_timeout_seconds}};
  json inject = json::array();
  for (const InjectRule& rule : allowlist.inject) {
    json entry = {{"name", rule.name},     {"hosts", rule.hosts},
                  {"header", rule.header}, {"format", rule.format},
                  {"secret_from", rule.secret_from}};
    if (!rule.sandbox_placeholder_env.empty()) {
      entry["sandbox_placeholder_env"] = rule.sandbox_placeholder_env;
    }
    inject.push_back(std::move(entry));
  }
  out["inject"] = std::move(inject);
  for (const auto& [key, files] : kCaFileLists) out[key] = allowlist.*files;
  out["proxy_env"] = allowlist.proxy_env;
  return out.dump();
}

Result<NetworkAllowlist> ParseNetworkAllowlistJson(const std::string& text) {
  SBX_ASSIGN_OR_RETURN(auto root, policy_json::ParseStrict(text, "network allowlist"));
  if (!root.is_object()) return FieldError("network", "an object", root);
  SBX_TRY(CheckKeys("network", root,
                    {"allow", "deny", "allow_private", "limits", "inject", "extra_ca_files",
                     "upstream_ca_files", "proxy_env"}));
  NetworkAllowlist allowlist;
  SBX_TRY(policy_json::ReadNetworkAllowlist(root, allowlist));
  SBX_TRY(ValidateNetworkAllowlist(allowlist));
  return allowlist;
}

Result<void> ValidateNetworkAllowlist(const NetworkAllowlist& allowlist) {
  using Ranges = NetworkLimitRanges;
  for (const auto& [key, rules] :
       {std::pair{"allow", &allowlist.allow}, std::pair{"deny", &allowlist.deny},
        std::pair{"allow_private", &allowlist.allow_private}}) {
    if (rules->size() > Ranges::kMaxRules) {
      return InvalidInput(std::string("network.") + key + ": " + std::to_string(rules->size()) +
                          " rules; at most 1024");
    }
  }
  for (size_t i = 0; i < allowlist.allow_private.size(); ++i) {
    const NetworkRule& rule = allowlist.allow_private[i];
    if (rule.kind != HostPatternKind::kAddress) {
      return InvalidInput(
          "network.allow_private[" + std::to_string(i) + "]: \"" + rule.text +
          "\": allow_private takes IP addresses and CIDRs (like \"10.20.0.0/16:8443\"), not "
          "names; list the name in allow and the internal addresses it resolves to here");
    }
  }
  const NetworkLimits& limits = allowlist.limits;
  SBX_TRY(CheckCount("network.limits.max_connections", limits.max_connections,
                     Ranges::kMinConnections, Ranges::kMaxConnections));
  SBX_TRY(CheckSize("network.limits.egress_bytes", limits.egress_bytes_max, Ranges::kMinEgress,
                    Ranges::kMaxEgress, "bytes sent upstream per run"));
  SBX_TRY(CheckSeconds("network.limits.connect_timeout", limits.connect_timeout_seconds,
                       Ranges::kMinConnectTimeout, Ranges::kMaxConnectTimeout));
  SBX_TRY(CheckSeconds("network.limits.idle_timeout", limits.idle_timeout_seconds,
                       Ranges::kMinIdleTimeout, Ranges::kMaxIdleTimeout));
  SBX_TRY(CheckCapturePorts(allowlist, "network"));
  SBX_TRY(ValidateInjectRules(allowlist));
  // sbx-netd receives the allowlist in one control message, next to a small envelope.
  const size_t json_bytes = NetworkAllowlistToJson(allowlist).size();
  if (json_bytes > kNetdMaxMessage - kNetdEnvelopeBytes) {
    return InvalidInput("network: the rules take " + std::to_string(json_bytes) +
                        " bytes as JSON; at most " +
                        std::to_string(kNetdMaxMessage - kNetdEnvelopeBytes) +
                        " fit the message to sbx-netd (use fewer rules, or *.suffix rules)");
  }
  return Ok{};
}

}  // namespace sbx
