// LlmConfig: where the model server is, which model, the key, and how patient to be.
//
// Loaded once from the environment (OPENAI_API_KEY, OPENAI_BASE_URL, SBX_MODEL) with command
// flags on top, and checked before any request: a bad URL or a missing key for the default
// OpenAI endpoint is reported here, not as an HTTP 401 later.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "base/error.h"

namespace sbx::llm {

inline constexpr char kDefaultBaseUrl[] = "https://api.openai.com/v1";

struct LlmConfig {
  std::string base_url = kDefaultBaseUrl;  // no trailing slash; requests go to /chat/completions
  std::string api_key;                     // empty: no Authorization header (local servers)
  std::string model = "gpt-4o-mini";
  double connect_timeout_seconds = 10;
  double request_timeout_seconds = 120;  // one attempt, connect to last byte
  int max_retries = 4;                   // attempts after the first
  double backoff_initial_seconds = 0.5;
  double backoff_max_seconds = 30;  // also caps a server's Retry-After
};

// Values from command flags; each set one wins over its environment variable. api_key is for
// programs embedding sbx: the CLI takes no key flag, since argv is visible to every user.
struct LlmConfigOverrides {
  std::optional<std::string> base_url;
  std::optional<std::string> api_key;
  std::optional<std::string> model;
};

// Looks a variable up; nullopt when unset. Injected so tests need not touch the environment.
using GetenvFunction = std::function<std::optional<std::string>(const std::string&)>;

// The process environment, for GetenvFunction.
std::optional<std::string> ProcessGetenv(const std::string& name);

// Builds the config: defaults, then the environment (an empty variable counts as unset), then
// `flags`. Errors (kInvalidInput) name the variable or flag and the fix; they never quote the
// key.
Result<LlmConfig> LoadLlmConfig(const GetenvFunction& getenv, const LlmConfigOverrides& flags);

// The checks LoadLlmConfig makes, for a config built in code: the URL, the key, the model and
// the numeric fields (finite, non-negative timeouts; max_retries in 0..20).
Result<void> ValidateLlmConfig(const LlmConfig& config);

}  // namespace sbx::llm
