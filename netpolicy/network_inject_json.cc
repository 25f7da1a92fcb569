// The allowlist's secret-injection part in JSON: `network.inject`, `network.extra_ca_files`
// and `network.upstream_ca_files`, read strictly and checked against the allow rules.
#include <algorithm>
#include <cctype>
#include <iterator>
#include <set>
#include <string_view>

#include "base/env_name.h"
#include "netpolicy/network_allowlist_json.h"
#include "netpolicy/network_proxy_env.h"
#include "netpolicy/policy_json.h"

namespace sbx::policy_json {
namespace {

constexpr size_t kMaxInjectRules = 16;
constexpr size_t kMaxInjectHosts = 32;
constexpr size_t kMaxCaFiles = 16;
constexpr size_t kMaxFormatBytes = 256;
constexpr char kSecretMarker[] = "{secret}";

// Fields sbx-netd must own to frame and route a request; a secret never goes there. A constant
// array, not a set: every program that links the policy code would build a set at its start.
constexpr std::string_view kReservedHeaders[] = {
    "host",    "content-length", "transfer-encoding", "connection", "upgrade",
    "te",      "trailer",        "keep-alive",        "proxy-connection", "expect"};

bool IsReservedHeader(std::string_view lower_name) {
  return std::find(std::begin(kReservedHeaders), std::end(kReservedHeaders), lower_name) !=
         std::end(kReservedHeaders);
}

bool IsHeaderToken(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  return std::all_of(name.begin(), name.end(), [](unsigned char c) {
    return std::isalnum(c) || std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) !=
                                  std::string_view::npos;
  });
}

bool IsRuleName(const std::string& name) {
  if (name.empty() || name.size() > 32) return false;
  return std::all_of(name.begin(), name.end(), [](unsigned char c) {
    return std::islower(c) || std::isdigit(c) || c == '_' || c == '-';
  });
}

Result<std::string> StringField(const std::string& field, const json& value,
                                const std::string& expected) {
  if (!value.is_string()) return FieldError(field, expected, value);
  return value.get<std::string>();
}

// `secret_from` names where the runner reads the secret. Its value is never echoed: a literal
// secret pasted here must not end up in an error message, a terminal or a CI log.
Result<void> CheckSecretSource(const std::string& field, const std::string& source) {
  if (source.rfind("env:", 0) == 0 && IsEnvName(std::string_view(source).substr(4))) return Ok{};
  if (source.rfind("file:/", 0) == 0 && source.find('\0') == std::string::npos) return Ok{};
  return InvalidInput(field +
                      ": not \"env:NAME\" or \"file:/absolute/path\" (the value is not shown); "
                      "sbx reads secrets from its own environment or a file, never from the "
                      "policy, which ends up in version control");
}

Result<InjectRule> ReadInjectRule(const std::string& where, const json& object) {
  if (!object.is_object()) {
    return FieldError(where,
                      "an object like {\"name\": \"openai\", \"hosts\": [\"api.openai.com\"], "
                      "\"header\": \"Authorization\", \"format\": \"Bearer {secret}\", "
                      "\"secret_from\": \"env:OPENAI_API_KEY\"}",
                      object);
  }
  SBX_TRY(CheckKeys(where, object,
                    {"name", "hosts", "header", "format", "secret_from", "sandbox_placeholder_env"}));
  for (const char* key : {"name", "hosts", "header", "secret_from"}) {
    if (!object.contains(key)) return InvalidInput(where + "." + key + ": missing");
  }
  InjectRule rule;
  auto name = StringField(where + ".name", object["name"], "a short label like \"openai\"");
  if (!name) return name.error();
  if (!IsRuleName(*name)) {
    return InvalidInput(where + ".name: \"" + *name +
                        "\": use 1 to 32 of a-z, 0-9, '_' and '-' (it labels the audit log)");
  }
  rule.name = *name;

  const json& hosts = object["hosts"];
  if (!hosts.is_array() || hosts.empty() || hosts.size() > kMaxInjectHosts) {
    return FieldError(where + ".hosts", "a list of 1 to 32 exact host names", hosts);
  }
  for (size_t i = 0; i < hosts.size(); ++i) {
    const std::string field = where + ".hosts[" + std::to_string(i) + "]";
    SBX_ASSIGN_OR_RETURN(auto text,
                         StringField(field, hosts[i], "a host name like \"api.openai.com\""));
    SBX_ASSIGN_OR_RETURN(auto parsed, ParseNetworkRule(text, field));
    if (parsed.kind != HostPatternKind::kExactName || text.find(':') != std::string::npos) {
      return InvalidInput(field + ": \"" + text +
                          "\": inject takes exact host names without ports (the run's CA vouches "
                          "for exactly these names, on port 443)");
    }
    rule.hosts.push_back(parsed.name);
  }

  auto header = StringField(where + ".header", object["header"], "a header name");
  if (!header) return header.error();
  std::string lower = *header;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (!IsHeaderToken(*header) || IsReservedHeader(lower) ||
      lower.rfind("proxy-", 0) == 0) {
    return InvalidInput(where + ".header: \"" + *header +
                        "\": not a header sbx can set (an HTTP field name of letters, digits "
                        "and -, not one that frames or routes the request such as Host, "
                        "Content-Length or Connection)");
  }
  rule.header = *header;

  if (object.contains("format")) {
    auto format = StringField(where + ".format", object["format"], "a string like \"Bearer {secret}\"");
    if (!format) return format.error();
    rule.format = *format;
  }
  const size_t marker = rule.format.find(kSecretMarker);
  const bool control = std::any_of(rule.format.begin(), rule.format.end(), [](unsigned char c) {
    return c < 0x20 || c == 0x7f;
  });
  if (marker == std::string::npos ||
      rule.format.find(kSecretMarker, marker + 1) != std::string::npos || control ||
      rule.format.size() > kMaxFormatBytes) {
    return InvalidInput(where +
                        ".format: must contain {secret} exactly once, no control characters, at "
                        "most 256 bytes (like \"Bearer {secret}\")");
  }

  SBX_ASSIGN_OR_RETURN(auto source, StringField(where + ".secret_from", object["secret_from"],
                                                "\"env:NAME\" or \"file:/absolute/path\""));
  SBX_TRY(CheckSecretSource(where + ".secret_from", source));
  rule.secret_from = source;

  if (object.contains("sandbox_placeholder_env")) {
    SBX_ASSIGN_OR_RETURN(
        auto env, StringField(where + ".sandbox_placeholder_env", object["sandbox_placeholder_env"],
                              "an environment variable name"));
    if (!IsEnvName(env)) {
      return InvalidInput(where + ".sandbox_placeholder_env: \"" + env +
                          "\": an environment variable name ([A-Za-z_][A-Za-z0-9_]*)");
    }
    rule.sandbox_placeholder_env = env;
  }
  return rule;
}

}  // namespace

Result<void> ReadInjectRules(const json& list, std::vector<InjectRule>& out) {
  if (!list.is_array() || list.size() > kMaxInjectRules) {
    return FieldError("network.inject", "a list of at most 16 objects", list);
  }
  for (size_t i = 0; i < list.size(); ++i) {
    SBX_ASSIGN_OR_RETURN(auto rule,
                         ReadInjectRule("network.inject[" + std::to_string(i) + "]", list[i]));
    out.push_back(std::move(rule));
  }
  return Ok{};
}

Result<void> ReadCaFiles(const std::string& field, const json& list,
                         std::vector<std::string>& out) {
  if (!list.is_array() || list.size() > kMaxCaFiles) {
    return FieldError(field, "a list of at most 16 absolute paths of PEM files", list);
  }
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string item = field + "[" + std::to_string(i) + "]";
    if (!list[i].is_string() || list[i].get<std::string>().rfind('/', 0) != 0 ||
        list[i].get<std::string>().find('\0') != std::string::npos) {
      return FieldError(item, "an absolute path like \"/etc/corp/ca.pem\"", list[i]);
    }
    out.push_back(list[i].get<std::string>());
  }
  return Ok{};
}

}  // namespace sbx::policy_json

namespace sbx {

Result<void> ValidateInjectRules(const NetworkAllowlist& allowlist) {
  std::set<std::string> names, hosts, placeholders;
  for (size_t i = 0; i < allowlist.inject.size(); ++i) {
    const InjectRule& rule = allowlist.inject[i];
    const std::string where = "network.inject[" + std::to_string(i) + "]";
    if (!names.insert(rule.name).second) {
      return InvalidInput(where + ".name: \"" + rule.name + "\" is used twice; names must differ");
    }
    if (!rule.sandbox_placeholder_env.empty() &&
        !placeholders.insert(rule.sandbox_placeholder_env).second) {
      return InvalidInput(where + ".sandbox_placeholder_env: " + rule.sandbox_placeholder_env +
                          " is given twice; one variable holds one placeholder");
    }
    // The launcher would have to pick one value for the variable; either choice breaks a
    // promise (the proxy, or the placeholder), so the policy says which.
    if (allowlist.proxy_env && IsProxyVariable(rule.sandbox_placeholder_env)) {
      return InvalidInput(where + ".sandbox_placeholder_env: " + rule.sandbox_placeholder_env +
                          " is a proxy variable, which network.proxy_env sets; name another "
                          "variable (API_KEY, say) or turn proxy_env off");
    }
    for (size_t h = 0; h < rule.hosts.size(); ++h) {
      const std::string field = where + ".hosts[" + std::to_string(h) + "]";
      if (!hosts.insert(rule.hosts[h]).second) {
        return InvalidInput(field + ": \"" + rule.hosts[h] +
                            "\" is in two inject rules; one host gets one injected header rule");
      }
      // Injection rides on TLS to port 443 only: plaintext would hand the secret to anyone
      // on the path, so the host must be allowed there and nowhere is a plaintext form offered.
      if (!DecideName(allowlist, rule.hosts[h], 443).allowed) {
        return InvalidInput(field + ": \"" + rule.hosts[h] +
                            "\" is not allowed on port 443; add \"" + rule.hosts[h] +
                            "\" to network.allow (injection works over TLS on 443 only)");
      }
    }
  }
  return Ok{};
}

}  // namespace sbx
