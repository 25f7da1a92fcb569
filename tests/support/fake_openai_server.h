// FakeOpenAiServer: a real HTTP/1.1 server on loopback that tests script, for LLM clients.
//
// Usage:
//   1. FakeOpenAiServer server;
//      server.Enqueue(FakeResponse::Json(200, TextCompletionBody("hi")));  // one per request
//   2. ASSERT_TRUE(server.Start());  // 127.0.0.1, an ephemeral port, a thread of its own
//   3. Point the client at server.base_url() ("http://127.0.0.1:PORT/v1") and run it.
//   4. Assert on server.requests(): method, path, headers and body of each request, in order.
//   Stop() (or the destructor) wakes and joins the thread; no call blocks for long.
//
// Each connection carries one request and gets one scripted response with Content-Length and
// "Connection: close", then is closed. Faults are scripted the same way: a delay (cut short
// when the client hangs up), a close before any response, or a body cut short of its
// Content-Length. When the script runs out, requests get a 500 saying so.
#pragma once

#include <atomic>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/unique_fd.h"

namespace sbx::testing {

using HeaderList = std::vector<std::pair<std::string, std::string>>;

struct RecordedRequest;

struct FakeResponse {
  int status = 200;
  std::string content_type = "application/json";
  HeaderList headers;  // sent after the standard ones, e.g. {"Retry-After", "2"}
  std::string body;
  // When set, the body is computed from the request (e.g. a server echoing headers back).
  std::function<std::string(const RecordedRequest &)> body_from_request;
  int delay_ms = 0;                        // wait this long before answering
  bool close_without_response = false;     // read the request, then hang up
  std::optional<size_t> truncate_body_at;  // send only this many body bytes, then hang up

  static FakeResponse Json(int status, std::string body);
  static FakeResponse Text(int status, std::string body);  // text/html, like a proxy's page
  static FakeResponse Hangup();                            // close_without_response
  FakeResponse WithHeader(std::string name, std::string value) &&;
  FakeResponse WithDelay(int milliseconds) &&;
  FakeResponse TruncatedAt(size_t bytes) &&;
};

struct RecordedRequest {
  std::string method;
  std::string path;  // as sent, e.g. "/v1/chat/completions"
  HeaderList headers;
  std::string body;

  // The first header with this name (case-insensitive), or nullopt.
  std::optional<std::string> Header(const std::string &name) const;
  // The body parsed as JSON; a discarded value (is_discarded()) when it is not JSON.
  nlohmann::json JsonBody() const;
};

class FakeOpenAiServer {
 public:
  FakeOpenAiServer() = default;
  ~FakeOpenAiServer();
  FakeOpenAiServer(const FakeOpenAiServer &) = delete;
  FakeOpenAiServer &operator=(const FakeOpenAiServer &) = delete;

  // Adds a response to the script; may be called before or after Start().
  void Enqueue(FakeResponse response);
  // Listens on 127.0.0.1 on an ephemeral port and serves on a thread of its own.
  Result<void> Start();
  // Wakes the thread (also out of a scripted delay) and joins it. Idempotent.
  void Stop();

  int port() const { return port_; }
  std::string base_url() const;  // "http://127.0.0.1:PORT/v1"
  std::vector<RecordedRequest> requests() const;
  size_t unused_responses() const;

 private:
  void Serve();
  void HandleConnection(int connection);
  FakeResponse NextResponse();

  UniqueFd listener_;
  UniqueFd stop_event_;  // an eventfd written by Stop()
  int port_ = 0;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  mutable std::mutex mutex_;
  std::deque<FakeResponse> script_;
  std::vector<RecordedRequest> requests_;
};

// A loopback port nothing listens on (bound, then released), for connection-refused tests.
int UnusedLoopbackPort();

}  // namespace sbx::testing
