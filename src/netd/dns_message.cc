// Parses one DNS query and builds sbx-netd's answers to it.
#include "src/netd/dns_message.h"

#include "base/ascii.h"

namespace sbx::netd {
namespace {

constexpr size_t kMaxLabel = 63;
constexpr size_t kMaxName = 253;  // as text, without the trailing dot

uint16_t Read16(std::span<const uint8_t> bytes, size_t at) {
  return static_cast<uint16_t>(bytes[at] << 8 | bytes[at + 1]);
}

void Append16(std::vector<uint8_t>& out, uint16_t value) {
  out.push_back(static_cast<uint8_t>(value >> 8));
  out.push_back(static_cast<uint8_t>(value & 0xff));
}

bool IsNameByte(uint8_t c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_';
}


// Walks the question's name from `at`. Returns the offset just past it, or 0 when the name runs
// off the packet or uses a reserved label type (its end is then unknown).
size_t WalkName(std::span<const uint8_t> packet, size_t at, DnsQuery& query) {
  bool valid = true;
  std::string& name = query.name;
  while (true) {
    if (at >= packet.size()) return 0;
    const uint8_t length = packet[at];
    if ((length & 0xc0) == 0xc0) {
      // A compression pointer: legal in general, but a query has nothing earlier to point at
      // and following it would let two names share bytes. It ends the name.
      if (at + 2 > packet.size()) return 0;
      query.name_valid = false;
      return at + 2;
    }
    if ((length & 0xc0) != 0) return 0;  // 0x40 (extended label) and 0x80: reserved types
    ++at;
    if (length == 0) break;
    if (at + length > packet.size()) return 0;
    if (!name.empty()) name.push_back('.');
    if (length > kMaxLabel) valid = false;
    for (size_t i = 0; i < length; ++i) {
      const uint8_t c = packet[at + i];
      if (!IsNameByte(c)) valid = false;
      // The raw name is kept for the log only, bounded so a query cannot grow it.
      if (name.size() <= kMaxName + 1) name.push_back(AsciiLower(static_cast<char>(c)));
    }
    if (name.size() > kMaxName) valid = false;
    at += length;
  }
  query.name_valid = valid && !name.empty();
  return at;
}

std::vector<uint8_t> Header(const DnsQuery& query, uint8_t rcode, uint16_t qdcount,
                            uint16_t ancount) {
  std::vector<uint8_t> out;
  out.reserve(kDnsHeaderSize + query.question.size() + 16);
  Append16(out, query.id);
  // QR=1, opcode QUERY, AA=1 (the stub is the authority for its own view), RD echoed; RA=1 so
  // resolvers that check it do not report a lame server.
  out.push_back(static_cast<uint8_t>(0x80 | 0x04 | (query.recursion_desired ? 0x01 : 0x00)));
  out.push_back(static_cast<uint8_t>(0x80 | (rcode & 0x0f)));
  Append16(out, qdcount);
  Append16(out, ancount);
  Append16(out, 0);  // NSCOUNT
  Append16(out, 0);  // ARCOUNT
  return out;
}

}  // namespace

DnsQuery ParseDnsQuery(std::span<const uint8_t> packet) {
  DnsQuery query;
  if (packet.size() < kDnsHeaderSize || packet.size() > kDnsMaxQuerySize) return query;
  const uint8_t flags_high = packet[2];
  if (flags_high & 0x80) return query;  // QR=1: a response; answering could make a loop
  query.id = Read16(packet, 0);
  query.recursion_desired = flags_high & 0x01;
  const uint8_t opcode = (flags_high >> 3) & 0x0f;
  if (opcode != 0) {
    query.status = DnsParseStatus::kNotImplemented;
    return query;
  }
  query.status = DnsParseStatus::kFormatError;
  if (Read16(packet, 4) != 1) return query;  // QDCOUNT: exactly one question
  const size_t end_of_name = WalkName(packet, kDnsHeaderSize, query);
  if (end_of_name == 0 || end_of_name + 4 > packet.size()) {
    query.name.clear();
    query.name_valid = false;
    return query;
  }
  query.qtype = Read16(packet, end_of_name);
  query.qclass = Read16(packet, end_of_name + 2);
  query.question.assign(packet.begin() + kDnsHeaderSize, packet.begin() + end_of_name + 4);
  query.status = DnsParseStatus::kQuery;
  return query;
}

std::vector<uint8_t> BuildDnsAddressAnswer(const DnsQuery& query, const uint8_t (&ipv4)[4]) {
  std::vector<uint8_t> out = Header(query, kDnsRcodeNoError, 1, 1);
  out.insert(out.end(), query.question.begin(), query.question.end());
  Append16(out, 0xc000 | kDnsHeaderSize);  // the name: a pointer to the question's
  Append16(out, kDnsTypeA);
  Append16(out, kDnsClassIn);
  Append16(out, static_cast<uint16_t>(kDnsAnswerTtlSeconds >> 16));
  Append16(out, static_cast<uint16_t>(kDnsAnswerTtlSeconds & 0xffff));
  Append16(out, 4);
  out.insert(out.end(), ipv4, ipv4 + 4);
  return out;
}

std::vector<uint8_t> BuildDnsEmptyAnswer(const DnsQuery& query, uint8_t rcode) {
  std::vector<uint8_t> out = Header(query, rcode, 1, 0);
  out.insert(out.end(), query.question.begin(), query.question.end());
  return out;
}

std::vector<uint8_t> BuildDnsHeaderOnlyAnswer(const DnsQuery& query, uint8_t rcode) {
  return Header(query, rcode, 0, 0);
}

std::string DnsTypeName(uint16_t qtype) {
  switch (qtype) {
    case kDnsTypeA:
      return "A";
    case 2:
      return "NS";
    case 5:
      return "CNAME";
    case 6:
      return "SOA";
    case 12:
      return "PTR";
    case 15:
      return "MX";
    case kDnsTypeTxt:
      return "TXT";
    case kDnsTypeAaaa:
      return "AAAA";
    case 33:
      return "SRV";
    case kDnsTypeSvcb:
      return "SVCB";
    case kDnsTypeHttps:
      return "HTTPS";
    case 255:
      return "ANY";
    default:
      return "TYPE" + std::to_string(qtype);
  }
}

}  // namespace sbx::netd
