// Accept loops, per-connection request loops with Beast, authentication and draining.
#include "src/server/http_server.h"

#include <malloc.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <boost/asio/buffer.hpp>
#include <boost/asio/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <cerrno>
#include <chrono>
#include <cstdio>

namespace sbx::server {
namespace {

namespace http = boost::beast::http;
using boost::system::error_code;

// A blocking socket as a Beast SyncStream whose every read and write gives up after a
// deadline: a client that stops sending mid-request cannot hold a thread forever. (Asio's own
// sync socket waits without limit even with SO_RCVTIMEO.)
class DeadlineStream {
 public:
  DeadlineStream(int fd, double timeout_seconds)
      : fd_(fd), timeout_ms_(static_cast<int>(timeout_seconds * 1000)) {}

  template <class Buffers>
  size_t read_some(const Buffers& buffers, error_code& ec) {
    ec = {};
    auto buffer = FirstNonEmpty<boost::asio::mutable_buffer>(buffers);
    if (buffer.size() == 0) return 0;
    ssize_t n =
        Retry(POLLIN, ec, [&] { return ::recv(fd_, buffer.data(), buffer.size(), MSG_DONTWAIT); });
    if (n == 0 && !ec) ec = boost::asio::error::eof;
    return n > 0 ? static_cast<size_t>(n) : 0;
  }
  template <class Buffers>
  size_t write_some(const Buffers& buffers, error_code& ec) {
    ec = {};
    // All of the buffers (a response's head and body) in one sendmsg: one wake-up of the client.
    iovec iov[kMaxIovecs];
    msghdr message{};
    message.msg_iov = iov;
    for (auto it = boost::asio::buffer_sequence_begin(buffers);
         it != boost::asio::buffer_sequence_end(buffers) && message.msg_iovlen < kMaxIovecs; ++it) {
      boost::asio::const_buffer buffer(*it);
      if (buffer.size() == 0) continue;
      iov[message.msg_iovlen++] = {const_cast<void*>(buffer.data()), buffer.size()};
    }
    if (message.msg_iovlen == 0) return 0;
    ssize_t n =
        Retry(POLLOUT, ec, [&] { return ::sendmsg(fd_, &message, MSG_DONTWAIT | MSG_NOSIGNAL); });
    return n > 0 ? static_cast<size_t>(n) : 0;
  }
  template <class Buffers>
  size_t read_some(const Buffers& buffers) {
    error_code ec;
    size_t n = read_some(buffers, ec);
    if (ec) throw boost::system::system_error(ec);
    return n;
  }
  template <class Buffers>
  size_t write_some(const Buffers& buffers) {
    error_code ec;
    size_t n = write_some(buffers, ec);
    if (ec) throw boost::system::system_error(ec);
    return n;
  }

 private:
  template <class Buffer, class Buffers>
  static Buffer FirstNonEmpty(const Buffers& buffers) {
    for (auto it = boost::asio::buffer_sequence_begin(buffers);
         it != boost::asio::buffer_sequence_end(buffers); ++it) {
      Buffer buffer(*it);
      if (buffer.size() > 0) return buffer;
    }
    return Buffer();
  }
  // Calls `io` (non-blocking) and, only when it would block, waits for `events` and calls it
  // again: the common case is one system call, not a poll and then the call.
  template <class Io>
  ssize_t Retry(short events, error_code& ec, Io io) {
    while (true) {
      ssize_t n = io();
      if (n >= 0) return n;
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        ec = error_code(errno, boost::system::system_category());
        return -1;
      }
      if (!Wait(events, ec)) return -1;
    }
  }
  bool Wait(short events, error_code& ec) {
    pollfd fd{fd_, events, 0};
    int ready = ::poll(&fd, 1, timeout_ms_);
    if (ready == 0) ec = boost::asio::error::timed_out;
    if (ready < 0) ec = error_code(errno, boost::system::system_category());
    return ready > 0;
  }

  static constexpr size_t kMaxIovecs = 16;
  int fd_;
  int timeout_ms_;
};

// Equal strings in time that depends only on `given`'s length, never on where they differ.
bool TokensEqual(const std::string& given, const std::string& expected) {
  unsigned char difference = given.size() == expected.size() ? 0 : 1;
  for (size_t i = 0; i < given.size(); ++i) {
    difference |= static_cast<unsigned char>(given[i] ^ expected[expected.empty() ? 0 : i % expected.size()]);
  }
  return difference == 0 && !expected.empty();
}

bool IsUpload(const std::string& method, const std::string& target) {
  if (method != "PUT") return false;
  std::string path = target.substr(0, target.find('?'));
  return path.find("/files/") != std::string::npos ||
         (path.size() >= 10 && path.compare(path.size() - 10, 10, "/workspace") == 0);
}

// Waits until `fd` has a byte to read or `stop` fires; false on stop, timeout or hang-up.
bool WaitForRequest(int fd, int stop, double timeout_seconds) {
  pollfd fds[2] = {{fd, POLLIN, 0}, {stop, POLLIN, 0}};
  int ready = ::poll(fds, 2, static_cast<int>(timeout_seconds * 1000));
  return ready > 0 && (fds[1].revents & POLLIN) == 0 && (fds[0].revents & POLLIN) != 0;
}

void WriteResponse(DeadlineStream& stream, const HttpResponse& response, bool keep_alive) {
  http::response<http::string_body> message;
  message.version(11);
  message.result(http::int_to_status(static_cast<unsigned>(response.status)));
  message.set(http::field::server, "sbx");
  message.set(http::field::content_type, response.content_type);
  for (const auto& [name, value] : response.headers) message.set(name, value);
  message.body() = response.body;
  message.keep_alive(keep_alive);
  message.prepare_payload();
  error_code ec;
  http::write(stream, message, ec);
}

// All of `data`, however many writes it takes, within the stream's deadline per write.
bool SendAll(DeadlineStream& stream, std::string_view data) {
  while (!data.empty()) {
    error_code ec;
    const size_t sent = stream.write_some(boost::asio::buffer(data.data(), data.size()), ec);
    if (ec) return false;
    data.remove_prefix(sent);
  }
  return true;
}

}  // namespace

bool ChunkedResponse::Write(std::string_view data, const std::string& content_type) {
  if (failed_) return false;
  if (!started_) {
    started_ = true;
    std::string head = "HTTP/1.1 200 OK\r\nServer: sbx\r\nContent-Type: " + content_type +
                       "\r\nTransfer-Encoding: chunked\r\nCache-Control: no-store\r\n";
    if (!keep_alive_) head += "Connection: close\r\n";
    failed_ = !send_(head + "\r\n");
    if (failed_) return false;
  }
  return SendChunk(data);
}

bool ChunkedResponse::Finish(std::string_view last) {
  if (!SendChunk(last)) return false;
  failed_ = !send_("0\r\n\r\n");
  return !failed_;
}

bool ChunkedResponse::SendChunk(std::string_view data) {
  if (failed_) return false;
  if (data.empty()) return true;  // an empty chunk would end the response
  char size[24];
  const int length = std::snprintf(size, sizeof size, "%zx\r\n", data.size());
  std::string chunk;
  chunk.reserve(static_cast<size_t>(length) + data.size() + 2);
  chunk.append(size, static_cast<size_t>(length)).append(data).append("\r\n");
  failed_ = !send_(chunk);
  return !failed_;
}

HttpResponse HttpResponse::Json(int status, std::string body) {
  HttpResponse response;
  response.status = status;
  response.body = std::move(body);
  return response;
}

HttpResponse HttpResponse::FromError(const ApiError& error) {
  HttpResponse response = Json(error.status, ApiErrorJson(error));
  if (error.retry_after_seconds > 0) {
    response.headers.emplace_back("Retry-After", std::to_string(error.retry_after_seconds));
  }
  return response;
}

Result<std::unique_ptr<HttpServer>> HttpServer::Create(HttpServerOptions options, HttpHandler handler) {
  std::unique_ptr<HttpServer> server(new HttpServer(std::move(options), std::move(handler)));
  server->stop_ = UniqueFd(::eventfd(0, EFD_CLOEXEC));
  if (!server->stop_) return SysError(ErrorCode::kIo, "eventfd");
  for (const ListenAddress& address : server->options_.listen) {
    auto fd = OpenListener(address);
    if (!fd) return fd.error();  // the destructor removes the sockets opened so far
    server->listeners_.push_back(std::move(*fd));
    server->opened_.push_back(address);
  }
  return server;
}

HttpServer::~HttpServer() { Drain(); }

void HttpServer::Start() {
  for (size_t i = 0; i < listeners_.size(); ++i) acceptors_.emplace_back([this, i] { AcceptLoop(i); });
}

std::optional<int> HttpServer::tcp_port() const {
  for (size_t i = 0; i < listeners_.size(); ++i) {
    if (options_.listen[i].kind != ListenAddress::Kind::kTcp) continue;
    if (auto port = BoundTcpPort(listeners_[i].get())) return *port;
  }
  return std::nullopt;
}

void HttpServer::AcceptLoop(size_t listener) {
  const bool is_unix = options_.listen[listener].kind == ListenAddress::Kind::kUnix;
  while (true) {
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [&] { return draining_ || connections_.size() < options_.max_connections; });
      if (draining_) return;
    }
    pollfd fds[2] = {{listeners_[listener].get(), POLLIN, 0}, {stop_.get(), POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) continue;
    if (fds[1].revents != 0) return;
    UniqueFd fd(::accept4(listeners_[listener].get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!fd) continue;
    auto connection = std::make_shared<Connection>();
    connection->fd = std::move(fd);
    connection->is_unix = is_unix;
    std::lock_guard lock(mutex_);
    if (draining_) return;
    connections_.push_back(connection);
    std::thread([this, connection] { Serve(connection); }).detach();
  }
}

bool HttpServer::SetBusy(Connection& connection, bool busy) {
  std::lock_guard lock(mutex_);
  connection.busy = busy;
  return !draining_;
}

std::optional<ApiError> HttpServer::Authenticate(const Connection& connection,
                                                 const HttpRequest& request) const {
  if (connection.is_unix) {
    auto uid = PeerUid(connection.fd.get());
    if (!uid || (*uid != ::geteuid() && *uid != 0)) {
      return PermissionDenied("only the server's own user (uid " + std::to_string(::geteuid()) +
                              ") and root may use this socket");
    }
  }
  if (options_.token.empty()) return std::nullopt;
  std::string given;
  if (auto it = request.headers.find("x-sbx-token"); it != request.headers.end()) given = it->second;
  if (auto it = request.headers.find("authorization"); given.empty() && it != request.headers.end()) {
    if (it->second.rfind("Bearer ", 0) == 0) given = it->second.substr(7);
  }
  if (TokensEqual(given, options_.token)) return std::nullopt;
  ApiError error{401, "unauthorized",
                 "a missing or wrong token: send \"Authorization: Bearer TOKEN\" or \"X-Sbx-Token: "
                 "TOKEN\" with the token of the server's --token-file"};
  return error;
}

void HttpServer::Serve(std::shared_ptr<Connection> connection) {
  const int fd = connection->fd.get();
  DeadlineStream stream(fd, options_.read_timeout_seconds);
  boost::beast::flat_buffer buffer;
  bool keep_going = true;
  while (keep_going) {
    if (buffer.size() == 0 && !WaitForRequest(fd, stop_.get(), options_.keep_alive_seconds)) break;
    if (!SetBusy(*connection, true) && buffer.size() == 0) break;
    http::request_parser<http::string_body> parser;
    parser.header_limit(static_cast<uint32_t>(options_.max_head_bytes));
    parser.body_limit(options_.max_upload_bytes);
    error_code ec;
    http::read_header(stream, buffer, parser, ec);
    std::optional<ApiError> refused;
    if (ec == http::error::header_limit) {
      refused = ApiError{413, "too_large", "the request head is over " +
                                               std::to_string(options_.max_head_bytes) + " bytes"};
    } else if (ec) {
      if (ec != boost::asio::error::eof && ec != http::error::end_of_stream) {
        refused = Invalid("malformed HTTP request: " + ec.message());
      }
      if (!refused) break;
    }
    HttpRequest request;
    if (!refused) {
      const auto& head = parser.get();
      request.method = std::string(head.method_string());
      request.target = std::string(head.target());
      const size_t limit = IsUpload(request.method, request.target) ? options_.max_upload_bytes
                                                                     : options_.max_json_body_bytes;
      if (parser.content_length() && *parser.content_length() > limit) {
        refused = ApiError{413, "too_large", "the body is over " + std::to_string(limit) + " bytes"};
      } else {
        parser.body_limit(limit);
        http::read(stream, buffer, parser, ec);
        if (ec == http::error::body_limit) {
          refused = ApiError{413, "too_large", "the body is over " + std::to_string(limit) + " bytes"};
        } else if (ec) {
          refused = Invalid("malformed HTTP request body: " + ec.message());
        }
      }
    }
    HttpResponse response;
    if (refused) {
      response = HttpResponse::FromError(*refused);
      keep_going = false;
    } else {
      for (const auto& field : parser.get()) {
        std::string name(field.name_string());
        for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        request.headers[name] = std::string(field.value());
      }
      request.body = std::move(parser.get().body());
      request.connection_fd = fd;
      keep_going = parser.get().keep_alive();
      ChunkedResponse chunked([&stream](std::string_view data) { return SendAll(stream, data); },
                              keep_going);
      request.chunked = &chunked;
      if (auto denied = Authenticate(*connection, request)) {
        response = HttpResponse::FromError(*denied);
      } else {
        response = handler_(request);
      }
      if (chunked.started()) {
        // The head went out with the first piece: the rest of the answer ends the chunks, and a
        // connection that stopped taking them cannot carry another request.
        const bool finished = chunked.Finish(response.body);
        if (!SetBusy(*connection, false) || !finished) keep_going = false;
        continue;
      }
    }
    if (!SetBusy(*connection, false)) keep_going = false;
    WriteResponse(stream, response, keep_going);
  }
  ::shutdown(fd, SHUT_RDWR);
  {
    std::lock_guard lock(mutex_);
    std::erase(connections_, connection);
    changed_.notify_all();
  }
  // What this connection's requests allocated (a flooded cell's reply is several MiB, parsed
  // and serialised again) is free now, but glibc keeps freed memory in its arenas, one per
  // thread that allocated at the same time: a server that once answered a few floods would
  // hold tens of MiB while idle. Given back at each connection's end, its RSS follows what it
  // holds.
  ::malloc_trim(0);
}

void HttpServer::Drain() {
  {
    std::lock_guard lock(mutex_);
    if (draining_ && acceptors_.empty()) return;
    draining_ = true;
  }
  uint64_t one = 1;
  if (::write(stop_.get(), &one, sizeof(one)) < 0) {
    // Never fails short of overflow, which would leave it readable anyway.
  }
  changed_.notify_all();
  for (auto& acceptor : acceptors_) acceptor.join();
  acceptors_.clear();
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return connections_.empty(); });
  lock.unlock();
  for (const ListenAddress& address : opened_) RemoveUnixSocket(address);
  opened_.clear();
  listeners_.clear();
}

}  // namespace sbx::server
