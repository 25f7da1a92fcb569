// When a failed chat request is worth another attempt, and how long to wait before it.
//
// Pure functions of their inputs (the clock and the dice are passed in), so the schedule is
// unit-tested without waiting. The client owns the loop; this file owns the numbers.
#pragma once

#include <chrono>
#include <ctime>
#include <optional>
#include <string>

#include "src/llm/llm_config.h"

namespace sbx::llm {

// 408, 429, 500, 502, 503 and 504: the server is busy, rate-limiting or briefly down. Other
// statuses (400, 401, 403, 404, ...) will fail the same way again.
bool IsRetryableStatus(long status);

// The server's wait hint in seconds: `retry-after-ms` (OpenAI's) when present and valid, else
// `Retry-After` as delta-seconds or an HTTP-date relative to `now`. nullopt when neither
// parses; a date in the past is 0.
std::optional<double> RetryAfterSeconds(const std::string& retry_after,
                                        const std::string& retry_after_ms, std::time_t now);

// The wait before retry number `retry` (0 for the first retry). A server hint is honoured,
// capped at backoff_max_seconds. Otherwise "full jitter": uniform01 (in [0, 1)) times
// min(backoff_max_seconds, backoff_initial_seconds * 2^retry), so clients that failed
// together do not retry together.
std::chrono::milliseconds BackoffDelay(const LlmConfig& config, int retry,
                                       std::optional<double> retry_after_seconds, double uniform01);

}  // namespace sbx::llm
