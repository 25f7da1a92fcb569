// Loading and checking LlmConfig from the environment and flags.
#include "src/llm/llm_config.h"

#include <cmath>
#include <cstdlib>

#include "base/ascii.h"
#include "src/llm/url.h"

namespace sbx::llm {
namespace {

constexpr int kMaxRetriesLimit = 20;
constexpr char kOpenAiHost[] = "api.openai.com";

// Where each string came from, so an error names what the operator should change.
struct Sources {
  std::string base_url = "base_url";
  std::string api_key = "api_key";
  std::string model = "model";
};

std::string Trim(const std::string& text) {
  size_t begin = text.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos) return "";
  return text.substr(begin, text.find_last_not_of(" \t\r\n") - begin + 1);
}

bool HasSpaceOrControl(const std::string& text) {
  for (unsigned char c : text) {
    if (c <= ' ' || c == 0x7f) return true;
  }
  return false;
}

Result<void> CheckBaseUrl(const std::string& url, const std::string& source) {
  const std::string example = "; set it to the API root, like " + std::string(kDefaultBaseUrl) +
                              " or http://127.0.0.1:8000/v1";
  if (!StartsWithIgnoreAsciiCase(url, "http://") && !StartsWithIgnoreAsciiCase(url, "https://"))
    return InvalidInput(source + " \"" + url + "\" is not an http:// or https:// URL" + example);
  if (HasSpaceOrControl(url))
    return InvalidInput(source + " contains a space or a control character" + example);
  std::string host = UrlHostPort(url);
  if (host.empty() || host.front() == ':')
    return InvalidInput(source + " \"" + url + "\" has no host" + example);
  if (url.ends_with("/chat/completions"))
    return InvalidInput(source + " \"" + url + "\" names the endpoint, not the API root" + example);
  return Ok{};
}

Result<void> CheckKey(const LlmConfig& config, const Sources& sources) {
  if (HasSpaceOrControl(config.api_key)) {
    return InvalidInput(sources.api_key +
                        " contains a space or a control character; set it to the key alone");
  }
  std::string host = UrlHostPort(config.base_url);
  bool openai = host == kOpenAiHost || host.starts_with(std::string(kOpenAiHost) + ":");
  if (config.api_key.empty() && openai) {
    return InvalidInput(sources.api_key +
                        " is not set; export it, or point OPENAI_BASE_URL at a server that needs "
                        "no key");
  }
  return Ok{};
}

Result<void> CheckSeconds(double value, const char* field, bool zero_ok) {
  if (!std::isfinite(value) || value < 0 || (!zero_ok && value == 0))
    return InvalidInput(std::string(field) + ": expected a positive number of seconds");
  return Ok{};
}

Result<void> Validate(const LlmConfig& config, const Sources& sources) {
  SBX_TRY(CheckBaseUrl(config.base_url, sources.base_url));
  SBX_TRY(CheckKey(config, sources));
  if (config.model.empty() || HasSpaceOrControl(config.model))
    return InvalidInput(sources.model + " must be a model name without spaces, like gpt-4o-mini");
  SBX_TRY(CheckSeconds(config.connect_timeout_seconds, "connect_timeout_seconds", false));
  SBX_TRY(CheckSeconds(config.request_timeout_seconds, "request_timeout_seconds", false));
  SBX_TRY(CheckSeconds(config.backoff_initial_seconds, "backoff_initial_seconds", true));
  SBX_TRY(CheckSeconds(config.backoff_max_seconds, "backoff_max_seconds", true));
  if (config.backoff_max_seconds < config.backoff_initial_seconds)
    return InvalidInput("backoff_max_seconds must not be below backoff_initial_seconds");
  if (config.max_retries < 0 || config.max_retries > kMaxRetriesLimit)
    return InvalidInput("max_retries must be in 0.." + std::to_string(kMaxRetriesLimit));
  return Ok{};
}

// Applies one setting: the flag when given, else a non-empty environment variable.
void Apply(const std::optional<std::string>& flag, const char* flag_name,
           const GetenvFunction& getenv, const char* env_name, std::string& value,
           std::string& source) {
  if (flag) {
    value = Trim(*flag);
    source = flag_name;
  } else if (auto env = getenv(env_name); env && !Trim(*env).empty()) {
    value = Trim(*env);
    source = env_name;
  }
}

}  // namespace

std::optional<std::string> ProcessGetenv(const std::string& name) {
  const char* value = std::getenv(name.c_str());
  if (!value) return std::nullopt;
  return std::string(value);
}

Result<LlmConfig> LoadLlmConfig(const GetenvFunction& getenv, const LlmConfigOverrides& flags) {
  LlmConfig config;
  Sources sources{"OPENAI_BASE_URL", "OPENAI_API_KEY", "SBX_MODEL"};
  Apply(flags.base_url, "--base-url", getenv, "OPENAI_BASE_URL", config.base_url, sources.base_url);
  Apply(flags.api_key, "the api_key override", getenv, "OPENAI_API_KEY", config.api_key,
        sources.api_key);
  Apply(flags.model, "--model", getenv, "SBX_MODEL", config.model, sources.model);
  while (config.base_url.ends_with('/')) config.base_url.pop_back();
  SBX_TRY(Validate(config, sources));
  return config;
}

Result<void> ValidateLlmConfig(const LlmConfig& config) { return Validate(config, Sources{}); }

}  // namespace sbx::llm
