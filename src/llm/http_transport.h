// HttpTransport: one HTTP POST over libcurl with timeouts and a body cap, nothing more.
//
// It does not retry and does not interpret statuses: it reports what happened on the wire
// (a transport failure, or a status, headers of interest and a body) and whether a transport
// failure is the kind that may pass (connection refused or reset, timeout, truncated reply).
// The curl easy handle is kept between calls so a keep-alive connection is reused.
#pragma once

#include <curl/curl.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "sandbox/error.h"

namespace sbx::llm {

struct HttpPost {
  std::string url;
  std::vector<std::string> headers;  // "Name: value"
  std::string body;
  long connect_timeout_ms = 10000;
  long timeout_ms = 120000;  // the whole exchange
  size_t max_response_bytes = size_t{32} << 20;
};

struct HttpReply {
  // Transport outcome. When failed, `status` and `body` are whatever arrived (often nothing).
  bool failed = false;
  bool retryable = false;  // the failure may pass: refused, reset, timed out, truncated
  bool timed_out = false;  // connect or total timeout
  bool body_too_large = false;
  std::string failure;  // curl's words, e.g. "Failed to connect to 127.0.0.1 port 9"
  long status = 0;
  std::string body;
  std::string retry_after;     // the Retry-After header, empty when absent
  std::string retry_after_ms;  // OpenAI's retry-after-ms header
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
