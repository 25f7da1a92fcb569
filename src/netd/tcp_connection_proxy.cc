// The proxy_env listener's part of a connection: the request head (Beast's parser, bounded in
// size and time), the destination it names, and the tunnel's opening; tcp_connection.h says
// where these steps sit in the connection's order.
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>

#include "netpolicy/netd_protocol.h"
#include "src/netd/http_inject.h"
#include "src/netd/mitm_context.h"
#include "src/netd/proxy_request.h"
#include "src/netd/tcp_connection.h"

namespace sbx::netd {

namespace http = boost::beast::http;

struct ProxyHead {
  // Room for the head and what a client may send right behind it (a ClientHello).
  boost::beast::flat_buffer buffer{kMaxProxyHead + 16 * 1024};
  http::request_parser<http::empty_body> parser;
};

void TcpConnection::ReadProxyRequest() {
  proxy_head_ = std::make_shared<ProxyHead>();
  proxy_head_->parser.header_limit(kMaxProxyHead);
  // The parser reads the head only; the body is relayed (with bytes that followed the head in
  // the buffer). Without skip, Beast hands body bytes read with the head to empty_body, which
  // fails "unexpected body"; without the unlimited body_limit, a Content-Length above 1 MiB
  // fails the head.
  proxy_head_->parser.skip(true);
  proxy_head_->parser.body_limit(boost::none);
  timer_.expires_after(SteadySeconds(kPeekTimeoutSeconds));
  timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
    if (ec || self->closed_ || !self->deciding_ || !self->proxy_head_) return;
    boost::system::error_code ignored;
    self->client_.cancel(ignored);  // the read completes with operation_aborted
  });
  http::async_read_header(client_, proxy_head_->buffer, proxy_head_->parser,
                          [self = shared_from_this()](boost::system::error_code ec, size_t) {
                            if (self->closed_ || !self->deciding_) return;
                            self->OnProxyHead(ec);
                          });
}

void TcpConnection::OnProxyHead(boost::system::error_code ec) {
  timer_.cancel();
  auto head = std::move(proxy_head_);
  ProxyRequest request;
  if (ec == boost::asio::error::operation_aborted) {
    request.status = 408;
    request.why = "sbx proxy: no complete request in time";
  } else if (ec == boost::asio::error::eof || ec == http::error::end_of_stream) {
    Record(false, "proxy_request", "");  // the client left without asking: nothing to answer
    ResetAndClose(client_);
    return Close();
  } else if (ec) {
    request.why = "sbx proxy: malformed or oversized request head";
  } else {
    request = InterpretProxyRequest(head->parser.get().base());
  }
  if (request.kind == ProxyRequestKind::kRefused) {
    refusal_status_ = request.status;
    refusal_text_ = request.why;
    return Refuse(request.status == 408 ? "timeout" : "proxy_request");
  }
  const auto leftover = head->buffer.data();
  const auto* bytes = static_cast<const uint8_t*>(leftover.data());
  size_t early = leftover.size();
  if (request.kind == ProxyRequestKind::kForward) {
    // One request per connection (proxy_request.h): of what followed the head, only the body
    // it declares; the rest of that body is relayed later, and nothing after it.
    proxy_leftover_.assign(request.head.begin(), request.head.end());
    early = static_cast<size_t>(std::min<uint64_t>(early, request.body_bytes));
    forward_body_left_ = request.body_bytes - early;
  }
  proxy_leftover_.insert(proxy_leftover_.end(), bytes, bytes + early);
  proxy_target_ = request.target;
  forwarding_ = request.kind == ProxyRequestKind::kForward;
  if (request.address) {
    // An IP literal, classified as a captured destination would be: loopback refused, a fake
    // address stands for its name, anything else meets the address rules only.
    dst_ = {*request.address, request.port};
    destination_ = ClassifyDestination(*request.address, request.port, context_.pool);
  } else {
    dst_.port = request.port;
    destination_.kind = DestinationKind::kFakeName;
    destination_.port = request.port;
    destination_.name = request.name;
    destination_.name_src = "proxy";
  }
  // Port 53 is the stub's (dns_tcp_session.h): no rule relays it to a resolver, which would
  // carry DNS tunnels, through the proxy either.
  if (request.port == kDnsPort) return Refuse("port");
  // A placeholder in the proxy request (a Proxy-Authorization, say) is sent in the clear: a
  // leak, whatever the target.
  if (context_.mitm) {
    std::string text(ToStd(head->parser.get().target()));
    for (const auto& field : head->parser.get().base()) {
      text.append("\n").append(ToStd(field.name_string())).append(": ");
      text.append(ToStd(field.value()));
    }
    if (auto leaked = FindPlaceholder(context_.mitm->rules(), context_.mitm->secrets(), text)) {
      return Refuse("placeholder_leak", "inject[" + std::to_string(*leaked) + "]");
    }
  }
  if (!forwarding_) return Decide(Peek{});
  // The rewritten head is what a captured port-80 connection would have sent first: the same
  // Host check, the same placeholder check, then relayed with whatever followed it. An IP
  // literal stays with the address rules: its Host is not adopted.
  const auto peek = AddEarlyBytes();
  if (destination_.kind != DestinationKind::kFakeName) return Decide(Peek{});
  Decide(peek ? *peek : first_bytes_.AtEndOfStream());
}

std::optional<Peek> TcpConnection::AddEarlyBytes() {
  std::vector<uint8_t> bytes = std::move(proxy_leftover_);
  const size_t room = std::min(bytes.size(), first_bytes_.Room());
  beyond_peek_.assign(bytes.begin() + static_cast<std::ptrdiff_t>(room), bytes.end());
  bytes.resize(room);
  auto peek = first_bytes_.Add(bytes);
  if (!peek && first_bytes_.Room() == 0) return first_bytes_.AtEndOfStream();
  return peek;
}

void TcpConnection::OpenTunnel() {
  static const std::string kEstablished = "HTTP/1.1 200 Connection established\r\n\r\n";
  boost::asio::async_write(
      client_, boost::asio::buffer(kEstablished),
      [self = shared_from_this()](boost::system::error_code ec, size_t) {
        if (self->closed_ || !self->deciding_) return;
        self->tunnel_open_ = true;
        if (ec) {
          self->Record(true, "", "reset");
          ResetAndClose(self->client_);
          return self->Close();
        }
        self->PeekTunnel();
      });
}

void TcpConnection::PeekTunnel() {
  const auto early = AddEarlyBytes();
  // An IP literal is decided by address rules alone: a name in its first bytes is never
  // adopted, since the tunnel is already connected to that literal.
  if (destination_.kind != DestinationKind::kFakeName || !PeeksFirstBytes(dst_.port)) {
    return StartRelay();
  }
  // As on a captured port: the SNI (443) or Host (80) must be the CONNECT name.
  if (early) return Decide(*early);
  PeekFirstBytes();
}

}  // namespace sbx::netd
