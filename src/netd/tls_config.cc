// Reads the "tls" object strictly, wiping the parser's copies of what is secret.
#include "src/netd/tls_config.h"

#include <set>

namespace sbx::netd {
namespace {

using nlohmann::json;

constexpr std::string_view kPlaceholderPrefix = "sbx-ph-";
constexpr size_t kPlaceholderHexDigits = 32;

Error TlsError(const std::string& field, const std::string& what) {
  return MakeError(ErrorCode::kInvalidInput, "control: tls" + field + ": " + what);
}

Result<void> CheckKeys(const json& object, const std::string& field,
                       const std::set<std::string>& keys) {
  if (!object.is_object()) return TlsError(field, "expected an object");
  for (const auto& [key, value] : object.items()) {
    if (!keys.contains(key)) return TlsError(field, "unknown key \"" + key + "\"");
  }
  for (const std::string& key : keys) {
    if (!object.contains(key)) return TlsError(field, "missing key \"" + key + "\"");
  }
  for (const auto& [key, value] : object.items()) {
    if (!value.is_string() && key != "secrets") {
      return TlsError(field + "." + key, "expected a string");
    }
  }
  return Ok{};
}

bool IsPlaceholder(std::string_view text) {
  if (text.size() != kPlaceholderPrefix.size() + kPlaceholderHexDigits ||
      !text.starts_with(kPlaceholderPrefix)) {
    return false;
  }
  for (char c : text.substr(kPlaceholderPrefix.size())) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

// A header value goes into a request as is: CR or LF would let it add fields of its own.
bool IsHeaderValue(std::string_view text) {
  if (text.empty()) return false;
  for (unsigned char c : text) {
    if (c == '\r' || c == '\n' || c == '\0') return false;
  }
  return true;
}

Result<TlsConfig> Read(const json& tls, size_t inject_count) {
  SBX_TRY(CheckKeys(tls, "", {"secrets"}));
  TlsConfig config;
  const json& secrets = tls["secrets"];
  if (!secrets.is_array()) return TlsError(".secrets", "expected a list");
  if (secrets.size() != inject_count) {
    return TlsError(".secrets", "expected " + std::to_string(inject_count) +
                                    " entries (one per network.inject rule), got " +
                                    std::to_string(secrets.size()));
  }
  for (size_t i = 0; i < secrets.size(); ++i) {
    const std::string field = ".secrets[" + std::to_string(i) + "]";
    SBX_TRY(CheckKeys(secrets[i], field, {"value", "placeholder"}));
    const auto& value = secrets[i]["value"].get_ref<const std::string&>();
    const auto& placeholder = secrets[i]["placeholder"].get_ref<const std::string&>();
    if (!IsHeaderValue(value)) {
      return TlsError(field + ".value", "expected a non-empty header value without CR, LF or NUL");
    }
    if (!placeholder.empty() && !IsPlaceholder(placeholder)) {
      return TlsError(field + ".placeholder", "expected \"\" or \"sbx-ph-<32 lower-case hex>\"");
    }
    config.secrets.push_back(InjectSecret{Secret(value), Secret(placeholder)});
  }
  return config;
}

}  // namespace

void WipeJsonStrings(json& value) {
  if (value.is_string()) return WipeString(value.get_ref<std::string&>());
  if (value.is_structured()) {
    for (json& child : value) WipeJsonStrings(child);
  }
}

Result<TlsConfig> ParseTlsConfig(json& tls, size_t inject_count) {
  auto config = Read(tls, inject_count);
  WipeJsonStrings(tls);
  return config;
}

}  // namespace sbx::netd
