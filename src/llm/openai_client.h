// OpenAiClient: LlmClient over libcurl for any server that speaks OpenAI Chat Completions.
//
// Usage:
//   1. Build an LlmConfig with LoadLlmConfig (llm_config.h), which has already refused a bad
//      URL or a missing OpenAI key.
//   2. OpenAiClient client(config); then client.Complete(request) once per model turn.
//   3. client.total_usage() is the tokens spent by every successful call so far.
//
// Each Complete() POSTs `{base_url}/chat/completions` and retries, with exponential backoff
// and full jitter, on 408/429/5xx statuses and on connection failures and timeouts, honouring
// the server's Retry-After, up to max_retries. Any other failure is returned at once with the
// status, the server's message and what to do. The API key is sent only in the Authorization
// header and is redacted from every error message and retry note. Not thread-safe: use one
// client per thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <random>
#include <string>

#include "src/llm/http_transport.h"
#include "src/llm/llm_client.h"
#include "src/llm/llm_config.h"

namespace sbx::llm {

struct OpenAiClientOptions {
  // Waits between attempts; default std::this_thread::sleep_for. Tests record instead.
  std::function<void(std::chrono::milliseconds)> sleep;
  // A number in [0, 1) for the jitter; default a randomly seeded engine.
  std::function<double()> uniform01;
  // Told before each retry, e.g. "HTTP 503; retrying in 1.2 s (attempt 2 of 5)". The text
  // never contains the key. Default: nothing.
  std::function<void(const std::string&)> on_retry;
  // A larger response body is an error (a runaway or hostile server), not a memory spike.
  size_t max_response_bytes = size_t{32} << 20;
};

class OpenAiClient final : public LlmClient {
 public:
  // `config` should come from LoadLlmConfig or pass ValidateLlmConfig; a trailing slash on
  // base_url is ignored.
  explicit OpenAiClient(LlmConfig config, OpenAiClientOptions options = {});
  ~OpenAiClient() override;
  OpenAiClient(const OpenAiClient&) = delete;
  OpenAiClient& operator=(const OpenAiClient&) = delete;

  // An empty request.model means config.model. Usage of a successful call is added to
  // total_usage().
  Result<ChatResponse> Complete(const ChatRequest& request) override;

  Usage total_usage() const { return total_usage_; }
  const LlmConfig& config() const { return config_; }

 private:
  Result<ChatResponse> CompleteWithRetries(const ChatRequest& request);
  // Waits before retry number `retry` and says why; `reason` is credential-free.
  void WaitBeforeRetry(int retry, const HttpReply& reply, const std::string& reason);

  LlmConfig config_;
  OpenAiClientOptions options_;
  HttpPost post_;  // url, headers and limits; the body changes per call
  HttpTransport transport_;
  std::mt19937_64 random_;
  Usage total_usage_;
};

}  // namespace sbx::llm
