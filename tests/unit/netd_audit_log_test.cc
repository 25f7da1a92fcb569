// Unit tests for sbx-netd's JSON-lines audit log.
#include "src/netd/audit_log.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cctype>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace sbx::netd {
namespace {

// Everything written to a pipe, split into lines (each must end with '\n').
std::vector<std::string> Lines(int fd) {
  std::string all;
  char buffer[4096];
  ssize_t got;
  while ((got = read(fd, buffer, sizeof(buffer))) > 0) all.append(buffer, static_cast<size_t>(got));
  std::vector<std::string> lines;
  size_t at = 0;
  while (at < all.size()) {
    const size_t end = all.find('\n', at);
    EXPECT_NE(end, std::string::npos) << "unterminated line";
    if (end == std::string::npos) break;
    lines.push_back(all.substr(at, end - at));
    at = end + 1;
  }
  return lines;
}

// "YYYY-MM-DDTHH:MM:SS.mmmZ". (No std::regex: GCC 12 warns inside it under ASan.)
bool IsUtcMillisecondTimestamp(const std::string& text) {
  const std::string shape = "dddd-dd-ddTdd:dd:dd.dddZ";
  if (text.size() != shape.size()) return false;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 'd' ? !std::isdigit(static_cast<unsigned char>(text[i])) : text[i] != shape[i])
      return false;
  }
  return true;
}

class AuditLogTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(pipe2(pipe_, O_CLOEXEC | O_NONBLOCK), 0); }
  void TearDown() override {
    close(pipe_[0]);
    close(pipe_[1]);
  }
  int pipe_[2];
};

TEST_F(AuditLogTest, DnsAndConnRecordsCarryTheCommonFields) {
  AuditLog log(pipe_[1], "r7f3a");
  log.LogDns({"pypi.org", "A", true, "allow[0]", "", "198.18.4.17"});
  ConnAuditRecord conn;
  conn.dst = "198.18.4.17:443";
  conn.name = "pypi.org";
  conn.name_src = "fakeip";
  conn.sni = "pypi.org";
  conn.allowed = true;
  conn.rule = "allow[0]";
  conn.upstream = "151.101.0.223:443";
  conn.bytes_up = 812;
  conn.bytes_down = 48213;
  conn.ms = 143;
  conn.end = "fin";
  log.LogConn(conn);
  ConnAuditRecord denied;
  denied.dst = "203.0.113.9:22";
  denied.reason = "no_rule";
  log.LogConn(denied);
  ConnAuditRecord datagram;
  datagram.proto = "udp";
  datagram.dst = "198.18.0.7:443";
  datagram.name = "pypi.org";
  datagram.name_src = "fakeip";
  datagram.reason = "udp";
  log.LogConn(datagram);

  const auto lines = Lines(pipe_[0]);
  ASSERT_EQ(lines.size(), 4u);
  const auto dns = nlohmann::json::parse(lines[0]);
  EXPECT_EQ(lines[0].rfind(R"({"v":1,"run":"r7f3a","seq":1,"ts":")", 0), 0u) << lines[0];
  EXPECT_TRUE(IsUtcMillisecondTimestamp(dns["ts"].get<std::string>())) << dns["ts"];
  EXPECT_EQ(dns["ev"], "dns");
  EXPECT_EQ(dns["qname"], "pypi.org");
  EXPECT_EQ(dns["qtype"], "A");
  EXPECT_EQ(dns["decision"], "allow");
  EXPECT_EQ(dns["rule"], "allow[0]");
  EXPECT_EQ(dns["answer"], "198.18.4.17");
  EXPECT_FALSE(dns.contains("reason"));

  const auto allowed = nlohmann::json::parse(lines[1]);
  EXPECT_EQ(allowed["seq"], 2);
  EXPECT_EQ(allowed["ev"], "conn");
  EXPECT_EQ(allowed["proto"], "tcp");
  EXPECT_EQ(allowed["name_src"], "fakeip");
  EXPECT_EQ(allowed["sni"], "pypi.org");
  EXPECT_EQ(allowed["upstream"], "151.101.0.223:443");
  EXPECT_EQ(allowed["mitm"], false);
  EXPECT_EQ(allowed["bytes_up"], 812);
  EXPECT_EQ(allowed["bytes_down"], 48213);
  EXPECT_EQ(allowed["ms"], 143);
  EXPECT_EQ(allowed["end"], "fin");

  const auto deny = nlohmann::json::parse(lines[2]);
  EXPECT_EQ(deny["seq"], 3);
  EXPECT_TRUE(deny["name"].is_null());
  EXPECT_EQ(deny["decision"], "deny");
  EXPECT_EQ(deny["reason"], "no_rule");
  EXPECT_EQ(deny["proto"], "tcp");
  EXPECT_FALSE(deny.contains("bytes_up"));
  EXPECT_FALSE(deny.contains("upstream"));

  const auto udp = nlohmann::json::parse(lines[3]);
  EXPECT_EQ(udp["proto"], "udp");
  EXPECT_EQ(udp["name"], "pypi.org");
  EXPECT_EQ(udp["decision"], "deny");
  EXPECT_EQ(udp["reason"], "udp");
}

TEST_F(AuditLogTest, HostileNamesCannotBreakOrForgeALine) {
  AuditLog log(pipe_[1], "run");
  const std::string hostile =
      std::string("a\"}\n{\"v\":1,\"forged\":true}\r\n\x01\x7f\xff\xfe caf\xc3\xa9 ") +
      std::string("\0z", 2);
  log.LogDns({hostile, "TXT", false, "", "no_rule", "NXDOMAIN"});
  ConnAuditRecord conn;
  conn.dst = "198.18.0.1:80";
  conn.host = hostile;
  conn.reason = "host_mismatch";
  log.LogConn(conn);
  const auto lines = Lines(pipe_[0]);
  ASSERT_EQ(lines.size(), 2u);
  for (const std::string& line : lines) {
    for (unsigned char c : line) ASSERT_TRUE(c >= 0x20 && c < 0x7f) << line;  // pure ASCII
    const auto record = nlohmann::json::parse(line);
    EXPECT_FALSE(record.contains("forged"));
  }
  const std::string qname = nlohmann::json::parse(lines[0])["qname"];
  EXPECT_EQ(qname.substr(0, 3), "a\"}");
  EXPECT_NE(qname.find("\n{"), std::string::npos);           // kept, escaped
  EXPECT_NE(qname.find("\xef\xbf\xbd"), std::string::npos);  // invalid UTF-8 replaced
  EXPECT_NE(qname.find("caf\xc3\xa9"), std::string::npos);   // valid UTF-8 kept
}

TEST_F(AuditLogTest, NoFdWritesNothing) {
  AuditLog log(-1, "run");
  log.LogDns({"a.com", "A", true, "allow[0]", "", "198.18.0.1"});
  char byte;
  EXPECT_LT(read(pipe_[0], &byte, 1), 0);
}

TEST(DenyReasons, TheFixedList) {
  for (const char* reason : {"no_rule", "deny_rule", "port", "internal_address", "unmapped_fake_ip",
                             "sni_mismatch", "host_mismatch", "resolve_failed", "limit_connections",
                             "limit_bytes", "timeout", "upstream_error", "tls_verify_failed",
                             "http_rule", "placeholder_leak", "proxy_request", "udp"}) {
    EXPECT_TRUE(IsDenyReason(reason)) << reason;
  }
  EXPECT_FALSE(IsDenyReason("blocked"));
  EXPECT_FALSE(IsDenyReason(""));
}

}  // namespace
}  // namespace sbx::netd
