// Fuzzes sbx-netd's proxy listener (src/netd/proxy_request.h): Beast's request parser, set up
// as the listener sets it up, then InterpretProxyRequest on the head it read.
//
// Invariants beyond "no crash":
//   - a refusal is 400, 405 or 411 with the listener's own text (it never echoes the request);
//   - a CONNECT or forward names one target, a non-zero port, and a name target is normalized
//     and never "ends in a number";
//   - a forwarded head is one origin-form head: CRLF line ends, no NUL, a single empty line at
//     its end, no Proxy-* field, "Connection: close" once; when the client sent no Host, the
//     Host that sbx-netd's Host check reads in the head is the URL's host.
#include "src/netd/proxy_request.h"

#include <boost/beast/core/error.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/ascii.h"
#include "netpolicy/network_rules.h"
#include "src/netd/http_head.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

namespace http = boost::beast::http;
using sbx::netd::ProxyRequest;
using sbx::netd::ProxyRequestKind;

void CheckTarget(const ProxyRequest& request) {
  SBX_FUZZ_CHECK(request.port != 0);
  SBX_FUZZ_CHECK(request.address.has_value() == request.name.empty());
  if (!request.name.empty()) {
    SBX_FUZZ_CHECK(sbx::NormalizeHostName(request.name) == request.name);
    SBX_FUZZ_CHECK(request.target == request.name + ":" + std::to_string(request.port));
    const std::string_view last =
        std::string_view(request.name).substr(request.name.rfind('.') + 1);
    SBX_FUZZ_CHECK(last.find_first_not_of("0123456789") != std::string_view::npos);
  }
  SBX_FUZZ_CHECK(!request.target.empty());
}

void CheckForwardHead(const ProxyRequest& request, bool client_sent_host) {
  const std::string& head = request.head;
  SBX_FUZZ_CHECK(head.size() >= 4 && head.find("\r\n\r\n") == head.size() - 4);
  SBX_FUZZ_CHECK(head.find('\0') == std::string::npos);
  size_t connection_fields = 0;
  for (size_t at = 0; at < head.size() - 2;) {
    const size_t lf = head.find('\n', at);
    SBX_FUZZ_CHECK(lf != std::string::npos && lf > at && head[lf - 1] == '\r');
    const std::string_view line = std::string_view(head).substr(at, lf - at - 1);
    SBX_FUZZ_CHECK(line.find('\r') == std::string_view::npos);
    if (at > 0) {
      SBX_FUZZ_CHECK(!sbx::StartsWithIgnoreAsciiCase(line, "proxy-"));
      if (sbx::StartsWithIgnoreAsciiCase(line, "connection:")) {
        SBX_FUZZ_CHECK(line == "Connection: close");
        ++connection_fields;
      }
    }
    at = lf + 1;
  }
  SBX_FUZZ_CHECK(connection_fields == 1);
  if (client_sent_host || request.name.empty()) return;
  // A head the Host check refuses (Beast takes obs-text in a target, sbx-netd's reader does
  // not) is refused there; one it reads must name the URL's host.
  const auto seen = sbx::netd::ReadHttpHost(head);
  if (seen.status == sbx::netd::HttpHeadStatus::kHost)
    SBX_FUZZ_CHECK(sbx::NormalizeHostName(seen.host) == request.name);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // As TcpConnection::ReadProxyRequest sets it up.
  http::request_parser<http::empty_body> parser;
  parser.header_limit(sbx::netd::kMaxProxyHead);
  parser.skip(true);
  parser.body_limit(boost::none);
  boost::beast::error_code ec;
  parser.put(boost::asio::buffer(data, size), ec);
  if (ec || !parser.is_header_done()) return 0;
  const auto& head = parser.get().base();
  const ProxyRequest request = sbx::netd::InterpretProxyRequest(head);
  switch (request.kind) {
    case ProxyRequestKind::kRefused:
      SBX_FUZZ_CHECK(request.status == 400 || request.status == 405 || request.status == 411);
      SBX_FUZZ_CHECK(request.why.starts_with("sbx proxy: "));
      SBX_FUZZ_CHECK(request.head.empty());
      break;
    case ProxyRequestKind::kConnect:
      CheckTarget(request);
      SBX_FUZZ_CHECK(request.head.empty() && request.body_bytes == 0);
      break;
    case ProxyRequestKind::kForward:
      CheckTarget(request);
      CheckForwardHead(request, head.count(http::field::host) != 0);
      break;
  }
  return 0;
}
