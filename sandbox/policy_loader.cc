// The strict JSON policy loader: the only place that calls nlohmann/json for policies.
#include <sys/stat.h>

#include <cmath>
#include <fstream>
#include <set>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "sandbox/policy.h"
#include "sandbox/units.h"

namespace sbx {
namespace {

using nlohmann::json;

constexpr size_t kMaxPolicyBytes = 1 << 20;
constexpr int kMaxDepth = 16;

// Thrown only inside this file, from the parser callback; caught in ParsePolicyJson.
struct StructureError {
  std::string message;
};

std::string TypeName(const json& value) {
  if (value.is_number_float()) return "a fraction";
  if (value.is_number()) return "a number";
  return value.type_name();
}

std::string Show(const json& value) {
  std::string text = value.dump();
  return text.size() > 40 ? text.substr(0, 40) + "..." : text;
}

Error FieldError(const std::string& field, const std::string& expected, const json& got) {
  return InvalidInput(field + ": expected " + expected + ", got " + TypeName(got) + " " + Show(got));
}

Result<void> CheckKeys(const std::string& where, const json& object,
                       const std::set<std::string>& allowed) {
  for (const auto& item : object.items()) {
    if (!allowed.count(item.key())) {
      std::string list;
      for (const auto& key : allowed) list += (list.empty() ? "" : ", ") + key;
      return InvalidInput((where.empty() ? "" : where + ".") + item.key() +
                          ": unknown key; allowed here: " + list);
    }
  }
  return Ok{};
}

Result<uint64_t> SizeField(const std::string& field, const json& value) {
  if (value.is_number_unsigned()) return value.get<uint64_t>();
  if (value.is_string()) {
    auto size = ParseSize(value.get<std::string>());
    if (!size) return size.error().Context(field);
    return size;
  }
  return FieldError(field, "a size like \"512M\" or a byte count", value);
}

Result<uint64_t> CountField(const std::string& field, const json& value) {
  if (value.is_number_unsigned()) return value.get<uint64_t>();
  return FieldError(field, "a non-negative whole number", value);
}

Result<double> SecondsField(const std::string& field, const json& value) {
  if (value.is_number_unsigned()) return static_cast<double>(value.get<uint64_t>());
  if (value.is_number_float() && std::isfinite(value.get<double>()) && value.get<double>() >= 0)
    return value.get<double>();
  return FieldError(field, "a non-negative number of seconds", value);
}

Result<uint32_t> Count32(const std::string& field, const json& value) {
  auto count = CountField(field, value);
  if (!count) return count.error();
  if (*count > 0xffffffffull) return InvalidInput(field + ": " + std::to_string(*count) + " is too large");
  return static_cast<uint32_t>(*count);
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
      auto size = SizeField(field, value);
      if (!size) return size.error();
      uint64_t* target = key == "memory"        ? &out.memory_bytes
                         : key == "output"      ? &out.output_bytes
                         : key == "file_size"   ? &out.file_size_bytes
                         : key == "rootfs_size" ? &out.rootfs_size_bytes
                                                : &out.tmp_size_bytes;
      *target = *size;
    } else if (key == "pids" || key == "open_files") {
      auto count = Count32(field, value);
      if (!count) return count.error();
      (key == "pids" ? out.pids : out.open_files) = *count;
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
  SBX_TRY(CheckKeys("", root, {"network", "limits", "env", "allow_degraded", "description"}));
  if (root.contains("description") && !root["description"].is_string())
    return FieldError("description", "a string", root["description"]);
  if (root.contains("network")) {
    const json& net = root["network"];
    if (!net.is_string() || (net != "none" && net != "host"))
      return FieldError("network", "\"none\" or \"host\"", net);
    policy.network = net == "host" ? NetworkMode::kHost : NetworkMode::kNone;
  }
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
  if (text.size() > kMaxPolicyBytes)
    return InvalidInput("policy: " + std::to_string(text.size()) + " bytes; at most 1 MiB");
  if (text.size() >= 3 && text.compare(0, 3, "\xEF\xBB\xBF") == 0)
    return InvalidInput("policy: starts with a byte-order mark; save it as plain UTF-8");

  // Duplicate keys and depth are checked while parsing: nlohmann keeps the last duplicate
  // silently, and a typo'd or repeated limit must never be dropped quietly.
  std::vector<std::set<std::string>> open_objects;
  std::vector<std::string> path;
  auto callback = [&](int depth, json::parse_event_t event, json& parsed) {
    if (depth > kMaxDepth) throw StructureError{"nesting deeper than 16 levels"};
    switch (event) {
      case json::parse_event_t::object_start: open_objects.emplace_back(); break;
      case json::parse_event_t::object_end: open_objects.pop_back(); break;
      case json::parse_event_t::key: {
        std::string key = parsed.get<std::string>();
        if (!open_objects.back().insert(key).second)
          throw StructureError{key + ": duplicate key; keep exactly one"};
        break;
      }
      default: break;
    }
    return true;
  };
  json root;
  try {
    root = json::parse(text, callback, /*allow_exceptions=*/true, /*ignore_comments=*/false);
  } catch (const StructureError& e) {
    return InvalidInput("policy: " + e.message);
  } catch (const json::exception& e) {
    return InvalidInput(std::string("policy: not valid JSON: ") + e.what());
  }
  Policy policy;
  SBX_TRY(ReadPolicy(root, policy));
  SBX_TRY(ValidatePolicy(policy));
  return policy;
}

Result<Policy> LoadPolicyFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return SysError(ErrorCode::kInvalidInput, "policy file " + path);
  struct stat st {};
  if (stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    return InvalidInput("policy file " + path + ": not a regular file");
  std::string text;
  text.resize(kMaxPolicyBytes + 1);
  file.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(file.gcount()));
  auto policy = ParsePolicyJson(text);
  if (!policy) return policy.error().Context(path);
  return policy;
}

}  // namespace sbx
