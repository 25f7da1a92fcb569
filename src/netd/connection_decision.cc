// Applies connection_decision.h's steps to a connection's destination and first bytes.
#include "src/netd/connection_decision.h"

#include <algorithm>

#include "src/netd/endpoint.h"

namespace sbx::netd {
namespace {

bool IsRefusedDestination(const IpAddress& address) {
  if (!address.v6) {
    const uint8_t first = address.bytes[0];
    return first == 0 || first == 127 || (first >= 224 && first <= 239);
  }
  bool zero_to_14 = true;
  for (int i = 0; i < 15; ++i) zero_to_14 = zero_to_14 && address.bytes[i] == 0;
  if (zero_to_14 && address.bytes[15] <= 1) return true;  // :: and ::1
  return address.bytes[0] == 0xff;                        // multicast
}

ConnectionVerdict Deny(std::string reason, std::string rule = "") {
  return {false, std::move(rule), std::move(reason), std::nullopt, ""};
}

ConnectionVerdict FromDecision(const NetworkDecision& decision, std::optional<std::string> name,
                               std::string name_src) {
  if (!decision.allowed) return Deny(decision.reason, decision.rule);
  return {true, decision.rule, "", std::move(name), std::move(name_src)};
}

// What the first bytes claim the name is, and where the claim came from.
struct Claim {
  std::string name;  // "" when the bytes name nothing
  std::string source;
};

Claim ClaimOf(const Peek& peek) {
  if (peek.kind == PeekKind::kTlsSni) return {peek.name, "sni"};
  if (peek.kind == PeekKind::kHttpHost) return {peek.name, "host"};
  return {"", ""};
}

ConnectionVerdict DecideFakeName(const NetworkAllowlist& policy, const Destination& destination,
                                 const Peek& peek) {
  switch (peek.kind) {
    case PeekKind::kNotPeeked:
      break;
    case PeekKind::kTimeout:
      return Deny("timeout");
    case PeekKind::kTlsNoSni:  // the client knows the name (it asked our DNS) and hides it
    case PeekKind::kTlsInvalid:
      return Deny("sni_mismatch");
    case PeekKind::kHttpInvalid:
      return Deny("host_mismatch");
    case PeekKind::kTlsSni:
    case PeekKind::kHttpHost: {
      const auto claimed = NormalizeHostName(peek.name);
      if (!claimed || *claimed != destination.name) {
        return Deny(peek.kind == PeekKind::kTlsSni ? "sni_mismatch" : "host_mismatch");
      }
      break;
    }
  }
  return FromDecision(DecideName(policy, destination.name, destination.port), destination.name,
                      destination.name_src);
}

ConnectionVerdict DecideLiteral(const NetworkAllowlist& policy, const Destination& destination,
                                const Peek& peek) {
  if (peek.kind == PeekKind::kTimeout) return Deny("timeout");
  const Claim claim = ClaimOf(peek);
  if (!claim.name.empty() && !IpAddress::Parse(claim.name)) {
    if (const auto name = NormalizeHostName(claim.name)) {
      const NetworkDecision by_name = DecideName(policy, *name, destination.port);
      if (by_name.allowed) return FromDecision(by_name, *name, claim.source);
      // A deny rule naming the claimed host wins even over an allowed address.
      if (by_name.reason == "deny_rule") return Deny(by_name.reason, by_name.rule);
    }
  }
  return FromDecision(DecideAddress(policy, destination.address, destination.port), std::nullopt,
                      "");
}

}  // namespace

Destination ClassifyDestination(const IpAddress& dst, uint16_t port, const FakeIpPool& pool) {
  Destination destination;
  destination.address = UnwrapV4Mapped(dst);
  destination.port = port;
  if (IsRefusedDestination(destination.address)) return destination;
  const auto v4 = V4Of(destination.address);
  if (v4 && InFakeRange(*v4)) {
    const std::string* name = pool.NameOf(*v4);
    if (name == nullptr) {
      destination.kind = DestinationKind::kUnmappedFakeIp;
      return destination;
    }
    destination.kind = DestinationKind::kFakeName;
    destination.name = *name;
    return destination;
  }
  destination.kind = DestinationKind::kLiteral;
  return destination;
}

ConnectionVerdict DecideConnection(const NetworkAllowlist& policy, const Destination& destination,
                                   const Peek& peek) {
  switch (destination.kind) {
    case DestinationKind::kRefused:
      return Deny("internal_address");
    case DestinationKind::kUnmappedFakeIp:
      return Deny("unmapped_fake_ip");
    case DestinationKind::kFakeName:
      return DecideFakeName(policy, destination, peek);
    case DestinationKind::kLiteral:
      return DecideLiteral(policy, destination, peek);
  }
  return Deny("no_rule");
}

std::vector<IpAddress> DialableAddresses(const NetworkAllowlist& policy,
                                         const std::vector<IpAddress>& host_addresses,
                                         const std::vector<IpAddress>& resolved, uint16_t port) {
  std::vector<IpAddress> dialable;
  for (const IpAddress& raw : resolved) {
    const IpAddress address = UnwrapV4Mapped(raw);
    auto is_host_address = [&host_addresses](const IpAddress& candidate) {
      return std::find(host_addresses.begin(), host_addresses.end(), candidate) !=
             host_addresses.end();
    };
    const auto embedded = EmbeddedIpv4(address);
    const bool host_own = is_host_address(address) || (embedded && is_host_address(*embedded));
    if ((IsInternalAddress(address) || host_own) && !AllowPrivateCovers(policy, address, port)) {
      continue;
    }
    bool seen = false;
    for (const IpAddress& kept : dialable) seen = seen || kept == address;
    if (!seen) dialable.push_back(address);
  }
  return dialable;
}

}  // namespace sbx::netd
