// The DNS wire format as sbx-netd's stub resolver needs it: a bounded parser for one query and
// the builders of its three kinds of answer (one A record, NODATA, an error code).
//
// The stub answers from policy and never forwards, so it only has to understand what a stub
// resolver sends: a header and exactly one question. The parser is strict where a loose one
// would let a name smuggle bytes past the policy or the audit log:
//   - a packet shorter than the header, or with QR=1 (a response, e.g. a reflection attempt),
//     is dropped without an answer;
//   - QDCOUNT other than 1, an opcode other than QUERY, a truncated question, or a label type
//     other than a plain length (0x40/0x80 extended types) get FORMERR/NOTIMP with no question;
//   - a compression pointer in the question, a label over 63 bytes, a name over 253 bytes, and
//     any byte outside [A-Za-z0-9-_] make the name invalid: the answer is NXDOMAIN.
// The answer section, additional records (EDNS OPT) and trailing bytes of a query are ignored.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace sbx::netd {

inline constexpr uint16_t kDnsTypeA = 1;
inline constexpr uint16_t kDnsTypeTxt = 16;
inline constexpr uint16_t kDnsTypeAaaa = 28;
inline constexpr uint16_t kDnsTypeSvcb = 64;
inline constexpr uint16_t kDnsTypeHttps = 65;
inline constexpr uint16_t kDnsClassIn = 1;

inline constexpr uint8_t kDnsRcodeNoError = 0;
inline constexpr uint8_t kDnsRcodeFormErr = 1;
inline constexpr uint8_t kDnsRcodeServFail = 2;
inline constexpr uint8_t kDnsRcodeNxDomain = 3;
inline constexpr uint8_t kDnsRcodeNotImp = 4;

inline constexpr size_t kDnsHeaderSize = 12;
// Queries larger than this are not read (a stub's query is well under 300 bytes with EDNS).
inline constexpr size_t kDnsMaxQuerySize = 1232;

enum class DnsParseStatus {
  kQuery,           // one well-formed question; `name_valid` says whether the name may be used
  kDrop,            // not worth an answer (too short to carry an id, or QR=1)
  kFormatError,     // answer FORMERR (header only)
  kNotImplemented,  // answer NOTIMP (header only): opcode other than QUERY
};

struct DnsQuery {
  DnsParseStatus status = DnsParseStatus::kDrop;
  uint16_t id = 0;
  bool recursion_desired = false;
  // The question's bytes exactly as received (name, type, class), echoed in every answer so
  // the client's resolver can match it (glibc compares the question, 0x20 case included).
  std::vector<uint8_t> question;
  // The name as dotted text: lower-cased when valid; when invalid, the raw label bytes
  // (possibly containing control bytes), for the audit log only.
  std::string name;
  bool name_valid = false;
  uint16_t qtype = 0;
  uint16_t qclass = 0;
};

DnsQuery ParseDnsQuery(std::span<const uint8_t> packet);

// The TTL of every answer. One second: the stub is local (a repeat query costs microseconds),
// and a fake address must not outlive the netd that handed it out in some long-lived cache of
// a warm session; the mapping itself never changes within a run, so a short TTL loses nothing.
inline constexpr uint32_t kDnsAnswerTtlSeconds = 1;

// The answer to `query` (status kQuery) carrying one A record with `ipv4` (network order).
std::vector<uint8_t> BuildDnsAddressAnswer(const DnsQuery& query, const uint8_t (&ipv4)[4]);
// NOERROR with no records (NODATA) or NXDOMAIN, SERVFAIL, ...: the question is echoed.
std::vector<uint8_t> BuildDnsEmptyAnswer(const DnsQuery& query, uint8_t rcode);
// FORMERR/NOTIMP for a query whose question could not be read: header only, QDCOUNT 0.
std::vector<uint8_t> BuildDnsHeaderOnlyAnswer(const DnsQuery& query, uint8_t rcode);

// "A", "AAAA", "HTTPS", ... or "TYPE<n>" (RFC 3597), for the audit log.
std::string DnsTypeName(uint16_t qtype);

}  // namespace sbx::netd
