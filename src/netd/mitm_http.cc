// The MITM path's HTTP/1.1: one request and its response at a time, bodies streamed through
// a fixed chunk, and the raw relay that follows a 101 Switching Protocols.
#include "src/netd/mitm_session.h"

#include <openssl/crypto.h>

#include <limits>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/serializer.hpp>
#include <boost/beast/http/write.hpp>

#include "src/netd/http_inject.h"

namespace sbx::netd {
namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using asio::use_awaitable;


template <typename Parser>
void SetLimits(Parser& parser) {
  parser.header_limit(kMaxMitmHead);
  parser.body_limit(std::numeric_limits<uint64_t>::max());  // streamed, never held
}

bool IsEndOfStream(const boost::system::error_code& ec) {
  return ec == http::error::end_of_stream || ec == asio::error::eof ||
         ec == asio::ssl::error::stream_truncated;
}

// The injected values' bytes in the header's own storage, wiped once the header is sent.
void WipeFields(http::request_header<>& request, const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    for (auto range = request.equal_range(name); range.first != range.second; ++range.first) {
      const auto value = range.first->value();
      OPENSSL_cleanse(const_cast<char*>(value.data()), value.size());
    }
  }
}

uint64_t MillisecondsSince(std::chrono::steady_clock::time_point started) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::steady_clock::now() - started)
                                   .count());
}

}  // namespace

asio::awaitable<bool> MitmSession::Exchange() {
  Parser<true> request_parser;
  SetLimits(request_parser);
  boost::system::error_code ec;
  co_await http::async_read_header(client_, client_buffer_, request_parser,
                                   asio::redirect_error(use_awaitable, ec));
  Touch();
  if (IsEndOfStream(ec)) co_return false;  // the client is done with the connection
  if (ec && !cut_ && ec.category() == http::make_error_code(http::error::bad_target).category()) {
    co_await Respond(400, "sbx: malformed HTTP/1.1 request");
    co_return false;
  }
  if (ec) throw boost::system::system_error(ec);

  const auto started = std::chrono::steady_clock::now();
  auto& request = request_parser.get();
  HttpAuditRecord record;
  record.name = name_;
  record.method = std::string(ToStd(request.method_string()));
  record.path = PathWithoutQuery(ToStd(request.target()));
  RequestVerdict verdict = DecideAndInject(mitm_.rules(), mitm_.secrets(), name_, 443, request);
  if (!verdict.allowed) {
    // Built before the co_await: GCC 12 mishandles temporaries of a conditional expression
    // inside a co_await's full-expression.
    std::string page = "blocked by sbx network policy: " + verdict.reason;
    if (!verdict.rule.empty()) page += " (" + verdict.rule + ")";
    page += ": " + verdict.explanation;
    co_await Respond(403, std::move(page));
    record.status = 403;
    record.reason = verdict.reason;
    record.rule = verdict.rule;
    record.ms = MillisecondsSince(started);
    context_.log.LogHttp(record);
    co_return false;
  }
  record.inject = verdict.injected;
  const bool keep_alive = request.keep_alive();
  const bool head = request.method() == http::verb::head;
  co_await Forward(request_parser, client_, client_buffer_, upstream_);
  WipeFields(request, verdict.injected);

  // Interim answers (100 Continue, 103 Early Hints) are passed on; the final one follows.
  while (true) {
    Parser<false> response_parser;
    SetLimits(response_parser);
    if (head) response_parser.skip(true);  // a HEAD response announces a body it never sends
    co_await http::async_read_header(upstream_, upstream_buffer_, response_parser, use_awaitable);
    Touch();
    auto& response = response_parser.get();
    record.status = response.result_int();
    if (response.result() == http::status::switching_protocols) {
      co_await Forward(response_parser, upstream_, upstream_buffer_, client_);
      record.ms = MillisecondsSince(started);
      context_.log.LogHttp(record);
      co_await Tunnel();
      co_return false;
    }
    co_await Forward(response_parser, upstream_, upstream_buffer_, client_);
    if (record.status >= 100 && record.status < 200) continue;
    record.ms = MillisecondsSince(started);
    context_.log.LogHttp(record);
    co_return keep_alive && response.keep_alive() && !response_parser.need_eof();
  }
}

// Beast's buffer_body protocol: the parser fills `chunk_` (need_buffer when it is full), the
// serializer drains it (need_buffer when it wants more); `more` says whether more will come.
template <bool IsRequest>
asio::awaitable<void> MitmSession::Forward(Parser<IsRequest>& parser, TlsStream& from,
                                           boost::beast::flat_buffer& from_buffer, TlsStream& to) {
  const bool upstream_bound = &to == &upstream_;
  auto& body = parser.get().body();
  http::serializer<IsRequest, http::buffer_body> serializer(parser.get());
  if (upstream_bound) ChargeEgress(0);
  Count(upstream_bound, co_await http::async_write_header(to, serializer, use_awaitable));
  boost::system::error_code ec;
  while (!serializer.is_done()) {
    if (parser.is_done()) {
      body.data = nullptr;
      body.size = 0;
      body.more = false;
    } else {
      body.data = chunk_.data();
      body.size = chunk_.size();
      co_await http::async_read(from, from_buffer, parser, asio::redirect_error(use_awaitable, ec));
      if (ec && ec != http::error::need_buffer) throw boost::system::system_error(ec);
      body.size = chunk_.size() - body.size;  // what the parser put there
      body.data = chunk_.data();
      body.more = !parser.is_done();
      Touch();
    }
    if (upstream_bound) ChargeEgress(body.size);
    const size_t written =
        co_await http::async_write(to, serializer, asio::redirect_error(use_awaitable, ec));
    if (ec && ec != http::error::need_buffer) throw boost::system::system_error(ec);
    Count(upstream_bound, written);
  }
}

asio::awaitable<void> MitmSession::Tunnel() {
  // Both directions at once; when either ends, the connection ends (a WebSocket has closed
  // by then with its own close frames).
  auto self = shared_from_this();
  asio::co_spawn(client_.get_executor(), Pump(client_, client_buffer_, upstream_),
                 [self](std::exception_ptr) {
                   boost::system::error_code ec;
                   self->client_.next_layer().socket().shutdown(asio::socket_base::shutdown_both,
                                                                ec);
                   self->upstream_.next_layer().socket().shutdown(
                       asio::socket_base::shutdown_both, ec);
                 });
  try {
    co_await Pump(upstream_, upstream_buffer_, client_);
  } catch (const boost::system::system_error&) {
  }
  boost::system::error_code ec;
  client_.next_layer().socket().shutdown(asio::socket_base::shutdown_both, ec);
  upstream_.next_layer().socket().shutdown(asio::socket_base::shutdown_both, ec);
}

asio::awaitable<void> MitmSession::Pump(TlsStream& from, boost::beast::flat_buffer& pending,
                                        TlsStream& to) {
  const bool upstream_bound = &to == &upstream_;
  // What the HTTP parser read past the message goes first.
  if (pending.size() > 0) {
    if (upstream_bound) ChargeEgress(pending.size());
    Count(upstream_bound, co_await asio::async_write(to, pending.data(), use_awaitable));
    pending.consume(pending.size());
  }
  // TLS on both sides: bytes are decrypted in user space, so no splice; copy in 64 KiB steps.
  std::vector<char> buffer(64 * 1024);
  while (true) {
    const size_t got = co_await from.async_read_some(asio::buffer(buffer), use_awaitable);
    Touch();
    if (upstream_bound) ChargeEgress(got);
    Count(upstream_bound, co_await asio::async_write(to, asio::buffer(buffer.data(), got),
                                                     use_awaitable));
  }
}

}  // namespace sbx::netd
