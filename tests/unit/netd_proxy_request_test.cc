// Unit tests for the proxy_env listener's request: CONNECT targets, and what is refused.
#include "src/netd/proxy_request.h"

#include <gtest/gtest.h>

#include <string>

#include <boost/asio/buffer.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>

namespace sbx::netd {
namespace {

namespace http = boost::beast::http;

// The head as netd's Beast parser reads it; a head Beast itself rejects fails the test.
ProxyRequest Interpret(const std::string& head) {
  http::request_parser<http::empty_body> parser;
  parser.header_limit(kMaxProxyHead);
  parser.skip(true);  // as netd: the head only, whatever follows it
  parser.body_limit(boost::none);
  boost::system::error_code ec;
  parser.put(boost::asio::buffer(head), ec);
  EXPECT_FALSE(ec) << head << ": " << ec.message();
  EXPECT_TRUE(parser.is_header_done()) << head;
  return InterpretProxyRequest(parser.get().base());
}

TEST(ProxyRequest, ConnectToANameIsNormalized) {
  const auto request = Interpret("CONNECT PyPI.test.:443 HTTP/1.1\r\nHost: PyPI.test.:443\r\n\r\n");
  ASSERT_EQ(request.kind, ProxyRequestKind::kConnect) << request.why;
  EXPECT_EQ(request.name, "pypi.test");
  EXPECT_FALSE(request.address);
  EXPECT_EQ(request.port, 443);
  EXPECT_EQ(request.target, "pypi.test:443");
  // Python's http.client sends no Host on CONNECT over HTTP/1.0.
  EXPECT_EQ(Interpret("CONNECT api.test:8443 HTTP/1.0\r\n\r\n").kind, ProxyRequestKind::kConnect);
}

TEST(ProxyRequest, ConnectToLiterals) {
  auto v4 = Interpret("CONNECT 203.0.113.12:443 HTTP/1.1\r\n\r\n");
  ASSERT_EQ(v4.kind, ProxyRequestKind::kConnect);
  ASSERT_TRUE(v4.address);
  EXPECT_EQ(v4.address->ToString(), "203.0.113.12");
  EXPECT_TRUE(v4.name.empty());
  EXPECT_EQ(v4.target, "203.0.113.12:443");
  auto v6 = Interpret("CONNECT [2001:db8::10]:443 HTTP/1.1\r\nHost: [2001:db8::10]:443\r\n\r\n");
  ASSERT_EQ(v6.kind, ProxyRequestKind::kConnect);
  EXPECT_EQ(v6.target, "[2001:db8::10]:443");
  // A v4-mapped literal is the IPv4 address, so no check sees the v6 form.
  auto mapped = Interpret("CONNECT [::ffff:10.0.0.5]:443 HTTP/1.1\r\n\r\n");
  ASSERT_EQ(mapped.kind, ProxyRequestKind::kConnect);
  EXPECT_EQ(mapped.target, "10.0.0.5:443");
}

TEST(ProxyRequest, MalformedTargetsAre400) {
  for (const char* target :
       {"pypi.test", "pypi.test:", "pypi.test:0", "pypi.test:65536", "pypi.test:+443",
        "pypi.test:44a", "user@pypi.test:443", "2001:db8::1:443", "[2001:db8::1]", "[1.2.3.4]:443",
        "[fe80::1%eth0]:443", ":443", "http://pypi.test:443", "pypi.test:443/x", "1.2.3:443",
        "p_y*.test:443", "a..b:443"}) {
    const auto request = Interpret(std::string("CONNECT ") + target + " HTTP/1.1\r\n\r\n");
    EXPECT_EQ(request.kind, ProxyRequestKind::kRefused) << target;
    EXPECT_EQ(request.status, 400u) << target;
  }
}

TEST(ProxyRequest, AmbiguousConnectsAre400) {
  for (const char* head : {
           "CONNECT pypi.test:443 HTTP/1.1\r\nHost: evil.test:443\r\n\r\n",
           "CONNECT pypi.test:443 HTTP/1.1\r\nHost: pypi.test\r\n\r\n",
           "CONNECT pypi.test:443 HTTP/1.1\r\nHost: pypi.test:443\r\nHost: pypi.test:443\r\n\r\n",
           "CONNECT pypi.test:443 HTTP/1.1\r\nContent-Length: 5\r\n\r\n",
           "CONNECT pypi.test:443 HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
       }) {
    const auto request = Interpret(head);
    EXPECT_EQ(request.kind, ProxyRequestKind::kRefused) << head;
    EXPECT_EQ(request.status, 400u) << head;
  }
}

TEST(ProxyRequest, AbsoluteFormPlainHttpIsRewrittenToOriginForm) {
  const auto request = Interpret(
      "POST http://PyPI.test/simple/x?q=1 HTTP/1.1\r\nHost: pypi.test\r\n"
      "Proxy-Connection: keep-alive\r\nProxy-Authorization: Basic eDp5\r\n"
      "Connection: keep-alive, x-hop\r\nKeep-Alive: 5\r\nContent-Length: 3\r\n\r\n");
  ASSERT_EQ(request.kind, ProxyRequestKind::kForward) << request.why;
  EXPECT_EQ(request.name, "pypi.test");
  EXPECT_EQ(request.port, 80);
  EXPECT_EQ(request.target, "pypi.test:80");
  EXPECT_EQ(request.head,
            "POST /simple/x?q=1 HTTP/1.1\r\nHost: pypi.test\r\nContent-Length: 3\r\n"
            "Connection: close\r\n\r\n");
  // No Host: the URL's authority; a port and a literal; no path.
  const auto literal = Interpret("GET http://203.0.113.12:8080 HTTP/1.0\r\n\r\n");
  ASSERT_EQ(literal.kind, ProxyRequestKind::kForward);
  EXPECT_TRUE(literal.address);
  EXPECT_EQ(literal.target, "203.0.113.12:8080");
  EXPECT_EQ(literal.head, "GET / HTTP/1.0\r\nHost: 203.0.113.12:8080\r\nConnection: close\r\n\r\n");
  // The Host is kept as sent: the captured-traffic check then compares it with the URL's host.
  const auto other = Interpret("GET http://pypi.test/ HTTP/1.1\r\nHost: evil.test\r\n\r\n");
  ASSERT_EQ(other.kind, ProxyRequestKind::kForward);
  EXPECT_NE(other.head.find("Host: evil.test\r\n"), std::string::npos);
}

TEST(ProxyRequest, AForwardedRequestCarriesOnlyItsDeclaredBody) {
  EXPECT_EQ(Interpret("GET http://pypi.test/ HTTP/1.1\r\n\r\n").body_bytes, 0u);
  const auto post =
      Interpret("POST http://pypi.test/ HTTP/1.1\r\nContent-Length: 1234567\r\n\r\n");
  ASSERT_EQ(post.kind, ProxyRequestKind::kForward) << post.why;
  EXPECT_EQ(post.body_bytes, 1234567u);
  // Body bytes read with the head stay for the relay; the head still parses.
  const auto with_body = Interpret(
      "POST http://pypi.test/ HTTP/1.1\r\nContent-Length: 4\r\n\r\nbodyGET http://x/ HTTP/1.1");
  ASSERT_EQ(with_body.kind, ProxyRequestKind::kForward) << with_body.why;
  EXPECT_EQ(with_body.body_bytes, 4u);
  // Where a chunked body ends is not known without re-framing it: refused, never relayed raw.
  for (const char* coding : {"chunked", "gzip, chunked", "identity"}) {
    const auto chunked = Interpret(std::string("POST http://pypi.test/ HTTP/1.1\r\n") +
                                   "Transfer-Encoding: " + coding + "\r\n\r\n");
    EXPECT_EQ(chunked.kind, ProxyRequestKind::kRefused) << coding;
    EXPECT_EQ(chunked.status, 411u) << coding;
    EXPECT_NE(chunked.why.find("Content-Length"), std::string::npos) << chunked.why;
  }
}

TEST(ProxyRequest, NamesEndingInADigitAreNames) {
  for (const char* host : {"db1", "node-2.internal", "api.v2", "x1.test", "0x.test", "a.0xg"}) {
    const auto connect = Interpret(std::string("CONNECT ") + host + ":443 HTTP/1.1\r\n\r\n");
    ASSERT_EQ(connect.kind, ProxyRequestKind::kConnect) << host << ": " << connect.why;
    EXPECT_EQ(connect.name, host);
    const auto forward = Interpret(std::string("GET http://") + host + "/ HTTP/1.1\r\n\r\n");
    EXPECT_EQ(forward.kind, ProxyRequestKind::kForward) << host << ": " << forward.why;
  }
}

TEST(ProxyRequest, ALastLabelThatIsANumberIsAMistypedAddress) {
  // WHATWG URL's "ends in a number": decimal or 0x-hex, as an IPv4 part may be written.
  for (const char* host : {"1.2.3", "10.0.0.010", "0x7f.1", "a.123", "api.0x1F", "x.0X",
                           "4294967296", "pypi.test.1"}) {
    for (const std::string& head :
         {std::string("CONNECT ") + host + ":443 HTTP/1.1\r\n\r\n",
          std::string("GET http://") + host + "/ HTTP/1.1\r\n\r\n"}) {
      const auto request = Interpret(head);
      EXPECT_EQ(request.kind, ProxyRequestKind::kRefused) << head;
      EXPECT_EQ(request.status, 400u) << head;
      EXPECT_NE(request.why.find("last label is a number"), std::string::npos) << request.why;
    }
  }
}

TEST(ProxyRequest, OtherFormsAreRefused) {
  for (const char* head : {"GET http://user@pypi.test/ HTTP/1.1\r\n\r\n",
                           "GET http:///x HTTP/1.1\r\n\r\n",
                           "GET http://pypi.test:0/ HTTP/1.1\r\n\r\n",
                           "GET http://pypi.test/ HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
                           "GET https://pypi.test/ HTTP/1.1\r\n\r\n"}) {
    const auto request = Interpret(head);
    EXPECT_EQ(request.kind, ProxyRequestKind::kRefused) << head;
    EXPECT_EQ(request.status, 400u) << head;
    EXPECT_EQ(request.why.find("user"), std::string::npos) << "the page never echoes the request";
  }
  for (const char* head : {"GET / HTTP/1.1\r\nHost: pypi.test\r\n\r\n",
                           "OPTIONS * HTTP/1.1\r\nHost: pypi.test\r\n\r\n",
                           "TRACE pypi.test:443 HTTP/1.1\r\n\r\n"}) {
    const auto request = Interpret(head);
    EXPECT_EQ(request.kind, ProxyRequestKind::kRefused) << head;
    EXPECT_EQ(request.status, 405u) << head;
  }
}

}  // namespace
}  // namespace sbx::netd
