// One TCP connection the sandbox opened, from accept to close (docs/network.md, Deciding a
// connection): destination -> first bytes (ports 80/443, 5 s) -> decision -> one resolution of the
// name -> connect to exactly one of the dialable addresses -> relay. Each step that refuses resets
// the sandbox's socket (a denied plain-HTTP request on port 80 gets a 403 page instead, so an agent
// can tell a block from an outage) and the connection's single audit record is written. Connections
// to an inject host on port 443 take the MITM path (mitm_session.h) instead of the relay; a
// plain-HTTP head on port 80 that carries an inject placeholder is refused. On a connection whose
// first bytes were an HTTP request, every request is checked before it goes upstream
// (http_request_stream.h): one whose Host is not the first's, or whose framing is ambiguous, ends
// the connection with a 403 after the answers to the requests before it.
//
// A connection to the proxy_env listener (tcp_connection_proxy.cc) first reads the request
// (proxy_request.h); its target is the destination, decided by the same steps. Every refusal
// up to the tunnel or relay is an HTTP answer (403, 502, 400, 405, 408). CONNECT: once the
// upstream is connected the client gets "200 Connection established" and the tunnel's first
// bytes are peeked as on a captured port (the SNI must be the CONNECT name), then relay or
// MITM. An absolute-form plain-HTTP request: its origin-form rewrite and its body are the
// first bytes, as if captured on port 80, then a relay that carries the rest of that body
// upstream and nothing more from the client (Relay::LimitUpstream).
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
#include "src/netd/http_request_stream.h"
#include "src/netd/netd_context.h"
#include "src/netd/relay.h"

namespace sbx::netd {

class MitmSession;
struct MitmOutcome;
struct ProxyHead;

class TcpConnection : public std::enable_shared_from_this<TcpConnection> {
 public:
  // `on_closed` runs once, when both sockets are closed. `refuse_reason` set: the connection
  // is refused with it at once (the server's limit_connections). `via_proxy`: accepted on the
  // proxy_env listener (`dst` is that listener's address).
  TcpConnection(NetdContext& context, boost::asio::ip::tcp::socket client, Endpoint dst,
                std::function<void(TcpConnection*)> on_closed,
                std::optional<std::string> refuse_reason = std::nullopt, bool via_proxy = false);

  void Start();
  // netd is stopping: relayed connections end "stop"; undecided ones are refused.
  void Stop();

 private:
  // Reads the first bytes (first_bytes.h) within kPeekTimeoutSeconds, then decides.
  void PeekFirstBytes();
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

  // tcp_connection_proxy.cc: the proxy request, the tunnel's opening.
  void ReadProxyRequest();
  void OnProxyHead(boost::system::error_code ec);
  void OpenTunnel();
  void PeekTunnel();
  // proxy_leftover_ into first_bytes_ up to its room (the rest to beyond_peek_); the peek's
  // verdict if those bytes decide it.
  std::optional<Peek> AddEarlyBytes();
  // What was read before deciding, for the relay or the MITM session to send on first.
  std::vector<uint8_t> TakeFirstBytes();
  // A plain-HTTP connection: its first bytes through requests_; false when one is refused.
  bool CheckFirstRequests();

  // Records the denial and closes: a 403/502 page for plain HTTP on port 80 and for a proxy
  // request not yet answered, else a reset.
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
  std::optional<HttpRequestStream> requests_;  // plain HTTP: every request checked
  std::vector<uint8_t> checked_first_bytes_;   // what requests_ let through of them
  std::shared_ptr<MitmSession> mitm_;
  const bool via_proxy_;
  std::shared_ptr<ProxyHead> proxy_head_;  // while the request is read
  std::string proxy_target_;               // the CONNECT target, the record's dst
  std::vector<uint8_t> proxy_leftover_;    // bytes the client sent after the request head
  std::vector<uint8_t> beyond_peek_;       // early bytes past first_bytes_'s room
  unsigned refusal_status_ = 0;            // a malformed proxy request: 400/403/405
  std::string refusal_text_;
  bool forwarding_ = false;                // an absolute-form plain-HTTP request, relayed
  uint64_t forward_body_left_ = 0;         // its body bytes not yet read: the relay's budget
  bool tunnel_open_ = false;               // "200 Connection established" was sent
  bool deciding_ = true;  // until the relay starts or the connection is refused
  bool recorded_ = false;
  bool closed_ = false;
};

}  // namespace sbx::netd
