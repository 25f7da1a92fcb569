// The MITM path's order: upstream TLS, the sandbox's TLS, then requests until one side is done;
// idle and egress limits; the connection's ending.
#include "src/netd/mitm_session.h"

#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>

#include "src/netd/http_inject.h"

namespace sbx::netd {
namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using asio::use_awaitable;

constexpr size_t kChunkBytes = 64 * 1024;

}  // namespace

MitmSession::MitmSession(NetdContext& context, MitmContext& mitm, asio::ip::tcp::socket client,
                         asio::ip::tcp::socket upstream, std::vector<uint8_t> first_bytes,
                         std::string name, asio::ssl::context& server)
    : context_(context),
      mitm_(mitm),
      name_(std::move(name)),
      client_(PrefixedSocket(std::move(client), std::move(first_bytes)), server),
      upstream_(PrefixedSocket(std::move(upstream), {}), mitm.upstream()),
      chunk_(kChunkBytes),
      idle_timer_(client_.get_executor()),
      idle_timeout_(SteadySeconds(context.policy.limits.idle_timeout_seconds)) {}

void MitmSession::Start(std::function<void(const MitmOutcome&)> done) {
  done_ = std::move(done);
  Touch();
  WatchIdle();
  asio::co_spawn(client_.get_executor(), Run(),
                 [self = shared_from_this()](std::exception_ptr) { self->Finish(); });
}

asio::awaitable<void> MitmSession::Run() {
  try {
    // 1. Upstream first: its verification decides what the sandbox's first request gets.
    co_await HandshakeUpstream();
    // 2. The sandbox's TLS, with the leaf for the name.
    co_await client_.async_handshake(asio::ssl::stream_base::server, use_awaitable);
    Touch();
    // 3. The upstream is not the real server (or not reachable over TLS): 502, nothing sent.
    if (!upstream_failure_.empty()) {
      co_await AnswerUpstreamFailure();
      co_return;
    }
    // 4. Requests until one side ends the connection.
    while (co_await Exchange()) {
    }
  } catch (const boost::system::system_error&) {
    // A cut, a reset or a malformed stream: both sides are reset in Finish.
    if (!cut_) outcome_.end = RelayEnd::kReset;
  }
}

asio::awaitable<void> MitmSession::HandshakeUpstream() {
  SSL* ssl = upstream_.native_handle();
  // SNI, and the certificate must name exactly this host (no partial wildcards like "a*.b").
  SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
  if (SSL_set_tlsext_host_name(ssl, name_.c_str()) != 1 || SSL_set1_host(ssl, name_.c_str()) != 1) {
    upstream_failure_ = "upstream_error";
    co_return;
  }
  boost::system::error_code ec;
  co_await upstream_.async_handshake(asio::ssl::stream_base::client,
                                     asio::redirect_error(use_awaitable, ec));
  Touch();
  if (!ec) co_return;
  if (cut_) throw boost::system::system_error(ec);
  const long verify = SSL_get_verify_result(ssl);
  upstream_failure_ = verify != X509_V_OK ? "tls_verify_failed" : "upstream_error";
  outcome_.allowed = false;
  outcome_.reason = upstream_failure_;
}

asio::awaitable<void> MitmSession::AnswerUpstreamFailure() {
  const auto started = std::chrono::steady_clock::now();
  Parser<true> parser;
  parser.header_limit(kMaxMitmHead);
  boost::system::error_code ec;
  // The request is read (so the client sees an answer, not a reset) and dropped.
  co_await http::async_read_header(client_, client_buffer_, parser,
                                   asio::redirect_error(use_awaitable, ec));
  if (ec) co_return;
  const bool verify = upstream_failure_ == "tls_verify_failed";
  std::string page = verify ? "sbx: upstream certificate verification failed for "
                            : "sbx: upstream TLS connection failed for ";
  co_await Respond(502, page + name_);
  HttpAuditRecord record;
  record.name = name_;
  record.method = std::string(ToStd(parser.get().method_string()));
  record.path = PathWithoutQuery(ToStd(parser.get().target()));
  record.status = 502;
  record.reason = upstream_failure_;
  record.ms = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                        std::chrono::steady_clock::now() - started)
                                        .count());
  context_.log.LogHttp(record);
}

asio::awaitable<void> MitmSession::Respond(unsigned status, std::string text) {
  http::response<http::string_body> response(static_cast<http::status>(status), 11);
  response.set(http::field::content_type, "text/plain");
  response.set(http::field::connection, "close");
  response.body() = text + "\n";
  response.prepare_payload();
  co_await http::async_write(client_, response, use_awaitable);
  Touch();
}

void MitmSession::WatchIdle() {
  idle_timer_.expires_at(last_activity_ + idle_timeout_);
  idle_timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
    if (ec || self->finished_ || self->cut_) return;
    if (std::chrono::steady_clock::now() - self->last_activity_ >= self->idle_timeout_) {
      return self->Cut(RelayEnd::kIdle);
    }
    self->WatchIdle();
  });
}

void MitmSession::ChargeEgress(uint64_t size) {
  if (context_.counters.summary().bytes_up + size > context_.policy.limits.egress_bytes_max) {
    Cut(RelayEnd::kLimitBytes);
    throw boost::system::system_error(asio::error::operation_aborted);
  }
}

void MitmSession::Count(bool upstream_bound, uint64_t size) {
  Touch();
  if (upstream_bound) {
    bytes_up_ += size;
    context_.counters.AddBytesUp(size);
  } else {
    bytes_down_ += size;
    context_.counters.AddBytesDown(size);
  }
}

void MitmSession::Cut(RelayEnd end) {
  if (cut_ || finished_) return;
  cut_ = true;
  outcome_.end = end;
  if (end == RelayEnd::kLimitBytes) outcome_.reason = "limit_bytes";
  // Pending operations complete with operation_aborted and Run unwinds, later.
  ResetAndClose(client_.next_layer().socket());
  ResetAndClose(upstream_.next_layer().socket());
  // Recorded now, as the relay does: when netd stops, the io_context stops right after and
  // Run would never unwind. Run's late completion finds the session finished.
  Finish();
}

void MitmSession::Finish() {
  if (finished_) return;
  finished_ = true;
  idle_timer_.cancel();
  const bool orderly = !cut_ && outcome_.end == RelayEnd::kFin;
  for (TlsStream* stream : {&client_, &upstream_}) {
    asio::ip::tcp::socket& socket = stream->next_layer().socket();
    if (orderly) {
      boost::system::error_code ec;
      socket.shutdown(asio::socket_base::shutdown_send, ec);
      socket.close(ec);
    } else {
      ResetAndClose(socket);
    }
  }
  auto done = std::move(done_);
  if (done) done(outcome_);
}

}  // namespace sbx::netd
