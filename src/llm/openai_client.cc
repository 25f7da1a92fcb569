// The retry loop of a chat request and the errors it ends with.
#include "src/llm/openai_client.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <thread>

#include "src/llm/http_error.h"
#include "src/llm/retry_policy.h"
#include "src/llm/url.h"

namespace sbx::llm {
namespace {

long Milliseconds(double seconds) { return std::max(1L, std::lround(seconds * 1000)); }

std::string Attempts(int count) {
  return std::to_string(count) + (count == 1 ? " attempt" : " attempts");
}

std::string Seconds(double seconds) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f s", seconds);
  return text;
}

const char* AdviceFor(const HttpReply& reply) {
  switch (reply.failure) {
    case TransportFailure::kConnect:
      return "check OPENAI_BASE_URL and that the server is running";
    case TransportFailure::kTimeout:
      return "the server did not answer in time; try again later, or raise the timeout";
    case TransportFailure::kBroken:
      return "the server or the network dropped the connection; try again later";
    case TransportFailure::kTooLarge:
      return "no chat reply is that large; check OPENAI_BASE_URL";
    default:
      return "check OPENAI_BASE_URL";
  }
}

}  // namespace

OpenAiClient::OpenAiClient(LlmConfig config, OpenAiClientOptions options)
    : config_(std::move(config)), options_(std::move(options)), random_(std::random_device{}()) {
  std::string base_url = config_.base_url;
  while (base_url.ends_with('/')) base_url.pop_back();
  post_.url = base_url + "/chat/completions";
  // "Expect:" stops curl from waiting for a 100 Continue that many servers never send.
  post_.headers = {"Content-Type: application/json", "Accept: application/json", "Expect:"};
  if (!config_.api_key.empty()) post_.headers.push_back("Authorization: Bearer " + config_.api_key);
  post_.connect_timeout_ms = Milliseconds(config_.connect_timeout_seconds);
  post_.timeout_ms = Milliseconds(config_.request_timeout_seconds);
  post_.max_response_bytes = options_.max_response_bytes;
  if (!options_.sleep) {
    options_.sleep = [](std::chrono::milliseconds delay) { std::this_thread::sleep_for(delay); };
  }
  if (!options_.uniform01) {
    options_.uniform01 = [this] { return std::uniform_real_distribution<double>(0, 1)(random_); };
  }
}

OpenAiClient::~OpenAiClient() = default;

Result<ChatResponse> OpenAiClient::Complete(const ChatRequest& request) {
  auto response = CompleteWithRetries(request);
  if (!response) {
    // The last line of defence: whatever path built the message, the key leaves it here.
    Error error = response.error();
    error.message = Redact(error.message, config_.api_key);
    return error;
  }
  total_usage_ += response->usage;
  return response;
}

Result<ChatResponse> OpenAiClient::CompleteWithRetries(const ChatRequest& request) {
  nlohmann::json body = ChatRequestToJson(request);
  if (request.model.empty()) body["model"] = config_.model;
  post_.body = SerializeJson(body);
  const std::string where = "POST " + UrlForDisplay(post_.url);
  const int max_attempts = config_.max_retries + 1;

  for (int attempt = 1;; ++attempt) {
    auto sent = transport_.Send(post_);
    if (!sent) return sent.error().Context(where);
    HttpReply& reply = *sent;
    // The key has no business in a reply; a server that echoes it loses it here, before any
    // parser or error message quotes (and perhaps cuts) it.
    reply.body = Redact(std::move(reply.body), config_.api_key);
    const bool last = attempt >= max_attempts;
    const std::string tried = " (" + Attempts(attempt) + ")";

    if (reply.failed()) {
      std::string reason = QuoteServerText(reply.failure_text, config_.api_key);
      if (reply.retryable() && !last) {
        WaitBeforeRetry(attempt - 1, reply, reason);
        continue;
      }
      return MakeError(ErrorCode::kIo, where + tried + ": " + reason + "; " + AdviceFor(reply));
    }
    if (reply.status >= 200 && reply.status < 300) {
      auto response = ParseChatResponse(reply.body);
      if (response) return response;
      // A body cut or garbled on the way (a proxy, an overloaded server) is worth another try.
      if (!last) {
        WaitBeforeRetry(attempt - 1, reply, response.error().message);
        continue;
      }
      return response.error().Context(where + tried);
    }
    if (IsRetryableStatus(reply.status) && !last) {
      WaitBeforeRetry(attempt - 1, reply, "HTTP " + std::to_string(reply.status));
      continue;
    }
    return HttpStatusError(reply.status, reply.body, config_.api_key).Context(where + tried);
  }
}

void OpenAiClient::WaitBeforeRetry(int retry, const HttpReply& reply, const std::string& reason) {
  auto hint = RetryAfterSeconds(reply.retry_after, reply.retry_after_ms, std::time(nullptr));
  std::chrono::milliseconds delay = BackoffDelay(config_, retry, hint, options_.uniform01());
  if (options_.on_retry) {
    options_.on_retry(Redact(reason + "; retrying in " + Seconds(delay.count() / 1000.0) +
                                 " (attempt " + std::to_string(retry + 2) + " of " +
                                 std::to_string(config_.max_retries + 1) + ")",
                             config_.api_key));
  }
  options_.sleep(delay);
}

}  // namespace sbx::llm
