// The policy's "network" value in JSON: read strictly from a policy, and the allowlist written
// for sbx-netd and read back there.
#include "sandbox/policy/policy.h"
#include "sandbox/policy/policy_json.h"

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

// Keys of the policy's network object that name features this sbx does not have yet. They are
// refused rather than ignored: a policy that asks for path rules must not run without them.
constexpr std::pair<const char*, const char*> kNotImplemented[] = {
    {"http_rules", "HTTP method and path rules are not implemented yet in this sbx"},
};

Result<void> ReadRules(const std::string& field, const json& list, DefaultPorts default_ports,
                       std::vector<NetworkRule>& out) {
  if (!list.is_array()) return FieldError(field, "a list of \"host[:ports]\" strings", list);
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string item = field + "[" + std::to_string(i) + "]";
    if (!list[i].is_string()) return FieldError(item, "a string like \"pypi.org:443\"", list[i]);
    auto rule = ParseNetworkRule(list[i].get<std::string>(), item, default_ports);
    if (!rule) return rule.error();
    out.push_back(std::move(*rule));
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
      auto count = policy_json::Count32Field(field, value);
      if (!count) return count.error();
      out.max_connections = *count;
    } else if (key == "egress_bytes") {
      auto size = policy_json::SizeField(field, value);
      if (!size) return size.error();
      out.egress_bytes_max = *size;
    } else {
      auto seconds = policy_json::SecondsField(field, value);
      if (!seconds) return seconds.error();
      (key == "connect_timeout" ? out.connect_timeout_seconds : out.idle_timeout_seconds) =
          *seconds;
    }
  }
  return Ok{};
}

// The keys an allowlist and the allowlist-mode network object share; the keys are checked.
Result<void> ReadAllowlist(const json& object, NetworkAllowlist& out) {
  for (const RuleList& list : kRuleLists) {
    if (object.contains(list.key)) {
      SBX_TRY(ReadRules(std::string("network.") + list.key, object[list.key], list.default_ports,
                        out.*list.rules));
    }
  }
  if (object.contains("limits")) SBX_TRY(ReadLimits(object["limits"], out.limits));
  if (object.contains("inject")) SBX_TRY(policy_json::ReadInjectRules(object["inject"], out.inject));
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
      SBX_TRY(policy_json::ReadCaFiles(std::string("network.") + key, object[key], out.*files));
    }
  }
  return Ok{};
}

}  // namespace

namespace policy_json {

Result<void> ReadNetworkField(const json& value, Policy& policy) {
  if (value == "none" || value == "host") {
    policy.network = value == "host" ? NetworkMode::kHost : NetworkMode::kNone;
    return Ok{};
  }
  if (value == "allowlist") {
    return InvalidInput(
        "network: \"allowlist\" needs the object form, "
        "{\"mode\": \"allowlist\", \"allow\": [\"pypi.org\", ...]}");
  }
  if (!value.is_object()) {
    return FieldError(
        "network",
        "\"none\", \"host\" or an object like {\"mode\": \"allowlist\", \"allow\": [...]}", value);
  }
  SBX_TRY(CheckKeys(
      "network", value,
      {"mode", "allow", "deny", "allow_private", "limits", "inject", "extra_ca_files",
       "upstream_ca_files", "http_rules", "proxy_env"}));
  for (const auto& [key, why] : kNotImplemented) {
    if (value.contains(key)) {
      return InvalidInput(std::string("network.") + key + ": " + why + "; remove it");
    }
  }
  if (!value.contains("mode"))
    return InvalidInput("network.mode: missing; write \"allowlist\", \"none\" or \"host\"");
  const json& mode = value["mode"];
  if (mode != "allowlist" && mode != "none" && mode != "host") {
    return FieldError("network.mode", "\"allowlist\", \"none\" or \"host\"", mode);
  }
  if (mode != "allowlist") {
    for (const char* key : {"allow", "deny", "allow_private", "limits", "inject", "extra_ca_files",
                            "upstream_ca_files", "proxy_env"}) {
      if (value.contains(key)) {
        return InvalidInput(std::string("network.") + key +
                            ": only with \"mode\": \"allowlist\", not \"" +
                            mode.get<std::string>() + "\"");
      }
    }
    policy.network = mode == "host" ? NetworkMode::kHost : NetworkMode::kNone;
    return Ok{};
  }
  policy.network = NetworkMode::kAllowlist;
  policy.network_allowlist = NetworkAllowlist{};
  return ReadAllowlist(value, policy.network_allowlist);
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
  auto root = policy_json::ParseStrict(text, "network allowlist");
  if (!root) return root.error();
  if (!root->is_object()) return FieldError("network", "an object", *root);
  SBX_TRY(CheckKeys("network", *root,
                    {"allow", "deny", "allow_private", "limits", "inject", "extra_ca_files",
                     "upstream_ca_files", "proxy_env"}));
  NetworkAllowlist allowlist;
  SBX_TRY(ReadAllowlist(*root, allowlist));
  SBX_TRY(ValidateNetworkAllowlist(allowlist));
  return allowlist;
}

}  // namespace sbx
