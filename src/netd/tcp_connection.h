// One TCP connection the sandbox opened, from accept to close (network-design §4.5):
// destination -> first bytes (ports 80/443, 5 s) -> decision -> one resolution of the name ->
// connect to exactly one of the dialable addresses -> relay. Each step that refuses resets the
// sandbox's socket (a denied plain-HTTP request on port 80 gets a 403 page instead, so an agent
// can tell a block from an outage) and the connection's single audit record is written.
// Connections to an inject host on port 443 take the MITM path (mitm_session.h) instead of the
// relay; a plain-HTTP head on port 80 that carries an inject placeholder is refused.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include "src/netd/connection_decision.h"
#include "src/netd/endpoint.h"
#include "src/netd/first_bytes.h"
#include "src/netd/netd_context.h"
#include "src/netd/relay.h"

namespace sbx::netd {

class MitmSession;
struct MitmOutcome;

class TcpConnection : public std::enable_shared_from_this<TcpConnection> {
 public:
  // `on_closed` runs once, when both sockets are closed. `refuse_reason` set: the connection
  // is refused with it at once (the server's limit_connections).
  TcpConnection(NetdContext& context, boost::asio::ip::tcp::socket client, Endpoint dst,
                std::function<void(TcpConnection*)> on_closed,
                std::optional<std::string> refuse_reason = std::nullopt);

  void Start();
  // netd is stopping: relayed connections end "stop"; undecided ones are refused.
  void Stop();

 private:
  void ReadFirstBytes();
  void Decide(const Peek& peek);
  void Resolve();
  void OnResolved(const std::vector<IpAddress>& resolved, bool failed);
  void ConnectNext();
  void StartRelay();
  void OnRelayDone(RelayEnd end);
  // An inject host on 443: mitm_session.h instead of the byte relay.
  void StartMitm(const std::string& name);
  void OnMitmDone(const MitmOutcome& outcome);

  // Records the denial and closes: a 403/502 page for plain HTTP on port 80, else a reset.
  void Refuse(const std::string& reason, const std::string& rule = "");
  void SendHttpRefusal(const std::string& reason);
  void DrainAfterRefusal();
  void Record(bool allowed, const std::string& reason, const std::string& end);
  void Close();

  NetdContext& context_;
  boost::asio::ip::tcp::socket client_;
  boost::asio::ip::tcp::socket upstream_;
  boost::asio::ip::tcp::resolver resolver_;
  boost::asio::steady_timer timer_;
  std::function<void(TcpConnection*)> on_closed_;
  std::optional<std::string> refuse_reason_;
  std::chrono::steady_clock::time_point started_;

  Endpoint dst_;
  Destination destination_;
  FirstBytesReader first_bytes_;
  std::vector<uint8_t> read_buffer_;
  Peek peek_;
  ConnectionVerdict verdict_;
  std::vector<IpAddress> dialable_;
  size_t next_address_ = 0;
  std::optional<Endpoint> upstream_endpoint_;
  std::optional<Relay> relay_;
  std::shared_ptr<MitmSession> mitm_;
  bool deciding_ = true;  // until the relay starts or the connection is refused
  bool recorded_ = false;
  bool closed_ = false;
};

}  // namespace sbx::netd
