// Fuzzes sbx-netd's DNS stub parser (src/netd/dns_message.h) with whole UDP payloads.
//
// Invariants beyond "no crash": a valid name is lower-case [a-z0-9-_] labels of 1-63 bytes,
// at most 253 bytes; the question is the packet's own bytes; every answer echoes id, RD and
// question, and an answer with its QR bit cleared parses back to the same query.
#include "src/netd/dns_message.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tests/fuzz/fuzz_check.h"

namespace {

using sbx::netd::DnsParseStatus;
using sbx::netd::DnsQuery;

void CheckValidName(const std::string& name) {
  SBX_FUZZ_CHECK(!name.empty() && name.size() <= 253);
  size_t label = 0;
  for (char c : name) {
    if (c == '.') {
      SBX_FUZZ_CHECK(label > 0);
      label = 0;
      continue;
    }
    const bool allowed = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
    SBX_FUZZ_CHECK(allowed);
    SBX_FUZZ_CHECK(++label <= 63);
  }
  SBX_FUZZ_CHECK(label > 0);
}

// An answer carries the query's id, QR=1, RD echoed, `rcode`, and (unless header-only) the
// question; cleared of QR it is again a query for the same question.
void CheckAnswer(const DnsQuery& query, const std::vector<uint8_t>& answer, uint8_t rcode,
                 bool with_question) {
  SBX_FUZZ_CHECK(answer.size() >= sbx::netd::kDnsHeaderSize);
  SBX_FUZZ_CHECK((answer[0] << 8 | answer[1]) == query.id);
  SBX_FUZZ_CHECK((answer[2] & 0x80) != 0);
  SBX_FUZZ_CHECK(((answer[2] & 0x01) != 0) == query.recursion_desired);
  SBX_FUZZ_CHECK((answer[3] & 0x0f) == rcode);
  SBX_FUZZ_CHECK((answer[4] << 8 | answer[5]) == (with_question ? 1 : 0));
  if (!with_question) return;
  SBX_FUZZ_CHECK(std::equal(query.question.begin(), query.question.end(),
                            answer.begin() + sbx::netd::kDnsHeaderSize));
  // Without its records, so it stays within the query size the parser reads.
  std::vector<uint8_t> as_query(answer.begin(),
                                answer.begin() + sbx::netd::kDnsHeaderSize + query.question.size());
  as_query[2] &= 0x7f;
  const DnsQuery again = sbx::netd::ParseDnsQuery(as_query);
  SBX_FUZZ_CHECK(again.status == DnsParseStatus::kQuery);
  SBX_FUZZ_CHECK(again.id == query.id && again.question == query.question);
  SBX_FUZZ_CHECK(again.name == query.name && again.name_valid == query.name_valid);
  SBX_FUZZ_CHECK(again.qtype == query.qtype && again.qclass == query.qclass);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> packet(data, size);
  const DnsQuery query = sbx::netd::ParseDnsQuery(packet);
  switch (query.status) {
    case DnsParseStatus::kDrop:
      SBX_FUZZ_CHECK(size < sbx::netd::kDnsHeaderSize || size > sbx::netd::kDnsMaxQuerySize ||
                     (data[2] & 0x80) != 0);
      return 0;
    case DnsParseStatus::kFormatError:
    case DnsParseStatus::kNotImplemented:
      SBX_FUZZ_CHECK(query.question.empty());
      CheckAnswer(query, sbx::netd::BuildDnsHeaderOnlyAnswer(query, sbx::netd::kDnsRcodeFormErr),
                  sbx::netd::kDnsRcodeFormErr, false);
      return 0;
    case DnsParseStatus::kQuery:
      break;
  }
  SBX_FUZZ_CHECK(query.question.size() >= 5);
  SBX_FUZZ_CHECK(
      std::equal(query.question.begin(), query.question.end(), data + sbx::netd::kDnsHeaderSize));
  if (query.name_valid) CheckValidName(query.name);
  (void)sbx::netd::DnsTypeName(query.qtype);
  const uint8_t address[4] = {100, 64, 0, 7};
  const std::vector<uint8_t> answer = sbx::netd::BuildDnsAddressAnswer(query, address);
  CheckAnswer(query, answer, sbx::netd::kDnsRcodeNoError, true);
  // The A record: a pointer to the question's name, type A, class IN, 4 bytes of address.
  SBX_FUZZ_CHECK(answer.size() == sbx::netd::kDnsHeaderSize + query.question.size() + 16);
  SBX_FUZZ_CHECK(std::equal(address, address + 4, answer.end() - 4));
  CheckAnswer(query, sbx::netd::BuildDnsEmptyAnswer(query, sbx::netd::kDnsRcodeNxDomain),
              sbx::netd::kDnsRcodeNxDomain, true);
  return 0;
}
