// Reads length-prefixed queries, answers each with the stub, writes length-prefixed replies.
#include "src/netd/dns_tcp_session.h"

#include <utility>

#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

#include "src/netd/dns_message.h"
#include "src/netd/dns_service.h"
#include "src/netd/relay.h"

namespace sbx::netd {

DnsTcpSession::DnsTcpSession(NetdContext& context, boost::asio::ip::tcp::socket client,
                             std::function<void(DnsTcpSession*)> on_closed)
    : context_(context),
      client_(std::move(client)),
      idle_(client_.get_executor()),
      on_closed_(std::move(on_closed)) {}

void DnsTcpSession::ExpectBytes() {
  idle_.expires_after(SteadySeconds(kDnsTcpIdleSeconds));
  idle_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
    // A cancel cannot recall a handler already queued: only an expiry still due ends the session.
    if (!ec && self->idle_.expiry() <= boost::asio::steady_timer::clock_type::now()) {
      self->Close(true);
    }
  });
}

void DnsTcpSession::ReadLength() {
  if (answered_ == kDnsTcpMaxQueries) return EndAfterAnswers();
  ExpectBytes();
  boost::asio::async_read(client_, boost::asio::buffer(length_),
                          [self = shared_from_this()](boost::system::error_code ec, size_t) {
                            if (self->closed_) return;
                            // The client's clean end between queries closes in kind.
                            if (ec) return self->Close(ec != boost::asio::error::eof);
                            const size_t length = (size_t{self->length_[0]} << 8) | self->length_[1];
                            if (length == 0 || length > kDnsMaxQuerySize) return self->Close(true);
                            self->ReadQuery(length);
                          });
}

void DnsTcpSession::ReadQuery(size_t length) {
  query_.resize(length);
  boost::asio::async_read(client_, boost::asio::buffer(query_),
                          [self = shared_from_this()](boost::system::error_code ec, size_t) {
                            if (self->closed_) return;
                            if (ec) return self->Close(true);
                            self->Answer();
                          });
}

void DnsTcpSession::Answer() {
  idle_.cancel();
  std::vector<uint8_t> reply = AnswerAndRecord(query_, context_);
  // The stub drops what it cannot parse as a query; over TCP that ends the session.
  if (reply.empty() || reply.size() > 0xFFFF) return Close(true);
  ++answered_;
  reply_.assign({static_cast<uint8_t>(reply.size() >> 8), static_cast<uint8_t>(reply.size())});
  reply_.insert(reply_.end(), reply.begin(), reply.end());
  ExpectBytes();  // a client that stops reading is as stalled as one that stops writing
  boost::asio::async_write(client_, boost::asio::buffer(reply_),
                           [self = shared_from_this()](boost::system::error_code ec, size_t) {
                             if (self->closed_) return;
                             if (ec) return self->Close(true);
                             self->ReadLength();
                           });
}

void DnsTcpSession::EndAfterAnswers() {
  // A close with the client's further queries unread would send a reset, and a reset makes
  // the client's kernel drop answers it has not read yet. So the FIN follows the last answer,
  // and what else comes is read and dropped until the client ends, or kDnsTcpIdleSeconds from
  // now (not re-armed: sending more does not keep the session).
  boost::system::error_code ignored;
  client_.shutdown(boost::asio::socket_base::shutdown_send, ignored);
  ExpectBytes();
  DiscardUntilEnd();
}

void DnsTcpSession::DiscardUntilEnd() {
  client_.async_read_some(boost::asio::buffer(discard_),
                          [self = shared_from_this()](boost::system::error_code ec, size_t) {
                            if (self->closed_) return;
                            if (ec) return self->Close(ec != boost::asio::error::eof);
                            self->DiscardUntilEnd();
                          });
}

void DnsTcpSession::Close(bool reset) {
  if (closed_) return;
  closed_ = true;
  idle_.cancel();
  if (reset) {
    ResetAndClose(client_);
  } else {
    boost::system::error_code ignored;
    client_.close(ignored);
  }
  if (on_closed_) std::exchange(on_closed_, nullptr)(this);
}

}  // namespace sbx::netd
