// HttpTransport: one HTTP POST over libcurl with timeouts and a body cap, nothing more.
//
// It does not retry and does not interpret statuses: it reports what happened on the wire, a
// transport failure by kind or a status with the headers of interest and the body.
// The curl easy handle is kept between calls so a keep-alive connection is reused.
#pragma once

#include <curl/curl.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "base/error.h"

namespace sbx::llm {

struct HttpPost {
  std::string url;
  std::vector<std::string> headers;  // "Name: value"
  std::string body;
  long connect_timeout_ms = 10000;
  long timeout_ms = 120000;  // the whole exchange
  size_t max_response_bytes = size_t{32} << 20;
};

// What went wrong on the wire, if anything; the first three may pass on another attempt.
enum class TransportFailure {
  kNone,
  kConnect,   // refused, unreachable, or the name did not resolve
  kTimeout,   // the connect or the whole-exchange timeout expired
  kBroken,    // reset, nothing sent back, or a body cut short of its length
  kTooLarge,  // the body passed HttpPost::max_response_bytes
  kOther,     // TLS, protocol or local errors that will fail the same way again
};

struct HttpReply {
  TransportFailure failure = TransportFailure::kNone;
  std::string failure_text;  // curl's words, e.g. "Failed to connect to 127.0.0.1 port 9"
  long status = 0;           // valid when failure is kNone
  std::string body;
  std::string retry_after;     // the Retry-After header, empty when absent
  std::string retry_after_ms;  // OpenAI's retry-after-ms header

  bool failed() const { return failure != TransportFailure::kNone; }
  bool retryable() const {
    return failure == TransportFailure::kConnect || failure == TransportFailure::kTimeout ||
           failure == TransportFailure::kBroken;
  }
};

class HttpTransport {
 public:
  HttpTransport();
  ~HttpTransport();
  HttpTransport(const HttpTransport&) = delete;
  HttpTransport& operator=(const HttpTransport&) = delete;

  // Sends the POST. An Error only when curl itself cannot be set up (out of memory).
  Result<HttpReply> Send(const HttpPost& post);

 private:
  struct CurlDeleter {
    void operator()(CURL* handle) const;
  };
  std::unique_ptr<CURL, CurlDeleter> curl_;
};

}  // namespace sbx::llm
