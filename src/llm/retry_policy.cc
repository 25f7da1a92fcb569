// The retry schedule: which statuses to retry, Retry-After, exponential backoff with jitter.
#include "src/llm/retry_policy.h"

#include <curl/curl.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace sbx::llm {
namespace {

// A non-negative finite number filling the whole (trimmed) text, or nullopt.
std::optional<double> ParseNumber(const std::string& text) {
  size_t begin = text.find_first_not_of(" \t");
  if (begin == std::string::npos) return std::nullopt;
  const char* start = text.c_str() + begin;
  char* end = nullptr;
  double value = std::strtod(start, &end);
  if (end == start || !std::isfinite(value) || value < 0) return std::nullopt;
  while (*end == ' ' || *end == '\t') ++end;
  if (*end != '\0') return std::nullopt;
  return value;
}

}  // namespace

bool IsRetryableStatus(long status) {
  switch (status) {
    case 408:
    case 429:
    case 500:
    case 502:
    case 503:
    case 504:
      return true;
    default:
      return false;
  }
}

std::optional<double> RetryAfterSeconds(const std::string& retry_after,
                                        const std::string& retry_after_ms, std::time_t now) {
  if (auto ms = ParseNumber(retry_after_ms)) return *ms / 1000.0;
  if (auto seconds = ParseNumber(retry_after)) return *seconds;
  if (retry_after.find_first_not_of(" \t") == std::string::npos) return std::nullopt;
  std::time_t when = curl_getdate(retry_after.c_str(), nullptr);
  if (when == -1) return std::nullopt;
  return std::max<double>(0, std::difftime(when, now));
}

std::chrono::milliseconds BackoffDelay(const LlmConfig& config, int retry,
                                       std::optional<double> retry_after_seconds,
                                       double uniform01) {
  double seconds;
  if (retry_after_seconds) {
    seconds = std::min(*retry_after_seconds, config.backoff_max_seconds);
  } else {
    double ceiling = config.backoff_initial_seconds * std::ldexp(1.0, std::min(retry, 62));
    seconds = std::clamp(uniform01, 0.0, 1.0) * std::min(ceiling, config.backoff_max_seconds);
  }
  return std::chrono::milliseconds(std::llround(seconds * 1000));
}

}  // namespace sbx::llm
