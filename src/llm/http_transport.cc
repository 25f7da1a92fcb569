// The libcurl side of a chat request: options, callbacks, and the reading of curl's result.
#include "src/llm/http_transport.h"

#include <strings.h>

#include "src/llm/sigpipe_guard.h"

namespace sbx::llm {
namespace {

struct SlistDeleter {
  void operator()(curl_slist* list) const { curl_slist_free_all(list); }
};

// Where the callbacks write while a transfer runs.
struct Sink {
  HttpReply* reply;
  size_t max_bytes;
  bool too_large = false;
};

Result<void> GlobalInitOnce() {
  static CURLcode code = curl_global_init(CURL_GLOBAL_DEFAULT);
  if (code != CURLE_OK)
    return MakeError(ErrorCode::kUnavailable,
                     std::string("curl_global_init: ") + curl_easy_strerror(code));
  return Ok{};
}

size_t OnBody(char* data, size_t size, size_t count, void* user) {
  auto* sink = static_cast<Sink*>(user);
  size_t bytes = size * count;
  if (sink->reply->body.size() + bytes > sink->max_bytes) {
    sink->too_large = true;
    return 0;  // curl stops the transfer with CURLE_WRITE_ERROR
  }
  sink->reply->body.append(data, bytes);
  return bytes;
}

// Sets `value` and returns true when `line` is "name: value\r\n" (name case-insensitive).
bool HeaderValue(const std::string& line, const char* name, std::string& value) {
  size_t length = std::char_traits<char>::length(name);
  if (line.size() <= length || line[length] != ':' || strncasecmp(line.c_str(), name, length))
    return false;
  size_t begin = line.find_first_not_of(" \t", length + 1);
  size_t end = line.find_last_not_of(" \t\r\n");
  value = begin == std::string::npos || end < begin ? "" : line.substr(begin, end - begin + 1);
  return true;
}

size_t OnHeader(char* data, size_t size, size_t count, void* user) {
  auto* reply = static_cast<Sink*>(user)->reply;
  std::string line(data, size * count);
  if (line.starts_with("HTTP/")) {  // a new response (after 100 Continue): forget the old one
    reply->retry_after.clear();
    reply->retry_after_ms.clear();
  }
  if (!HeaderValue(line, "retry-after", reply->retry_after))
    HeaderValue(line, "retry-after-ms", reply->retry_after_ms);
  return size * count;
}

TransportFailure Classify(CURLcode code) {
  switch (code) {
    case CURLE_OK:
      return TransportFailure::kNone;
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
      return TransportFailure::kConnect;
    case CURLE_OPERATION_TIMEDOUT:
      return TransportFailure::kTimeout;
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_SSL_CONNECT_ERROR:  // also a reset during the handshake
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
      return TransportFailure::kBroken;
    default:
      return TransportFailure::kOther;
  }
}

}  // namespace

void HttpTransport::CurlDeleter::operator()(CURL* handle) const { curl_easy_cleanup(handle); }

HttpTransport::HttpTransport() = default;
HttpTransport::~HttpTransport() = default;

Result<HttpReply> HttpTransport::Send(const HttpPost& post) {
  SBX_TRY(GlobalInitOnce());
  if (!curl_) curl_.reset(curl_easy_init());
  if (!curl_) return MakeError(ErrorCode::kUnavailable, "curl_easy_init failed");
  CURL* curl = curl_.get();

  std::unique_ptr<curl_slist, SlistDeleter> headers;
  for (const std::string& header : post.headers) {
    curl_slist* list = curl_slist_append(headers.get(), header.c_str());
    if (!list) return MakeError(ErrorCode::kInternal, "curl_slist_append failed");
    if (!headers) headers.reset(list);  // later appends extend the same list in place
  }
  HttpReply reply;
  Sink sink{&reply, post.max_response_bytes};
  char error_buffer[CURL_ERROR_SIZE] = {};

  curl_easy_setopt(curl, CURLOPT_URL, post.url.c_str());
#if LIBCURL_VERSION_NUM >= 0x075500
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
#endif
  curl_easy_setopt(curl, CURLOPT_POST, 1L);
  curl_easy_setopt(curl, CURLOPT_POSTFIELDS, post.body.data());
  curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(post.body.size()));
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(curl, CURLOPT_USERAGENT, "sbx/" SBX_VERSION);
  curl_easy_setopt(curl, CURLOPT_ACCEPT_ENCODING, "");  // whatever curl can decode
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, post.connect_timeout_ms);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, post.timeout_ms);
  // Timeouts must not use SIGALRM: this runs in a multi-threaded process.
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, OnBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &sink);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, OnHeader);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &sink);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error_buffer);

  CURLcode code;
  {
    SigpipeGuard no_sigpipe;
    code = curl_easy_perform(curl);
  }
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &reply.status);
  // The header list, body and error buffer die with this frame; the handle outlives them.
  // Reset drops every option but keeps the connection cache for the next call.
  curl_easy_reset(curl);
  if (code != CURLE_OK) {
    reply.failure = sink.too_large ? TransportFailure::kTooLarge : Classify(code);
    reply.failure_text = error_buffer[0] ? error_buffer : curl_easy_strerror(code);
    if (sink.too_large) {
      reply.failure_text =
          "the response is larger than " + std::to_string(post.max_response_bytes) + " bytes";
    }
  }
  return reply;
}

}  // namespace sbx::llm
