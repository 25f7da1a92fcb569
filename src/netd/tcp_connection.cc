// Drives one connection through peek, decision, resolution, connect and relay.
#include "src/netd/tcp_connection.h"

#include <algorithm>

#include <boost/asio/write.hpp>

#include "src/netd/http_inject.h"
#include "src/netd/mitm_context.h"
#include "src/netd/mitm_session.h"

namespace sbx::netd {
namespace {

constexpr size_t kPeekReadBytes = 16 * 1024;
// How long a refused HTTP client gets to read the refusal page before the socket is closed.
constexpr std::chrono::seconds kRefusalLinger{2};

bool IsOutage(const std::string& reason) {
  return reason == "upstream_error" || reason == "resolve_failed";
}

const char* ProxyStatusText(unsigned status) {
  switch (status) {
    case 403: return " Forbidden";
    case 405: return " Method Not Allowed";
    case 408: return " Request Timeout";
    case 411: return " Length Required";
    default: return " Bad Request";
  }
}

}  // namespace

TcpConnection::TcpConnection(NetdContext& context, boost::asio::ip::tcp::socket client,
                             Endpoint dst, std::function<void(TcpConnection*)> on_closed,
                             std::optional<std::string> refuse_reason, bool via_proxy)
    : context_(context),
      client_(std::move(client)),
      upstream_(client_.get_executor()),
      resolver_(client_.get_executor()),
      timer_(client_.get_executor()),
      on_closed_(std::move(on_closed)),
      refuse_reason_(std::move(refuse_reason)),
      started_(std::chrono::steady_clock::now()),
      dst_(dst),
      via_proxy_(via_proxy) {}

void TcpConnection::Start() {
  if (refuse_reason_) return Refuse(*refuse_reason_);
  // Relayed bytes go out as they come: Nagle's delay would add up on interactive protocols.
  boost::system::error_code ec;
  client_.set_option(boost::asio::ip::tcp::no_delay(true), ec);
  if (via_proxy_) return ReadProxyRequest();
  destination_ = ClassifyDestination(dst_.address, dst_.port, context_.pool);
  const bool decided_by_address = destination_.kind == DestinationKind::kRefused ||
                                  destination_.kind == DestinationKind::kUnmappedFakeIp;
  if (decided_by_address || !PeeksFirstBytes(dst_.port)) return Decide(Peek{});
  PeekFirstBytes();
}

void TcpConnection::PeekFirstBytes() {
  timer_.expires_after(SteadySeconds(kPeekTimeoutSeconds));
  timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
    if (ec || self->closed_ || !self->deciding_) return;
    boost::system::error_code ignored;
    self->client_.cancel(ignored);  // the pending read completes, aborted, and is ignored
    self->Decide(Peek{PeekKind::kTimeout, ""});
  });
  ReadFirstBytes();
}

void TcpConnection::ReadFirstBytes() {
  read_buffer_.resize(std::min(first_bytes_.Room(), kPeekReadBytes));
  client_.async_read_some(
      boost::asio::buffer(read_buffer_),
      [self = shared_from_this()](boost::system::error_code ec, size_t size) {
        if (self->closed_ || !self->deciding_ || self->peek_.kind != PeekKind::kNotPeeked) return;
        if (ec) return self->Decide(self->first_bytes_.AtEndOfStream());
        auto peek = self->first_bytes_.Add({self->read_buffer_.data(), size});
        if (peek) return self->Decide(*peek);
        if (self->first_bytes_.Room() == 0) return self->Decide(self->first_bytes_.AtEndOfStream());
        self->ReadFirstBytes();
      });
}

void TcpConnection::Decide(const Peek& peek) {
  timer_.cancel();
  peek_ = peek;
  verdict_ = DecideConnection(context_.policy, destination_, peek);
  if (!verdict_.allowed) return Refuse(verdict_.reason, verdict_.rule);
  // A placeholder in a plain-HTTP head is the sandbox sending a key's stand-in in the clear:
  // secrets are never injected into plaintext, so it can only be a leak.
  if (context_.mitm && (dst_.port == 80 || forwarding_)) {
    const std::vector<uint8_t>& head = first_bytes_.buffer();
    if (auto leaked = FindPlaceholder(
            context_.mitm->rules(), context_.mitm->secrets(),
            std::string_view(reinterpret_cast<const char*>(head.data()), head.size()))) {
      return Refuse("placeholder_leak", "inject[" + std::to_string(*leaked) + "]");
    }
  }
  if (context_.counters.summary().bytes_up >= context_.policy.limits.egress_bytes_max) {
    return Refuse("limit_bytes", verdict_.rule);
  }
  if (!CheckFirstRequests()) return Refuse("host_mismatch", verdict_.rule);
  if (upstream_endpoint_) return StartRelay();  // a proxy tunnel, connected before its peek
  Resolve();
}

void TcpConnection::Resolve() {
  if (!verdict_.name) return OnResolved({destination_.address}, false);
  // The name is resolved once per connection, here, by the host's resolver, exactly as
  // written (main.cc empties the search list); the address connected to is one of these, never
  // one the sandbox chose (its /etc/hosts, its own DNS) and never looked up again (rebinding).
  resolver_.async_resolve(
      *verdict_.name, std::to_string(dst_.port), boost::asio::ip::tcp::resolver::numeric_service,
      [self = shared_from_this()](boost::system::error_code ec,
                                  boost::asio::ip::tcp::resolver::results_type results) {
        if (self->closed_) return;
        std::vector<IpAddress> resolved;
        for (const auto& entry : results) {
          if (auto endpoint = EndpointFromAsio(entry.endpoint()))
            resolved.push_back(endpoint->address);
        }
        self->OnResolved(resolved, ec || resolved.empty());
      });
}

void TcpConnection::OnResolved(const std::vector<IpAddress>& resolved, bool failed) {
  if (failed) return Refuse("resolve_failed", verdict_.rule);
  dialable_ = DialableAddresses(context_.policy, context_.host_addresses, resolved, dst_.port);
  if (dialable_.empty()) return Refuse("internal_address", verdict_.rule);
  timer_.expires_after(SteadySeconds(context_.policy.limits.connect_timeout_seconds));
  timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
    if (ec || self->closed_ || !self->deciding_) return;
    self->next_address_ = self->dialable_.size();  // no further attempts
    boost::system::error_code ignored;
    self->upstream_.close(ignored);  // the pending connect completes with operation_aborted
  });
  ConnectNext();
}

void TcpConnection::ConnectNext() {
  if (next_address_ >= dialable_.size()) return Refuse("upstream_error", verdict_.rule);
  const Endpoint target{dialable_[next_address_++], dst_.port};
  boost::system::error_code ec;
  upstream_.close(ec);
  upstream_.async_connect(
      AsioFromEndpoint(target), [self = shared_from_this(), target](boost::system::error_code ec) {
        if (self->closed_ || !self->deciding_) return;
        if (ec) return self->ConnectNext();
        self->timer_.cancel();
        boost::system::error_code ignored;
        self->upstream_.set_option(boost::asio::ip::tcp::no_delay(true), ignored);
        self->upstream_endpoint_ = target;
        if (self->via_proxy_ && !self->forwarding_) return self->OpenTunnel();
        self->StartRelay();
      });
}

void TcpConnection::StartRelay() {
  if (context_.mitm && verdict_.name && context_.mitm->Intercepts(*verdict_.name, dst_.port)) {
    return StartMitm(*NormalizeHostName(*verdict_.name));
  }
  deciding_ = false;
  relay_.emplace(client_, upstream_, context_);
  if (forwarding_) relay_->LimitUpstream(forward_body_left_);
  if (requests_) {
    relay_->FilterUpstream([this](std::span<const uint8_t> in, std::vector<uint8_t>& out) {
      return requests_->Feed(in, out);
    });
  }
  relay_->Start(TakeFirstBytes(), shared_from_this(),
                [this](RelayEnd end) { OnRelayDone(end); });
}

bool TcpConnection::CheckFirstRequests() {
  // A forwarded proxy request is already one checked request with a bounded body.
  if (peek_.kind != PeekKind::kHttpHost || forwarding_) return true;
  requests_.emplace(destination_.port);
  // A refusal here, even of a later pipelined request, refuses the whole connection: nothing
  // has gone upstream yet.
  return requests_->Feed(first_bytes_.buffer(), checked_first_bytes_) &&
         requests_->Feed(beyond_peek_, checked_first_bytes_);
}

std::vector<uint8_t> TcpConnection::TakeFirstBytes() {
  if (requests_) {
    std::vector<uint8_t>().swap(beyond_peek_);
    return std::move(checked_first_bytes_);
  }
  std::vector<uint8_t> bytes = first_bytes_.TakeBuffer();
  bytes.insert(bytes.end(), beyond_peek_.begin(), beyond_peek_.end());
  std::vector<uint8_t>().swap(beyond_peek_);
  return bytes;
}

void TcpConnection::OnRelayDone(RelayEnd end) {
  if (relay_->refused()) {
    Record(false, "host_mismatch", "");
    if (client_.is_open()) return SendHttpRefusal("host_mismatch");
    return Close();
  }
  Record(true, end == RelayEnd::kLimitBytes ? "limit_bytes" : "", RelayEndName(end));
  Close();
}

void TcpConnection::StartMitm(const std::string& name) {
  auto server = context_.mitm->ServerContext(name);
  if (!server) return Refuse("upstream_error", verdict_.rule);
  deciding_ = false;
  mitm_ = std::make_shared<MitmSession>(context_, *context_.mitm, std::move(client_),
                                        std::move(upstream_), TakeFirstBytes(), name,
                                        **server);
  mitm_->Start([self = shared_from_this()](const MitmOutcome& outcome) {
    self->OnMitmDone(outcome);
  });
}

void TcpConnection::OnMitmDone(const MitmOutcome& outcome) {
  Record(outcome.allowed, outcome.reason, outcome.allowed ? RelayEndName(outcome.end) : "");
  Close();
}

void TcpConnection::Stop() {
  if (closed_) return;
  if (relay_) return relay_->Cut(RelayEnd::kStop);
  if (mitm_) return mitm_->Cut(RelayEnd::kStop);
  // Undecided when the run ended: it ran out of time. Reset, no refusal page.
  if (!recorded_) Record(false, "timeout", "");
  ResetAndClose(client_);
  Close();
}

void TcpConnection::Refuse(const std::string& reason, const std::string& rule) {
  if (closed_) return;
  deciding_ = false;
  timer_.cancel();
  resolver_.cancel();
  boost::system::error_code ec;
  upstream_.close(ec);
  verdict_.rule = rule;
  Record(false, reason, "");
  if (via_proxy_ && !tunnel_open_) return SendHttpRefusal(reason);
  const std::vector<uint8_t>& bytes = first_bytes_.buffer();
  const bool plain_http =
      dst_.port == 80 && !bytes.empty() && bytes[0] != 0x16 &&
      (peek_.kind == PeekKind::kHttpHost || peek_.kind == PeekKind::kHttpInvalid);
  if (plain_http) return SendHttpRefusal(reason);
  ResetAndClose(client_);
  Close();
}

void TcpConnection::SendHttpRefusal(const std::string& reason) {
  const bool outage = IsOutage(reason);
  std::string status = outage ? "502 Bad Gateway" : "403 Forbidden";
  std::string body = outage ? "sbx network: upstream unreachable: " + reason + "\n"
                            : "blocked by sbx network policy: " + reason + "\n";
  if (refusal_status_ != 0) {  // a proxy request netd does not serve
    status = std::to_string(refusal_status_) + ProxyStatusText(refusal_status_);
    body = refusal_text_ + "\n";
  }
  auto response = std::make_shared<std::string>(
      "HTTP/1.1 " + status +
      "\r\nContent-Type: text/plain\r\nContent-Length: " + std::to_string(body.size()) +
      "\r\nConnection: close\r\n\r\n" + body);
  boost::asio::async_write(
      client_, boost::asio::buffer(*response),
      [self = shared_from_this(), response](boost::system::error_code ec, size_t) {
        if (self->closed_) return;
        if (ec) {
          ResetAndClose(self->client_);
          return self->Close();
        }
        boost::system::error_code ignored;
        self->client_.shutdown(boost::asio::socket_base::shutdown_send, ignored);
        // Read what the client still sends until it closes (bounded in time): closing with
        // unread bytes would reset the connection and could destroy the page in flight.
        self->timer_.expires_after(kRefusalLinger);
        self->timer_.async_wait([self](boost::system::error_code timer_ec) {
          if (!timer_ec) self->Close();
        });
        self->DrainAfterRefusal();
      });
}

void TcpConnection::DrainAfterRefusal() {
  read_buffer_.resize(kPeekReadBytes);
  client_.async_read_some(boost::asio::buffer(read_buffer_),
                          [self = shared_from_this()](boost::system::error_code ec, size_t) {
                            if (self->closed_) return;
                            if (ec) return self->Close();
                            self->DrainAfterRefusal();
                          });
}

void TcpConnection::Record(bool allowed, const std::string& reason, const std::string& end) {
  if (recorded_) return;
  recorded_ = true;
  ConnAuditRecord record;
  record.dst = via_proxy_ && !proxy_target_.empty() ? proxy_target_ : EndpointToString(dst_);
  record.via_proxy = via_proxy_;
  if (verdict_.name) {
    record.name = verdict_.name;
    record.name_src = verdict_.name_src;
  } else if (destination_.kind == DestinationKind::kFakeName) {
    record.name = destination_.name;
    record.name_src = destination_.name_src;
  }
  if (peek_.kind == PeekKind::kTlsSni) record.sni = peek_.name;
  if (peek_.kind == PeekKind::kHttpHost) record.host = peek_.name;
  record.allowed = allowed;
  record.rule = verdict_.rule;
  record.reason = reason;
  if (upstream_endpoint_) record.upstream = EndpointToString(*upstream_endpoint_);
  if (relay_) {
    record.bytes_up = relay_->bytes_up();
    record.bytes_down = relay_->bytes_down();
  }
  if (mitm_) {
    record.mitm = true;
    record.bytes_up = mitm_->bytes_up();
    record.bytes_down = mitm_->bytes_down();
  }
  record.ms = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                        std::chrono::steady_clock::now() - started_)
                                        .count());
  record.end = end;
  if (allowed) {
    context_.counters.CountAllowed();
  } else {
    context_.counters.CountDenied(record.name ? *record.name : dst_.address.ToString());
  }
  context_.log.LogConn(record);
}

void TcpConnection::Close() {
  if (closed_) return;
  closed_ = true;
  timer_.cancel();
  resolver_.cancel();
  boost::system::error_code ec;
  client_.close(ec);
  upstream_.close(ec);
  auto on_closed = std::move(on_closed_);
  if (on_closed) on_closed(this);
}

}  // namespace sbx::netd
