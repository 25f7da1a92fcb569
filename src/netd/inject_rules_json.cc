// Reads network.inject entries strictly and checks their hosts against the allow rules.
#include "src/netd/inject_rules_json.h"

#include <set>

namespace sbx::netd {
namespace {

using nlohmann::json;

Error InjectError(const std::string& field, const std::string& what) {
  return MakeError(ErrorCode::kInvalidInput, "control: " + field + ": " + what);
}

bool IsRuleName(const std::string& name) {
  if (name.empty() || name.size() > 32) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

// RFC 9110 5.6.2 token characters.
bool IsFieldName(const std::string& name) {
  if (name.empty()) return false;
  for (unsigned char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) !=
                        std::string_view::npos;
    if (!ok) return false;
  }
  return true;
}

Result<InjectRule> ReadRule(const json& entry, const std::string& field) {
  static const std::set<std::string> kRequired = {"name", "hosts", "header"};
  static const std::set<std::string> kIgnored = {"format", "secret_from",
                                                 "sandbox_placeholder_env"};
  if (!entry.is_object()) return InjectError(field, "expected an object");
  for (const auto& [key, value] : entry.items()) {
    if (!kRequired.contains(key) && !kIgnored.contains(key)) {
      return InjectError(field, "unknown key \"" + key + "\"");
    }
    if (key != "hosts" && !value.is_string()) {
      return InjectError(field + "." + key, "expected a string");
    }
  }
  for (const std::string& key : kRequired) {
    if (!entry.contains(key)) return InjectError(field, "missing key \"" + key + "\"");
  }
  InjectRule rule;
  rule.name = entry["name"].get<std::string>();
  if (!IsRuleName(rule.name)) return InjectError(field + ".name", "expected [a-z0-9_-]{1,32}");
  rule.header = entry["header"].get<std::string>();
  if (!IsFieldName(rule.header)) return InjectError(field + ".header", "expected a field name");
  const json& hosts = entry["hosts"];
  if (!hosts.is_array() || hosts.empty()) {
    return InjectError(field + ".hosts", "expected a non-empty list of names");
  }
  for (size_t i = 0; i < hosts.size(); ++i) {
    const std::string where = field + ".hosts[" + std::to_string(i) + "]";
    if (!hosts[i].is_string()) return InjectError(where, "expected a string");
    auto name = NormalizeHostName(hosts[i].get<std::string>());
    if (!name) return InjectError(where, "expected a DNS name");
    rule.hosts.push_back(*name);
  }
  return rule;
}

}  // namespace

Result<std::vector<InjectRule>> ReadInjectRulesJson(const json& list) {
  if (!list.is_array()) return InjectError("network.inject", "expected a list");
  std::vector<InjectRule> rules;
  for (size_t i = 0; i < list.size(); ++i) {
    auto rule = ReadRule(list[i], "network.inject[" + std::to_string(i) + "]");
    if (!rule) return rule.error();
    rules.push_back(std::move(*rule));
  }
  return rules;
}

Result<void> CheckInjectHostsAllowed(const NetworkAllowlist& policy) {
  for (size_t i = 0; i < policy.inject.size(); ++i) {
    for (const std::string& host : policy.inject[i].hosts) {
      if (!DecideName(policy, host, 443).allowed) {
        return InjectError("network.inject[" + std::to_string(i) + "]",
                           "host \"" + host + "\" is not allowed on port 443");
      }
    }
  }
  return Ok{};
}

}  // namespace sbx::netd
