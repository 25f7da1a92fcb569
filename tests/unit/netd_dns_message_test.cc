// Unit tests for sbx-netd's DNS query parser and answer builders.
#include "src/netd/dns_message.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace sbx::netd {
namespace {

// A query as a stub resolver sends it: header (id 0x1234, RD), one question.
std::vector<uint8_t> Query(const std::vector<std::string>& labels, uint16_t qtype,
                           uint16_t qdcount = 1, uint8_t flags_high = 0x01) {
  std::vector<uint8_t> packet = {0x12, 0x34, flags_high, 0x00, 0x00, static_cast<uint8_t>(qdcount),
                                 0,    0,    0,          0,    0,    0};
  for (const std::string& label : labels) {
    packet.push_back(static_cast<uint8_t>(label.size()));
    packet.insert(packet.end(), label.begin(), label.end());
  }
  packet.push_back(0);
  packet.push_back(static_cast<uint8_t>(qtype >> 8));
  packet.push_back(static_cast<uint8_t>(qtype));
  packet.push_back(0);
  packet.push_back(1);  // IN
  return packet;
}

uint16_t At16(const std::vector<uint8_t>& bytes, size_t at) {
  return static_cast<uint16_t>(bytes[at] << 8 | bytes[at + 1]);
}

TEST(DnsQuery, ParsesAnAQuery) {
  const auto packet = Query({"PyPI", "org"}, kDnsTypeA);
  const DnsQuery query = ParseDnsQuery(packet);
  ASSERT_EQ(query.status, DnsParseStatus::kQuery);
  EXPECT_EQ(query.id, 0x1234);
  EXPECT_TRUE(query.recursion_desired);
  EXPECT_TRUE(query.name_valid);
  EXPECT_EQ(query.name, "pypi.org");
  EXPECT_EQ(query.qtype, kDnsTypeA);
  EXPECT_EQ(query.qclass, kDnsClassIn);
  // The question is kept as sent, case included (resolvers using 0x20 check it).
  EXPECT_EQ(query.question, std::vector<uint8_t>(packet.begin() + 12, packet.end()));
}

TEST(DnsQuery, ParsesOtherTypesAndUnderscores) {
  for (uint16_t type : {kDnsTypeAaaa, kDnsTypeHttps, kDnsTypeSvcb, kDnsTypeTxt}) {
    const DnsQuery query = ParseDnsQuery(Query({"_dmarc", "example", "com"}, type));
    ASSERT_EQ(query.status, DnsParseStatus::kQuery);
    EXPECT_TRUE(query.name_valid);
    EXPECT_EQ(query.name, "_dmarc.example.com");
    EXPECT_EQ(query.qtype, type);
  }
}

TEST(DnsQuery, IgnoresAnEdnsOptRecord) {
  auto packet = Query({"example", "com"}, kDnsTypeA);
  packet[11] = 1;  // ARCOUNT
  const std::vector<uint8_t> opt = {0, 0, 41, 0x04, 0xd0, 0, 0, 0, 0, 0, 0};
  packet.insert(packet.end(), opt.begin(), opt.end());
  const DnsQuery query = ParseDnsQuery(packet);
  ASSERT_EQ(query.status, DnsParseStatus::kQuery);
  EXPECT_EQ(query.question.size(), 13u + 4u);
}

TEST(DnsQuery, CompressionPointerInTheQuestionMakesTheNameInvalid) {
  std::vector<uint8_t> packet = {0x12, 0x34, 0x01, 0,   0,   1,    0,  0, 0, 0, 0,
                                 0,    3,    'w',  'w', 'w', 0xc0, 12, 0, 1, 0, 1};
  const DnsQuery query = ParseDnsQuery(packet);
  ASSERT_EQ(query.status, DnsParseStatus::kQuery);
  EXPECT_FALSE(query.name_valid);
}

TEST(DnsQuery, LabelOf64BytesIsAReservedLabelType) {
  // 64 = 0x40: the length byte is an extended label type, so the question's end is unknown.
  const DnsQuery query = ParseDnsQuery(Query({std::string(64, 'a'), "com"}, kDnsTypeA));
  EXPECT_EQ(query.status, DnsParseStatus::kFormatError);
  EXPECT_FALSE(query.name_valid);
}

TEST(DnsQuery, LabelOf63BytesIsValid) {
  const DnsQuery query = ParseDnsQuery(Query({std::string(63, 'a'), "com"}, kDnsTypeA));
  ASSERT_EQ(query.status, DnsParseStatus::kQuery);
  EXPECT_TRUE(query.name_valid);
}

TEST(DnsQuery, NameOver253BytesIsInvalid) {
  // 4 labels of 63 = 252 + 3 dots = 255 text bytes.
  const std::string label(63, 'a');
  const DnsQuery too_long = ParseDnsQuery(Query({label, label, label, label}, kDnsTypeA));
  ASSERT_EQ(too_long.status, DnsParseStatus::kQuery);
  EXPECT_FALSE(too_long.name_valid);
  // 63+1+63+1+63+1+61 = 253: the longest valid name.
  const DnsQuery longest =
      ParseDnsQuery(Query({label, label, label, std::string(61, 'b')}, kDnsTypeA));
  ASSERT_EQ(longest.status, DnsParseStatus::kQuery);
  EXPECT_TRUE(longest.name_valid);
  EXPECT_EQ(longest.name.size(), 253u);
  const DnsQuery one_more =
      ParseDnsQuery(Query({label, label, label, std::string(62, 'b')}, kDnsTypeA));
  EXPECT_FALSE(one_more.name_valid);
}

TEST(DnsQuery, CrLfSpacesAndOtherBytesInLabelsAreInvalid) {
  for (const std::string& bad :
       {std::string("a\r\nb"), std::string("a b"), std::string("a.b"), std::string("a\0b", 3),
        std::string("caf\xc3\xa9"), std::string("a/b"), std::string("a*")}) {
    const DnsQuery query = ParseDnsQuery(Query({bad, "com"}, kDnsTypeA));
    ASSERT_EQ(query.status, DnsParseStatus::kQuery) << bad;
    EXPECT_FALSE(query.name_valid) << bad;
  }
}

TEST(DnsQuery, RootAndEmptyNamesAreInvalid) {
  const DnsQuery query = ParseDnsQuery(Query({}, kDnsTypeA));
  ASSERT_EQ(query.status, DnsParseStatus::kQuery);
  EXPECT_FALSE(query.name_valid);
}

TEST(DnsQuery, ResponsesAreDropped) {
  EXPECT_EQ(ParseDnsQuery(Query({"a", "com"}, kDnsTypeA, 1, 0x81)).status, DnsParseStatus::kDrop);
}

TEST(DnsQuery, TruncatedPacketsAreNeverReadPastTheirEnd) {
  const auto packet = Query({"files", "pythonhosted", "org"}, kDnsTypeA);
  for (size_t size = 0; size < packet.size(); ++size) {
    const std::vector<uint8_t> cut(packet.begin(), packet.begin() + size);
    const DnsQuery query = ParseDnsQuery(cut);
    if (size < kDnsHeaderSize) {
      EXPECT_EQ(query.status, DnsParseStatus::kDrop) << size;
    } else {
      EXPECT_EQ(query.status, DnsParseStatus::kFormatError) << size;
    }
  }
}

TEST(DnsQuery, OtherThanOneQuestionIsAFormatError) {
  EXPECT_EQ(ParseDnsQuery(Query({"a", "com"}, kDnsTypeA, 2)).status, DnsParseStatus::kFormatError);
  EXPECT_EQ(ParseDnsQuery(Query({"a", "com"}, kDnsTypeA, 0)).status, DnsParseStatus::kFormatError);
}

TEST(DnsQuery, OpcodesOtherThanQueryAreNotImplemented) {
  // opcode 5 (UPDATE) in bits 3-6 of the third byte.
  EXPECT_EQ(ParseDnsQuery(Query({"a", "com"}, kDnsTypeA, 1, 5 << 3)).status,
            DnsParseStatus::kNotImplemented);
}

TEST(DnsAnswer, AddressAnswerFieldByField) {
  const auto packet = Query({"PyPI", "org"}, kDnsTypeA);
  const DnsQuery query = ParseDnsQuery(packet);
  const uint8_t address[4] = {198, 18, 4, 17};
  const std::vector<uint8_t> answer = BuildDnsAddressAnswer(query, address);
  ASSERT_EQ(answer.size(), 12 + query.question.size() + 16);
  EXPECT_EQ(At16(answer, 0), 0x1234);  // id
  EXPECT_EQ(answer[2], 0x85);          // QR, opcode 0, AA, RD
  EXPECT_EQ(answer[3], 0x80);          // RA, rcode NOERROR
  EXPECT_EQ(At16(answer, 4), 1);       // QDCOUNT
  EXPECT_EQ(At16(answer, 6), 1);       // ANCOUNT
  EXPECT_EQ(At16(answer, 8), 0);       // NSCOUNT
  EXPECT_EQ(At16(answer, 10), 0);      // ARCOUNT
  EXPECT_TRUE(std::equal(query.question.begin(), query.question.end(), answer.begin() + 12));
  const size_t rr = 12 + query.question.size();
  EXPECT_EQ(At16(answer, rr), 0xc00c);  // name: pointer to the question
  EXPECT_EQ(At16(answer, rr + 2), kDnsTypeA);
  EXPECT_EQ(At16(answer, rr + 4), kDnsClassIn);
  EXPECT_EQ(uint32_t{At16(answer, rr + 6)} << 16 | At16(answer, rr + 8), kDnsAnswerTtlSeconds);
  EXPECT_EQ(At16(answer, rr + 10), 4);  // RDLENGTH
  EXPECT_EQ(std::vector<uint8_t>(answer.begin() + rr + 12, answer.end()),
            (std::vector<uint8_t>{198, 18, 4, 17}));
}

TEST(DnsAnswer, NoDataAndNxDomainEchoTheQuestionWithoutRecords) {
  const DnsQuery query = ParseDnsQuery(Query({"evil", "tld"}, kDnsTypeAaaa, 1, 0x00));
  for (uint8_t rcode : {kDnsRcodeNoError, kDnsRcodeNxDomain}) {
    const auto answer = BuildDnsEmptyAnswer(query, rcode);
    ASSERT_EQ(answer.size(), 12 + query.question.size());
    EXPECT_EQ(answer[2], 0x84);  // QR, AA; RD not set in the query, not in the answer
    EXPECT_EQ(answer[3], 0x80 | rcode);
    EXPECT_EQ(At16(answer, 4), 1);
    EXPECT_EQ(At16(answer, 6), 0);
    EXPECT_TRUE(std::equal(query.question.begin(), query.question.end(), answer.begin() + 12));
  }
}

TEST(DnsAnswer, HeaderOnlyAnswerHasNoQuestion) {
  const DnsQuery query = ParseDnsQuery(Query({"a", "com"}, kDnsTypeA, 2));
  const auto answer = BuildDnsHeaderOnlyAnswer(query, kDnsRcodeFormErr);
  ASSERT_EQ(answer.size(), 12u);
  EXPECT_EQ(At16(answer, 0), 0x1234);
  EXPECT_EQ(answer[3], 0x80 | kDnsRcodeFormErr);
  EXPECT_EQ(At16(answer, 4), 0);
}

TEST(DnsTypeName, NamesKnownTypesAndNumbersOthers) {
  EXPECT_EQ(DnsTypeName(kDnsTypeA), "A");
  EXPECT_EQ(DnsTypeName(kDnsTypeHttps), "HTTPS");
  EXPECT_EQ(DnsTypeName(999), "TYPE999");
}

}  // namespace
}  // namespace sbx::netd
