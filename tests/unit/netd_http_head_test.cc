// Unit tests for sbx-netd's HTTP/1.x Host reader.
#include "src/netd/http_head.h"

#include <gtest/gtest.h>

#include <string>

namespace sbx::netd {
namespace {

HttpHeadResult Read(const std::string& head) { return ReadHttpHost(head); }

TEST(HttpHead, OriginFormWithHost) {
  const auto result = Read("GET /simple/ HTTP/1.1\r\nHost: PyPI.org\r\nAccept: */*\r\n\r\n");
  EXPECT_EQ(result.status, HttpHeadStatus::kHost);
  EXPECT_EQ(result.host, "PyPI.org");
}

TEST(HttpHead, PortAndBracketsAreStripped) {
  EXPECT_EQ(Read("GET / HTTP/1.1\r\nHost: example.com:8080\r\n\r\n").host, "example.com");
  EXPECT_EQ(Read("GET / HTTP/1.1\r\nhost:\t[2001:db8::1]:80 \r\n\r\n").host, "2001:db8::1");
  EXPECT_EQ(Read("GET / HTTP/1.0\r\nHOST: a.b\r\n\r\n").host, "a.b");
}

TEST(HttpHead, AbsoluteFormMustNameTheHostsHost) {
  EXPECT_EQ(Read("GET http://Example.com:80/x?y HTTP/1.1\r\nHost: example.com\r\n\r\n").status,
            HttpHeadStatus::kHost);
  EXPECT_EQ(Read("GET http://evil.test/ HTTP/1.1\r\nHost: pypi.org\r\n\r\n").status,
            HttpHeadStatus::kInvalid);
  EXPECT_EQ(Read("GET http://user@pypi.org/ HTTP/1.1\r\nHost: pypi.org\r\n\r\n").status,
            HttpHeadStatus::kInvalid);
  EXPECT_EQ(Read("GET ftp://pypi.org/ HTTP/1.1\r\nHost: pypi.org\r\n\r\n").status,
            HttpHeadStatus::kInvalid);
  EXPECT_EQ(Read("CONNECT pypi.org:443 HTTP/1.1\r\nHost: pypi.org:443\r\n\r\n").status,
            HttpHeadStatus::kHost);
  EXPECT_EQ(Read("CONNECT evil.test:443 HTTP/1.1\r\nHost: pypi.org\r\n\r\n").status,
            HttpHeadStatus::kInvalid);
  EXPECT_EQ(Read("OPTIONS * HTTP/1.1\r\nHost: pypi.org\r\n\r\n").status, HttpHeadStatus::kHost);
}

TEST(HttpHead, ExactlyOneHost) {
  EXPECT_EQ(Read("GET / HTTP/1.1\r\nAccept: */*\r\n\r\n").status, HttpHeadStatus::kInvalid);
  EXPECT_EQ(Read("GET / HTTP/1.1\r\nHost: a.com\r\nHost: b.com\r\n\r\n").status,
            HttpHeadStatus::kInvalid);
  EXPECT_EQ(Read("GET / HTTP/1.1\r\nHost: a.com\r\nhOST: a.com\r\n\r\n").status,
            HttpHeadStatus::kInvalid);
}

TEST(HttpHead, MalformedHostValues) {
  for (const char* value :
       {"user@pypi.org", "user:pw@pypi.org", "pypi.org:", "pypi.org:65536", "pypi.org:8x",
        "pypi org", "pypi.org/x", "", "[::1", "[zz]", "pypi%2eorg", "pypi.org\\@evil"}) {
    const std::string head = std::string("GET / HTTP/1.1\r\nHost: ") + value + "\r\n\r\n";
    EXPECT_EQ(Read(head).status, HttpHeadStatus::kInvalid) << value;
  }
}

TEST(HttpHead, LineFramingDifferentialsAreInvalid) {
  for (const std::string& head :
       {std::string("GET / HTTP/1.1\nHost: a.com\n\n"),                   // bare LF
        std::string("GET / HTTP/1.1\r\nHost: a.com\rX: y\r\n\r\n"),       // bare CR
        std::string("GET / HTTP/1.1\r\nHost: a.com\r\n x\r\n\r\n"),       // obs-fold
        std::string("GET / HTTP/1.1\r\nHost : a.com\r\n\r\n"),            // space before colon
        std::string("GET / HTTP/1.1\r\nHost: a.com\r\nX: \x01\r\n\r\n"),  // control byte
        std::string("GET / HTTP/1.1\r\nHo\0st: a.com\r\n\r\n", 32),       // NUL
        std::string("GET / HTTP/2.0\r\nHost: a.com\r\n\r\n"),             // version
        std::string("GET /  HTTP/1.1\r\nHost: a.com\r\n\r\n"),            // extra space
        std::string("GET\t/ HTTP/1.1\r\nHost: a.com\r\n\r\n")}) {
    EXPECT_EQ(Read(head).status, HttpHeadStatus::kInvalid) << head;
  }
}

TEST(HttpHead, OtherProtocolsAreRefusedAtTheirFirstLine) {
  EXPECT_EQ(Read("SSH-2.0-OpenSSH_9.2\r\n").status, HttpHeadStatus::kInvalid);
  EXPECT_EQ(Read(std::string("\x16\x03\x01", 3)).status, HttpHeadStatus::kInvalid);
  EXPECT_EQ(Read("EHLO x\r\n").status, HttpHeadStatus::kInvalid);
}

TEST(HttpHead, PrefixesNeedMore) {
  const std::string head = "GET /simple/ HTTP/1.1\r\nHost: pypi.org\r\nUser-Agent: x\r\n\r\n";
  for (size_t size = 0; size < head.size(); ++size) {
    EXPECT_EQ(Read(head.substr(0, size)).status, HttpHeadStatus::kNeedMore) << size;
  }
  EXPECT_EQ(Read(head).status, HttpHeadStatus::kHost);
  // Bytes after the head (a body, a pipelined request) do not matter.
  EXPECT_EQ(Read(head + "POST / HTTP/1.1\r\nHost: evil.test\r\n\r\n").host, "pypi.org");
}

TEST(HttpHead, OversizeHeadsAreInvalid) {
  std::string head = "GET / HTTP/1.1\r\nHost: pypi.org\r\nX: " + std::string(kMaxHttpHead, 'a');
  EXPECT_EQ(Read(head).status, HttpHeadStatus::kInvalid);
  std::string fields = "GET / HTTP/1.1\r\nHost: pypi.org\r\n";
  for (int i = 0; i < 101; ++i) fields += "X: y\r\n";
  EXPECT_EQ(Read(fields + "\r\n").status, HttpHeadStatus::kInvalid);
}

}  // namespace
}  // namespace sbx::netd
