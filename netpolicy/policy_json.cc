// Strict JSON parsing and typed field readers shared by the policy loaders.
#include "netpolicy/policy_json.h"

#include <cmath>
#include <vector>

#include "base/units.h"

namespace sbx::policy_json {
namespace {

constexpr int kMaxDepth = 16;

// Thrown only inside this file, from the parser callback; caught in ParseStrict.
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

}  // namespace

Result<json> ParseStrict(const std::string& text, const std::string& what) {
  if (text.size() > kMaxPolicyBytes)
    return InvalidInput(what + ": " + std::to_string(text.size()) + " bytes; at most 1 MiB");
  if (text.size() >= 3 && text.compare(0, 3, "\xEF\xBB\xBF") == 0)
    return InvalidInput(what + ": starts with a byte-order mark; save it as plain UTF-8");

  // Duplicate keys and depth are checked while parsing: nlohmann keeps the last duplicate
  // silently, and a typo'd or repeated limit must never be dropped quietly.
  std::vector<std::set<std::string>> open_objects;
  auto callback = [&](int depth, json::parse_event_t event, json& parsed) {
    if (depth > kMaxDepth) throw StructureError{"nesting deeper than 16 levels"};
    switch (event) {
      case json::parse_event_t::object_start:
        open_objects.emplace_back();
        break;
      case json::parse_event_t::object_end:
        open_objects.pop_back();
        break;
      case json::parse_event_t::key: {
        std::string key = parsed.get<std::string>();
        if (!open_objects.back().insert(key).second)
          throw StructureError{key + ": duplicate key; keep exactly one"};
        break;
      }
      default:
        break;
    }
    return true;
  };
  try {
    return json::parse(text, callback, /*allow_exceptions=*/true, /*ignore_comments=*/false);
  } catch (const StructureError& e) {
    return InvalidInput(what + ": " + e.message);
  } catch (const json::exception& e) {
    return InvalidInput(what + ": not valid JSON: " + e.what());
  }
}

Error FieldError(const std::string& field, const std::string& expected, const json& got) {
  return InvalidInput(field + ": expected " + expected + ", got " + TypeName(got) + " " +
                      Show(got));
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

Result<uint32_t> Count32Field(const std::string& field, const json& value) {
  if (!value.is_number_unsigned()) return FieldError(field, "a non-negative whole number", value);
  uint64_t count = value.get<uint64_t>();
  if (count > 0xffffffffull)
    return InvalidInput(field + ": " + std::to_string(count) + " is too large");
  return static_cast<uint32_t>(count);
}

Result<double> SecondsField(const std::string& field, const json& value) {
  if (value.is_number_unsigned()) return static_cast<double>(value.get<uint64_t>());
  if (value.is_number_float() && std::isfinite(value.get<double>()) && value.get<double>() >= 0)
    return value.get<double>();
  return FieldError(field, "a non-negative number of seconds", value);
}

}  // namespace sbx::policy_json
