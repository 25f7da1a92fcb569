// sbx-netd's serving half: the sandbox's capture sockets on one single-threaded io_context.
// UDP sockets are the stub DNS (dns_service.h); each TCP listener accepts connections and
// hands each to a TcpConnection, within the run's max_connections; a connection to port 53 is
// DNS over TCP, answered by the same stub (dns_tcp_session.h), never relayed.
//
// Usage: AddCapture() for every socket the runner sent, Start(), io_context::run(); Stop()
// closes the listeners and ends every connection (relayed ones are logged with end "stop"), so
// the summary read after it is final.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include "base/error.h"
#include "base/unique_fd.h"
#include "netpolicy/netd_protocol.h"
#include "src/netd/dns_service.h"
#include "src/netd/dns_tcp_session.h"
#include "src/netd/netd_context.h"
#include "src/netd/tcp_connection.h"
#include "src/netd/udp_tap.h"

namespace sbx::netd {


// Connections open at once, whatever max_connections allows in the run: each holds two sockets
// and two pipes (six descriptors) of netd's 4,096.
inline constexpr size_t kMaxOpenConnections = 512;

class NetdServer {
 public:
  NetdServer(boost::asio::io_context& io, NetdContext& context) : io_(io), context_(context) {}

  // Checks that `fd` is what the runner said (a listening TCP socket, or a bound UDP one) and
  // takes it. A proxy listener is refused unless the policy has proxy_env.
  Result<void> AddCapture(CaptureKind kind, uint16_t port, UniqueFd fd);
  void Stop();
  size_t active_connections() const { return connections_.size(); }

 private:
  struct Listener {
    Listener(boost::asio::io_context& io, CaptureKind listener_kind)
        : acceptor(io), retry(io), kind(listener_kind) {}
    boost::asio::ip::tcp::acceptor acceptor;
    boost::asio::steady_timer retry;
    CaptureKind kind;  // kTcp, kRedirect or kProxy
  };

  void Accept(Listener& listener);
  void OnAccepted(boost::asio::ip::tcp::socket socket, CaptureKind kind);
  void ServeDnsOverTcp(boost::asio::ip::tcp::socket socket);

  boost::asio::io_context& io_;
  NetdContext& context_;
  std::vector<std::unique_ptr<Listener>> listeners_;
  std::vector<std::unique_ptr<DnsService>> dns_;
  std::vector<std::unique_ptr<UdpTap>> udp_taps_;  // IPv4, and IPv6 when the sandbox has it
  std::unordered_map<TcpConnection*, std::shared_ptr<TcpConnection>> connections_;
  uint64_t connections_taken_ = 0;  // in the run: what max_connections counts
  std::unordered_map<DnsTcpSession*, std::shared_ptr<DnsTcpSession>> dns_sessions_;
  bool stopped_ = false;
};

}  // namespace sbx::netd
