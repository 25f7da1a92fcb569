// The scripted loopback HTTP server: accept, read one request, answer from the script, close.
#include "tests/support/fake_openai_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

namespace sbx::testing {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kRequestTimeoutMs = 5000;  // a test's client sends at once; never wait longer
constexpr size_t kMaxHeaderBytes = 64 << 10;
constexpr size_t kMaxBodyBytes = 64 << 20;

// Polls `fd` for `events` and the stop eventfd; true only when `fd` is ready.
bool WaitFor(int fd, short events, int stop_fd, int timeout_ms) {
  pollfd fds[2] = {{fd, events, 0}, {stop_fd, POLLIN, 0}};
  auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    int ready = poll(fds, 2, static_cast<int>(std::max<int64_t>(0, left.count())));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0 || fds[1].revents) return false;
    return fds[0].revents != 0;
  }
}

// Appends what the peer sends next; false on stop, timeout, EOF or error.
bool ReadSome(int fd, int stop_fd, Clock::time_point deadline, std::string& data) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  if (left.count() <= 0 || !WaitFor(fd, POLLIN, stop_fd, static_cast<int>(left.count())))
    return false;
  char buffer[64 << 10];
  ssize_t got;
  do {
    got = read(fd, buffer, sizeof(buffer));
  } while (got < 0 && errno == EINTR);
  if (got <= 0) return false;
  data.append(buffer, static_cast<size_t>(got));
  return true;
}

bool WriteAll(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t sent = send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (sent < 0 && errno == EINTR) continue;
    if (sent <= 0) return false;  // the client gave up (timeout) or SO_SNDTIMEO expired
    done += static_cast<size_t>(sent);
  }
  return true;
}

bool SameName(const std::string& a, const std::string& b) {
  return a.size() == b.size() && strncasecmp(a.c_str(), b.c_str(), a.size()) == 0;
}

std::string Trim(const std::string& text) {
  size_t begin = text.find_first_not_of(" \t");
  if (begin == std::string::npos) return "";
  return text.substr(begin, text.find_last_not_of(" \t") - begin + 1);
}

// Reads one request: request line, headers, and a Content-Length body.
std::optional<RecordedRequest> ReadRequest(int fd, int stop_fd) {
  auto deadline = Clock::now() + std::chrono::milliseconds(kRequestTimeoutMs);
  std::string data;
  size_t header_end;
  while ((header_end = data.find("\r\n\r\n")) == std::string::npos) {
    if (data.size() > kMaxHeaderBytes || !ReadSome(fd, stop_fd, deadline, data))
      return std::nullopt;
  }
  RecordedRequest request;
  size_t line_end = data.find("\r\n");
  std::string request_line = data.substr(0, line_end);
  size_t first_space = request_line.find(' ');
  size_t second_space = request_line.find(' ', first_space + 1);
  if (first_space == std::string::npos || second_space == std::string::npos) return std::nullopt;
  request.method = request_line.substr(0, first_space);
  request.path = request_line.substr(first_space + 1, second_space - first_space - 1);
  for (size_t at = line_end + 2; at < header_end;) {
    size_t end = data.find("\r\n", at);
    std::string line = data.substr(at, end - at);
    at = end + 2;
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    request.headers.emplace_back(line.substr(0, colon), Trim(line.substr(colon + 1)));
  }
  if (auto expect = request.Header("Expect"); expect && SameName(*expect, "100-continue"))
    WriteAll(fd, "HTTP/1.1 100 Continue\r\n\r\n");
  size_t length = 0;
  if (auto value = request.Header("Content-Length"))
    length = std::strtoull(value->c_str(), nullptr, 10);
  if (length > kMaxBodyBytes) return std::nullopt;
  request.body = data.substr(header_end + 4);
  while (request.body.size() < length) {
    if (!ReadSome(fd, stop_fd, deadline, request.body)) return std::nullopt;
  }
  request.body.resize(length);
  return request;
}

std::string Serialize(const FakeResponse& response) {
  // Clients read the code, not the reason phrase.
  std::string wire = "HTTP/1.1 " + std::to_string(response.status) + " Scripted\r\n";
  wire += "Content-Type: " + response.content_type + "\r\n";
  wire += "Content-Length: " + std::to_string(response.body.size()) + "\r\n";
  wire += "Connection: close\r\n";
  for (const auto& [name, value] : response.headers) wire += name + ": " + value + "\r\n";
  wire += "\r\n";
  size_t body_bytes = std::min(response.body.size(), response.truncate_body_at.value_or(SIZE_MAX));
  wire.append(response.body, 0, body_bytes);
  return wire;
}

}  // namespace

FakeResponse FakeResponse::Json(int status, std::string body) {
  FakeResponse response;
  response.status = status;
  response.body = std::move(body);
  return response;
}

FakeResponse FakeResponse::Text(int status, std::string body) {
  FakeResponse response = Json(status, std::move(body));
  response.content_type = "text/html";
  return response;
}

FakeResponse FakeResponse::Hangup() {
  FakeResponse response;
  response.close_without_response = true;
  return response;
}

FakeResponse FakeResponse::WithHeader(std::string name, std::string value) && {
  headers.emplace_back(std::move(name), std::move(value));
  return std::move(*this);
}

FakeResponse FakeResponse::WithDelay(int milliseconds) && {
  delay_ms = milliseconds;
  return std::move(*this);
}

FakeResponse FakeResponse::TruncatedAt(size_t bytes) && {
  truncate_body_at = bytes;
  return std::move(*this);
}

std::optional<std::string> RecordedRequest::Header(const std::string& name) const {
  for (const auto& [key, value] : headers) {
    if (SameName(key, name)) return value;
  }
  return std::nullopt;
}

nlohmann::json RecordedRequest::JsonBody() const {
  return nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
}

FakeOpenAiServer::~FakeOpenAiServer() { Stop(); }

void FakeOpenAiServer::Enqueue(FakeResponse response) {
  std::lock_guard<std::mutex> lock(mutex_);
  script_.push_back(std::move(response));
}

Result<void> FakeOpenAiServer::Start() {
  if (thread_.joinable()) return MakeError(ErrorCode::kInternal, "fake server: already started");
  listener_.reset(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!listener_) return SysError(ErrorCode::kIo, "fake server: socket");
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  if (bind(listener_.get(), reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      listen(listener_.get(), 16) != 0 ||
      getsockname(listener_.get(), reinterpret_cast<sockaddr*>(&address), &length) != 0)
    return SysError(ErrorCode::kIo, "fake server: bind/listen on 127.0.0.1");
  port_ = ntohs(address.sin_port);
  stop_event_.reset(eventfd(0, EFD_CLOEXEC));
  if (!stop_event_) return SysError(ErrorCode::kIo, "fake server: eventfd");
  thread_ = std::thread(&FakeOpenAiServer::Serve, this);
  return Ok{};
}

void FakeOpenAiServer::Stop() {
  if (!thread_.joinable()) return;
  stopping_ = true;
  uint64_t one = 1;
  // An eventfd write of 8 bytes cannot be short; it stays readable, so every wait ends.
  while (write(stop_event_.get(), &one, sizeof(one)) < 0 && errno == EINTR) {
  }
  thread_.join();
}

std::string FakeOpenAiServer::base_url() const {
  return "http://127.0.0.1:" + std::to_string(port_) + "/v1";
}

std::vector<RecordedRequest> FakeOpenAiServer::requests() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return requests_;
}

size_t FakeOpenAiServer::unused_responses() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return script_.size();
}

void FakeOpenAiServer::Serve() {
  while (!stopping_) {
    if (!WaitFor(listener_.get(), POLLIN, stop_event_.get(), 1000)) continue;
    UniqueFd connection(accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!connection) continue;
    timeval send_timeout{kRequestTimeoutMs / 1000, 0};
    setsockopt(connection.get(), SOL_SOCKET, SO_SNDTIMEO, &send_timeout, sizeof(send_timeout));
    HandleConnection(connection.get());
  }
}

void FakeOpenAiServer::HandleConnection(int connection) {
  auto request = ReadRequest(connection, stop_event_.get());
  if (!request) return;
  FakeResponse response = NextResponse();
  if (response.body_from_request) response.body = response.body_from_request(*request);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    requests_.push_back(std::move(*request));
  }
  // A client that times out hangs up; stop waiting then, so its retry is served at once.
  if (response.delay_ms > 0 && WaitFor(connection, POLLRDHUP, stop_event_.get(), response.delay_ms))
    return;
  if (stopping_ || response.close_without_response) return;
  WriteAll(connection, Serialize(response));
}

FakeResponse FakeOpenAiServer::NextResponse() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (script_.empty()) {
    return FakeResponse::Json(500,
                              R"({"error":{"message":"fake server: no scripted response left"}})");
  }
  FakeResponse response = std::move(script_.front());
  script_.pop_front();
  return response;
}

int UnusedLoopbackPort() {
  UniqueFd probe(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  if (!probe || bind(probe.get(), reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      getsockname(probe.get(), reinterpret_cast<sockaddr*>(&address), &length) != 0)
    return 1;                      // tcpmux: nothing listens there either
  return ntohs(address.sin_port);  // released when `probe` closes; nothing listens on it
}

}  // namespace sbx::testing
