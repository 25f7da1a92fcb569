// The strict JSON policy loader (the network object's allowlist is read by netpolicy, in
// network_allowlist_json.cc).
#include <sys/stat.h>

#include <vector>

#include "base/small_file.h"
#include "netpolicy/policy_json.h"
#include "sandbox/image/image.h"
#include "sandbox/policy/policy.h"

namespace sbx {
namespace {

using policy_json::CheckKeys;
using policy_json::Count32Field;
using policy_json::FieldError;
using policy_json::json;
using policy_json::SecondsField;
using policy_json::SizeField;

// Keys of the policy's network object that name features this sbx does not have yet. They are
// refused rather than ignored: a policy that asks for path rules must not run without them.
constexpr std::pair<const char*, const char*> kNotImplemented[] = {
    {"http_rules", "HTTP method and path rules are not implemented yet in this sbx"},
};

// The policy's "network" value: "none", "host", or the object of policies/SCHEMA.md, whose
// allowlist keys netpolicy reads.
Result<void> ReadNetwork(const json& value, Policy& policy) {
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
  return policy_json::ReadNetworkAllowlist(value, policy.network_allowlist);
}

Result<void> ReadLimits(const json& limits, Limits& out) {
  if (!limits.is_object()) return FieldError("limits", "an object", limits);
  SBX_TRY(CheckKeys("limits", limits,
                    {"memory", "pids", "cpus", "timeout", "output", "file_size", "open_files",
                     "rootfs_size", "tmp_size"}));
  for (const auto& [key, value] : limits.items()) {
    const std::string field = "limits." + key;
    if (key == "memory" || key == "output" || key == "file_size" || key == "rootfs_size" ||
        key == "tmp_size") {
      SBX_ASSIGN_OR_RETURN(auto size, SizeField(field, value));
      uint64_t* target = key == "memory"        ? &out.memory_bytes
                         : key == "output"      ? &out.output_bytes
                         : key == "file_size"   ? &out.file_size_bytes
                         : key == "rootfs_size" ? &out.rootfs_size_bytes
                                                : &out.tmp_size_bytes;
      *target = size;
    } else if (key == "pids" || key == "open_files") {
      SBX_ASSIGN_OR_RETURN(auto count, Count32Field(field, value));
      (key == "pids" ? out.pids : out.open_files) = count;
    } else {  // cpus, timeout
      auto number = SecondsField(field, value);
      if (!number) {
        return key == "cpus" ? FieldError(field, "a number of CPUs like 1 or 0.5", value)
                             : number.error();
      }
      (key == "cpus" ? out.cpus : out.timeout_seconds) = *number;
    }
  }
  return Ok{};
}

Result<void> ReadPolicy(const json& root, Policy& policy) {
  if (!root.is_object()) return FieldError("(top level)", "an object", root);
  SBX_TRY(CheckKeys("", root, {"isolation", "image", "network", "limits", "env", "allow_degraded", "description"}));
  if (root.contains("description") && !root["description"].is_string())
    return FieldError("description", "a string", root["description"]);
  if (root.contains("isolation")) {
    const json& isolation = root["isolation"];
    if (!isolation.is_string()) return FieldError("isolation", "\"namespaces\" or \"outer\"", isolation);
    SBX_ASSIGN_OR_RETURN(auto parsed, ParseIsolation(isolation.get<std::string>(), "isolation"));
    policy.isolation = parsed;
  }
  if (root.contains("image")) {
    const json& image = root["image"];
    if (!image.is_string()) return FieldError("image", "a variant's name from `sbx image ls`", image);
    auto valid = ValidateImageName(image.get<std::string>());
    if (!valid) return valid.error().Context("image");
    policy.image = image.get<std::string>();
  }
  if (root.contains("network")) SBX_TRY(ReadNetwork(root["network"], policy));
  if (root.contains("limits")) SBX_TRY(ReadLimits(root["limits"], policy.limits));
  if (root.contains("env")) {
    const json& env = root["env"];
    if (!env.is_object()) return FieldError("env", "an object of NAME: \"value\"", env);
    for (const auto& [name, value] : env.items()) {
      if (!value.is_string()) return FieldError("env." + name, "a string", value);
      policy.env[name] = value.get<std::string>();
    }
  }
  if (root.contains("allow_degraded")) {
    const json& list = root["allow_degraded"];
    if (!list.is_array()) return FieldError("allow_degraded", "a list of layer names", list);
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string field = "allow_degraded[" + std::to_string(i) + "]";
      if (!list[i].is_string()) return FieldError(field, "a layer name", list[i]);
      auto layer = ParseLayer(list[i].get<std::string>());
      if (!layer) return layer.error().Context(field);
      policy.allow_degraded.push_back(*layer);
    }
  }
  return Ok{};
}

}  // namespace

Result<Policy> ParsePolicyJson(const std::string& text) {
  SBX_ASSIGN_OR_RETURN(auto root, policy_json::ParseStrict(text, "policy"));
  Policy policy;
  SBX_TRY(ReadPolicy(root, policy));
  SBX_TRY(ValidatePolicy(policy));
  return policy;
}

Result<Policy> LoadPolicyFile(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return SysError(ErrorCode::kInvalidInput, "policy file " + path);
  if (!S_ISREG(st.st_mode)) return InvalidInput("policy file " + path + ": not a regular file");
  auto text = ReadSmallFile(path, policy_json::kMaxPolicyBytes + 1);
  if (!text) return MakeError(ErrorCode::kInvalidInput, "policy file " + text.error().message);
  auto policy = ParsePolicyJson(*text);
  if (!policy) return policy.error().Context(path);
  return policy;
}

}  // namespace sbx
