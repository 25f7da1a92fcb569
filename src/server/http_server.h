// The server's HTTP/1.1 transport: accepts on the listeners, one thread per connection (at
// most `max_connections`; the next waits in the kernel's backlog), parses each request with
// Boost.Beast within bounds, authenticates it and hands it to the handler. It knows nothing
// of sessions; the handler knows nothing of sockets except the disconnect watch.
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "base/error.h"
#include "base/unique_fd.h"
#include "src/server/api_error.h"
#include "src/server/disconnect_watch.h"
#include "src/server/listener.h"

namespace sbx::server {

// A response a handler sends in pieces while it works (chunked transfer encoding): the first
// Write sends the head (200, `content_type`), each Write one chunk, and what the handler then
// returns is the last piece. Write is false once the client cannot take more (gone, or not
// reading within the read timeout); the handler should stop its work then.
class ChunkedResponse {
 public:
  using Send = std::function<bool(std::string_view)>;
  ChunkedResponse(Send send, bool keep_alive) : send_(std::move(send)), keep_alive_(keep_alive) {}
  bool Write(std::string_view data, const std::string& content_type);
  // Ends the response with `last` as its final chunk; false if it could not be sent.
  bool Finish(std::string_view last);
  bool started() const { return started_; }
  bool failed() const { return failed_; }

 private:
  bool SendChunk(std::string_view data);
  Send send_;
  bool keep_alive_;
  bool started_ = false;
  bool failed_ = false;
};

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string target;  // the path with its query, as sent
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
  int connection_fd = -1;  // for DisconnectWatch only: the transport owns the socket
  ChunkedResponse* chunked = nullptr;  // for handlers that stream their answer
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  static HttpResponse Json(int status, std::string body);
  static HttpResponse FromError(const ApiError& error);
};

struct HttpServerOptions {
  std::vector<ListenAddress> listen;
  std::string token;  // empty: none (refused with a TCP listener before we get here)
  size_t max_connections = 256;
  size_t max_head_bytes = 16 * 1024;
  size_t max_json_body_bytes = 64u << 20;
  size_t max_upload_bytes = 1u << 30;  // PUT of files and workspaces
  double read_timeout_seconds = 30;    // a request's head and body, each read
  double keep_alive_seconds = 60;      // between requests on one connection
};

using HttpHandler = std::function<HttpResponse(HttpRequest&)>;

class HttpServer {
 public:
  // Opens every listener (all or nothing).
  static Result<std::unique_ptr<HttpServer>> Create(HttpServerOptions options, HttpHandler handler);
  ~HttpServer();

  // Starts accepting on threads of their own.
  void Start();
  // Stops accepting, closes idle connections, lets each request in progress finish and answer
  // (with "Connection: close"), and returns once every connection is gone. Idempotent.
  void Drain();
  // The port of the first TCP listener (tests listen on port 0).
  std::optional<int> tcp_port() const;

 private:
  struct Connection {
    UniqueFd fd;
    bool busy = false;
    bool is_unix = false;
  };
  HttpServer(HttpServerOptions options, HttpHandler handler)
      : options_(std::move(options)), handler_(std::move(handler)) {}
  void AcceptLoop(size_t listener);
  void Serve(std::shared_ptr<Connection> connection);
  std::optional<ApiError> Authenticate(const Connection& connection, const HttpRequest& request) const;
  bool SetBusy(Connection& connection, bool busy);

  HttpServerOptions options_;
  HttpHandler handler_;
  std::vector<UniqueFd> listeners_;
  std::vector<ListenAddress> opened_;  // removed at Drain: never a socket another server owns
  std::vector<std::thread> acceptors_;
  UniqueFd stop_;  // an eventfd: readable once draining begins

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::shared_ptr<Connection>> connections_;
  bool draining_ = false;
};

}  // namespace sbx::server
