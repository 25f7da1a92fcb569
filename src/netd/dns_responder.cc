// Decides a DNS query by its name and builds the answer.
#include "src/netd/dns_responder.h"

#include "src/netd/dns_message.h"

namespace sbx::netd {
namespace {

DnsOutcome Denied(std::vector<uint8_t> reply, const DnsQuery& query, std::string reason,
                  std::string answer) {
  DnsAuditRecord record;
  record.qname = query.name;
  record.qtype = DnsTypeName(query.qtype);
  record.reason = std::move(reason);
  record.answer = std::move(answer);
  return {std::move(reply), std::move(record)};
}

}  // namespace

DnsOutcome AnswerDnsQuery(std::span<const uint8_t> packet, const NetworkAllowlist& policy,
                          FakeIpPool& pool) {
  const DnsQuery query = ParseDnsQuery(packet);
  switch (query.status) {
    case DnsParseStatus::kDrop:
      return {};
    case DnsParseStatus::kFormatError:
      return Denied(BuildDnsHeaderOnlyAnswer(query, kDnsRcodeFormErr), query, "no_rule", "FORMERR");
    case DnsParseStatus::kNotImplemented:
      return Denied(BuildDnsHeaderOnlyAnswer(query, kDnsRcodeNotImp), query, "no_rule", "NOTIMP");
    case DnsParseStatus::kQuery:
      break;
  }
  if (!query.name_valid) {
    return Denied(BuildDnsEmptyAnswer(query, kDnsRcodeNxDomain), query, "no_rule", "NXDOMAIN");
  }
  // The name is answered when an allow rule names it on some port; the port is checked when
  // the connection comes.
  const NetworkDecision decision = DecideNameQuery(policy, query.name);
  if (!decision.allowed) {
    return Denied(BuildDnsEmptyAnswer(query, kDnsRcodeNxDomain), query, decision.reason,
                  "NXDOMAIN");
  }
  DnsAuditRecord record;
  record.qname = query.name;
  record.qtype = DnsTypeName(query.qtype);
  record.allowed = true;
  record.rule = decision.rule;
  if (query.qtype != kDnsTypeA || query.qclass != kDnsClassIn) {
    record.answer = "NODATA";
    return {BuildDnsEmptyAnswer(query, kDnsRcodeNoError), std::move(record)};
  }
  const auto address = pool.Assign(query.name);
  if (!address) {
    record.answer = "SERVFAIL";  // the pool's bound for one run is reached
    return {BuildDnsEmptyAnswer(query, kDnsRcodeServFail), std::move(record)};
  }
  const uint8_t bytes[4] = {static_cast<uint8_t>(*address >> 24),
                            static_cast<uint8_t>(*address >> 16),
                            static_cast<uint8_t>(*address >> 8), static_cast<uint8_t>(*address)};
  record.answer = Ipv4ToString(*address);
  return {BuildDnsAddressAnswer(query, bytes), std::move(record)};
}

}  // namespace sbx::netd
