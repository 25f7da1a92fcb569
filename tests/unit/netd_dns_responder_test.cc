// Unit tests for sbx-netd's stub DNS answers: from policy, never forwarded.
#include "src/netd/dns_responder.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "src/netd/dns_message.h"

namespace sbx::netd {
namespace {

std::vector<uint8_t> Query(const std::string& name, uint16_t qtype) {
  std::vector<uint8_t> packet = {0xbe, 0xef, 0x01, 0, 0, 1, 0, 0, 0, 0, 0, 0};
  size_t start = 0;
  while (start <= name.size()) {
    size_t dot = name.find('.', start);
    if (dot == std::string::npos) dot = name.size();
    packet.push_back(static_cast<uint8_t>(dot - start));
    packet.insert(packet.end(), name.begin() + start, name.begin() + dot);
    start = dot + 1;
  }
  packet.insert(packet.end(),
                {0, static_cast<uint8_t>(qtype >> 8), static_cast<uint8_t>(qtype), 0, 1});
  return packet;
}

class DnsResponderTest : public ::testing::Test {
 protected:
  DnsResponderTest() {
    for (const char* text : {"pypi.org", "*.example.com:22,443"}) {
      policy_.allow.push_back(*ParseNetworkRule(text, "allow"));
    }
    policy_.deny.push_back(*ParseNetworkRule("uploads.example.com:*", "deny"));
  }
  uint8_t Rcode(const DnsOutcome& outcome) { return outcome.reply.at(3) & 0x0f; }
  uint16_t AnswerCount(const DnsOutcome& outcome) {
    return static_cast<uint16_t>(outcome.reply.at(6) << 8 | outcome.reply.at(7));
  }

  NetworkAllowlist policy_;
  FakeIpPool pool_;
};

TEST_F(DnsResponderTest, AllowedNameGetsItsFakeAddress) {
  const DnsOutcome outcome = AnswerDnsQuery(Query("PyPI.org", kDnsTypeA), policy_, pool_);
  EXPECT_EQ(Rcode(outcome), kDnsRcodeNoError);
  ASSERT_EQ(AnswerCount(outcome), 1);
  const auto address = pool_.AddressOf("pypi.org");
  ASSERT_TRUE(address);
  const std::vector<uint8_t> rdata(outcome.reply.end() - 4, outcome.reply.end());
  EXPECT_EQ(rdata, (std::vector<uint8_t>{198, static_cast<uint8_t>(*address >> 16 & 0xff),
                                         static_cast<uint8_t>(*address >> 8 & 0xff),
                                         static_cast<uint8_t>(*address & 0xff)}));
  ASSERT_TRUE(outcome.record);
  EXPECT_TRUE(outcome.record->allowed);
  EXPECT_EQ(outcome.record->rule, "allow[0]");
  EXPECT_EQ(outcome.record->answer, Ipv4ToString(*address));
  EXPECT_EQ(outcome.record->qname, "pypi.org");
}

TEST_F(DnsResponderTest, OtherTypesOfAllowedNamesGetNoData) {
  for (uint16_t type : {kDnsTypeAaaa, kDnsTypeHttps, kDnsTypeSvcb, kDnsTypeTxt, uint16_t{15}}) {
    const DnsOutcome outcome = AnswerDnsQuery(Query("a.example.com", type), policy_, pool_);
    EXPECT_EQ(Rcode(outcome), kDnsRcodeNoError) << type;
    EXPECT_EQ(AnswerCount(outcome), 0) << type;
    EXPECT_EQ(outcome.record->answer, "NODATA");
  }
  EXPECT_EQ(pool_.size(), 0u);  // only A queries take an address
}

TEST_F(DnsResponderTest, DeniedUnknownAndInvalidNamesGetNxDomain) {
  const DnsOutcome denied = AnswerDnsQuery(Query("uploads.example.com", kDnsTypeA), policy_, pool_);
  EXPECT_EQ(Rcode(denied), kDnsRcodeNxDomain);
  EXPECT_EQ(denied.record->reason, "deny_rule");
  const DnsOutcome unknown = AnswerDnsQuery(Query("x9f2.evil.tld", kDnsTypeA), policy_, pool_);
  EXPECT_EQ(Rcode(unknown), kDnsRcodeNxDomain);
  EXPECT_EQ(unknown.record->reason, "no_rule");
  EXPECT_EQ(unknown.record->answer, "NXDOMAIN");
  const DnsOutcome apex = AnswerDnsQuery(Query("example.com", kDnsTypeA), policy_, pool_);
  EXPECT_EQ(Rcode(apex), kDnsRcodeNxDomain);  // *.example.com does not cover the apex
  const DnsOutcome crlf = AnswerDnsQuery(Query("pypi\r\n.org", kDnsTypeA), policy_, pool_);
  EXPECT_EQ(Rcode(crlf), kDnsRcodeNxDomain);
  EXPECT_EQ(pool_.size(), 0u);
}

TEST_F(DnsResponderTest, MalformedAndResponsePackets) {
  auto two_questions = Query("pypi.org", kDnsTypeA);
  two_questions[5] = 2;
  const DnsOutcome formerr = AnswerDnsQuery(two_questions, policy_, pool_);
  EXPECT_EQ(Rcode(formerr), kDnsRcodeFormErr);
  EXPECT_EQ(formerr.record->answer, "FORMERR");
  auto response = Query("pypi.org", kDnsTypeA);
  response[2] |= 0x80;
  const DnsOutcome dropped = AnswerDnsQuery(response, policy_, pool_);
  EXPECT_TRUE(dropped.reply.empty());
  EXPECT_FALSE(dropped.record);
}

}  // namespace
}  // namespace sbx::netd
