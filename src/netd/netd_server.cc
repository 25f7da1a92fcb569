// Accepts on the capture listeners and keeps the set of live connections.
#include "src/netd/netd_server.h"

#include <sys/socket.h>

#include <chrono>
#include <string>

#include "src/netd/relay.h"

namespace sbx::netd {
namespace {

// After EMFILE/ENFILE, accepting again at once would spin: the pending connection stays.
constexpr std::chrono::milliseconds kAcceptRetry{100};

Result<int> SocketOption(int fd, int option, const char* name) {
  int value = 0;
  socklen_t length = sizeof(value);
  if (getsockopt(fd, SOL_SOCKET, option, &value, &length) != 0) {
    return SysError(ErrorCode::kInvalidInput, std::string("getsockopt(") + name + ")");
  }
  return value;
}

}  // namespace

Result<void> NetdServer::AddCapture(CaptureKind kind, uint16_t port, UniqueFd fd) {
  const std::string what = std::string(CaptureKindName(kind)) + " :" + std::to_string(port);
  if (kind == CaptureKind::kProxy && !context_.policy.proxy_env) {
    return MakeError(ErrorCode::kInvalidInput, what + ": the policy has no proxy_env");
  }
  auto type = SocketOption(fd.get(), SO_TYPE, "SO_TYPE");
  auto domain = SocketOption(fd.get(), SO_DOMAIN, "SO_DOMAIN");
  if (kind == CaptureKind::kUdpTap) {
    auto protocol = SocketOption(fd.get(), SO_PROTOCOL, "SO_PROTOCOL");
    if (!type || !domain || !protocol || (*domain != AF_INET && *domain != AF_INET6) ||
        *type != SOCK_RAW || *protocol != IPPROTO_UDP) {
      return MakeError(ErrorCode::kInvalidInput, what + ": not a raw UDP socket of a UDP tap");
    }
    for (const auto& tap : udp_taps_) {
      if (tap->family() == *domain) return MakeError(ErrorCode::kInvalidInput, what + ": a second tap of its family");
    }
    auto tap = std::make_unique<UdpTap>(io_, context_);
    SBX_TRY_CTX(tap->Start(std::move(fd), *domain), what);
    udp_taps_.push_back(std::move(tap));
    return Ok{};
  }
  auto listening = SocketOption(fd.get(), SO_ACCEPTCONN, "SO_ACCEPTCONN");
  if (!type || !domain || !listening)
    return MakeError(ErrorCode::kInvalidInput, what + ": not a socket");
  if (*domain != AF_INET && *domain != AF_INET6) {
    return MakeError(ErrorCode::kInvalidInput, what + ": not an IP socket");
  }
  if (kind == CaptureKind::kUdp) {
    if (*type != SOCK_DGRAM)
      return MakeError(ErrorCode::kInvalidInput, what + ": not a UDP socket");
    auto service = std::make_unique<DnsService>(io_, context_);
    SBX_TRY_CTX(service->Start(std::move(fd)), what);
    dns_.push_back(std::move(service));
    return Ok{};
  }
  if (*type != SOCK_STREAM || !*listening) {
    return MakeError(ErrorCode::kInvalidInput, what + ": not a listening TCP socket");
  }
  auto listener = std::make_unique<Listener>(io_, kind);
  boost::system::error_code ec;
  listener->acceptor.assign(
      *domain == AF_INET6 ? boost::asio::ip::tcp::v6() : boost::asio::ip::tcp::v4(), fd.get(), ec);
  if (ec) return MakeError(ErrorCode::kSetupFailed, what + ": " + ec.message());
  fd.release();
  listener->acceptor.non_blocking(true, ec);
  Accept(*listener);
  listeners_.push_back(std::move(listener));
  return Ok{};
}

void NetdServer::Accept(Listener& listener) {
  listener.acceptor.async_accept(
      [this, &listener](boost::system::error_code ec, boost::asio::ip::tcp::socket socket) {
        if (stopped_ || ec == boost::asio::error::operation_aborted) return;
        if (ec == boost::asio::error::no_descriptors || ec == boost::asio::error::no_buffer_space ||
            ec.value() == ENFILE || ec.value() == ENOMEM) {
          listener.retry.expires_after(kAcceptRetry);
          listener.retry.async_wait([this, &listener](boost::system::error_code timer_ec) {
            if (!timer_ec && !stopped_) Accept(listener);
          });
          return;
        }
        if (!ec) OnAccepted(std::move(socket), listener.kind);
        Accept(listener);  // ECONNABORTED and friends concern one client only
      });
}

void NetdServer::OnAccepted(boost::asio::ip::tcp::socket socket, CaptureKind kind) {
  boost::system::error_code ec;
  // The sandbox's local default route delivers every destination to the capture listener, and
  // the accepted socket's local address is the one the client connected to; unless the
  // sandbox's NAT redirected it, and then conntrack kept the original.
  const auto local = socket.local_endpoint(ec);
  auto dst = ec ? std::nullopt : EndpointFromAsio(local);
  if (dst && kind == CaptureKind::kRedirect) {
    // No NAT entry: a connection straight to the listener's own loopback port, which the
    // redirect leaves alone; its local address is its destination then.
    if (auto original = OriginalDestination(socket.native_handle(), *dst)) dst = original;
  }
  if (!dst) {
    ResetAndClose(socket);
    return;
  }
  if (dst->port == kDnsPort && kind != CaptureKind::kProxy) return ServeDnsOverTcp(std::move(socket));
  std::optional<std::string> refuse;
  if (connections_taken_ >= context_.policy.limits.max_connections ||
      connections_.size() >= kMaxOpenConnections) {
    refuse = "limit_connections";
  } else {
    ++connections_taken_;
  }
  auto connection = std::make_shared<TcpConnection>(
      context_, std::move(socket), *dst,
      [this](TcpConnection* closed) { connections_.erase(closed); }, std::move(refuse),
      kind == CaptureKind::kProxy);
  connections_.emplace(connection.get(), connection);
  connection->Start();
}

void NetdServer::ServeDnsOverTcp(boost::asio::ip::tcp::socket socket) {
  // Bounded apart from relayed connections: a resolver's retries must not use up the
  // connections the code is allowed.
  if (dns_sessions_.size() >= kDnsTcpMaxSessions) {
    ResetAndClose(socket);
    return;
  }
  auto session = std::make_shared<DnsTcpSession>(
      context_, std::move(socket), [this](DnsTcpSession* closed) { dns_sessions_.erase(closed); });
  dns_sessions_.emplace(session.get(), session);
  session->Start();
}

void NetdServer::Stop() {
  stopped_ = true;
  boost::system::error_code ec;
  for (auto& listener : listeners_) {
    listener->acceptor.close(ec);
    listener->retry.cancel();
  }
  for (auto& dns : dns_) dns->Stop();
  for (auto& tap : udp_taps_) tap->Stop();
  // Stopping a connection removes it from the map: walk a copy.
  std::vector<std::shared_ptr<TcpConnection>> live;
  for (auto& [pointer, connection] : connections_) live.push_back(connection);
  for (auto& connection : live) connection->Stop();
  std::vector<std::shared_ptr<DnsTcpSession>> sessions;
  for (auto& [pointer, session] : dns_sessions_) sessions.push_back(session);
  for (auto& session : sessions) session->Stop();
}

}  // namespace sbx::netd
