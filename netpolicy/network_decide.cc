// Deciding a name or an address against an allowlist, and the ports capture has to listen on.
#include <algorithm>
#include <bitset>
#include <optional>
#include <set>

#include "netpolicy/netd_protocol.h"
#include "netpolicy/network_proxy_env.h"
#include "netpolicy/network_rules.h"
#include "netpolicy/network_rules_internal.h"

namespace sbx {
namespace {

bool NameMatchesHost(const NetworkRule& rule, std::string_view name) {
  if (rule.kind == HostPatternKind::kExactName) return name == rule.name;
  if (rule.kind != HostPatternKind::kSuffix) return false;
  // Below the suffix, never the suffix itself: "*.example.com" is not "example.com".
  return name.size() > rule.name.size() + 1 && name.ends_with(rule.name) &&
         name[name.size() - rule.name.size() - 1] == '.';
}

bool AddressMatchesHost(const NetworkRule& rule, const IpAddress& address) {
  return rule.kind == HostPatternKind::kAddress &&
         network_internal::InPrefix(network_internal::UnwrapV4Mapped(address), rule.address,
                                    rule.prefix_length);
}

// True when every port of `wanted` is in one of `covers`.
bool PortsCovered(const PortSet& wanted, const std::vector<const PortSet*>& covers) {
  if (covers.empty()) return false;
  std::bitset<65536> covered;
  for (const PortSet* set : covers) {
    if (set->any) return true;
    for (const PortRange& range : set->ranges) {
      for (uint32_t port = range.first; port <= range.last; ++port) covered.set(port);
    }
  }
  if (wanted.any) return covered.count() == 65535;
  for (const PortRange& range : wanted.ranges) {
    for (uint32_t port = range.first; port <= range.last; ++port) {
      if (!covered.test(port)) return false;
    }
  }
  return true;
}

std::string Label(const char* list, size_t index) {
  return std::string(list) + "[" + std::to_string(index) + "]";
}

// What is decided: a connection to one port, or a DNS query (nullopt), which is answered while
// some port of an allow rule for the name is not denied for it.
using DecidedPort = std::optional<uint16_t>;

// The one decision procedure for names and addresses; `host_matches` says whether a rule's host
// part names what is being decided. Deny wins; then allow, then allow_private.
template <typename HostMatches>
NetworkDecision Decide(const NetworkAllowlist& policy, HostMatches host_matches, DecidedPort port) {
  // Port 0 means nothing to connect to; refused before any rule can match it.
  if (port && *port == 0) return {false, "", "port"};
  std::vector<const PortSet*> denied_ports;
  std::string first_deny;
  for (size_t i = 0; i < policy.deny.size(); ++i) {
    const NetworkRule& rule = policy.deny[i];
    if (!host_matches(rule)) continue;
    if (port && rule.ports.Contains(*port)) return {false, Label("deny", i), "deny_rule"};
    denied_ports.push_back(&rule.ports);
    if (first_deny.empty()) first_deny = Label("deny", i);
  }
  std::string names_host;  // an allow rule for this host on other ports
  for (const auto& [list, rules] :
       {std::pair{"allow", &policy.allow}, std::pair{"allow_private", &policy.allow_private}}) {
    for (size_t i = 0; i < rules->size(); ++i) {
      const NetworkRule& rule = (*rules)[i];
      if (!host_matches(rule)) continue;
      const bool allowed =
          port ? rule.ports.Contains(*port) : !PortsCovered(rule.ports, denied_ports);
      if (allowed) return {true, Label(list, i), ""};
      if (names_host.empty()) names_host = Label(list, i);
    }
  }
  if (names_host.empty()) return {false, "", "no_rule"};
  if (!port) return {false, first_deny, "deny_rule"};
  return {false, names_host, "port"};
}

NetworkDecision DecideAnyName(const NetworkAllowlist& policy, std::string_view name,
                              DecidedPort port) {
  auto normalized = NormalizeHostName(name);
  if (!normalized) return {false, "", "no_rule"};
  return Decide(
      policy, [&](const NetworkRule& rule) { return NameMatchesHost(rule, *normalized); }, port);
}

std::set<uint16_t> FixedCapturePorts() {
  std::set<uint16_t> ports(std::begin(kAuditOnlyPorts), std::end(kAuditOnlyPorts));
  ports.insert({kDnsPort, 80, 443});  // DNS over TCP, which sbx-netd's stub answers itself
  return ports;
}

void AddPorts(const PortSet& set, std::set<uint16_t>& ports) {
  for (const PortRange& range : set.ranges) {
    for (uint32_t port = range.first; port <= range.last; ++port)
      ports.insert(static_cast<uint16_t>(port));
  }
}

}  // namespace

bool PortSet::Contains(uint16_t port) const {
  if (port == 0) return false;
  if (any) return true;
  return std::any_of(ranges.begin(), ranges.end(), [port](const PortRange& range) {
    return port >= range.first && port <= range.last;
  });
}

bool NetworkRule::MatchesName(std::string_view lower_case_name, uint16_t port) const {
  return NameMatchesHost(*this, lower_case_name) && ports.Contains(port);
}

bool NetworkRule::MatchesAddress(const IpAddress& address, uint16_t port) const {
  return AddressMatchesHost(*this, address) && ports.Contains(port);
}

NetworkDecision DecideName(const NetworkAllowlist& policy, std::string_view name, uint16_t port) {
  return DecideAnyName(policy, name, port);
}

NetworkDecision DecideNameQuery(const NetworkAllowlist& policy, std::string_view name) {
  return DecideAnyName(policy, name, std::nullopt);
}

NetworkDecision DecideAddress(const NetworkAllowlist& policy, const IpAddress& address,
                              uint16_t port) {
  NetworkDecision decision = Decide(
      policy, [&](const NetworkRule& rule) { return AddressMatchesHost(rule, address); }, port);
  if (decision.allowed && IsInternalAddress(address) &&
      !AllowPrivateCovers(policy, address, port)) {
    return {false, decision.rule, "internal_address"};
  }
  return decision;
}

bool AllowPrivateCovers(const NetworkAllowlist& policy, const IpAddress& address, uint16_t port) {
  return std::any_of(policy.allow_private.begin(), policy.allow_private.end(),
                     [&](const NetworkRule& rule) { return rule.MatchesAddress(address, port); });
}

bool CapturesAllPorts(const NetworkAllowlist& policy) {
  for (const auto* rules : {&policy.allow, &policy.allow_private}) {
    if (std::any_of(rules->begin(), rules->end(),
                    [](const NetworkRule& rule) { return rule.ports.any; })) {
      return true;
    }
  }
  return false;
}

std::vector<uint16_t> CapturePorts(const NetworkAllowlist& policy) {
  if (CapturesAllPorts(policy)) return {};  // one redirected listener takes every port
  std::set<uint16_t> ports = FixedCapturePorts();
  for (const auto* rules : {&policy.allow, &policy.allow_private}) {
    for (const NetworkRule& rule : *rules) AddPorts(rule.ports, ports);
  }
  return {ports.begin(), ports.end()};
}

Result<void> CheckCapturePorts(const NetworkAllowlist& policy, const std::string& field) {
  // All-port capture needs no socket per port, and redirects nothing to loopback, where the
  // proxy_env listener lives: neither limit below applies.
  if (CapturesAllPorts(policy)) return Ok{};
  std::set<uint16_t> ports = FixedCapturePorts();
  for (const auto& [list, rules] :
       {std::pair{"allow", &policy.allow}, std::pair{"allow_private", &policy.allow_private}}) {
    for (size_t i = 0; i < rules->size(); ++i) {
      const NetworkRule& rule = (*rules)[i];
      const std::string where = field + "." + Label(list, i) + ": \"" + rule.text + "\": ";
      AddPorts(rule.ports, ports);
      if (policy.proxy_env && ports.count(kProxyEnvPort) != 0) {
        return InvalidInput(where + "port 3128 is the sandbox's proxy under proxy_env (its "
                                    "listener owns 127.0.0.1:3128); remove the port or proxy_env");
      }
      if (ports.size() > kMaxCapturePorts) {
        return InvalidInput(
            where + "ports too wide to capture (" + std::to_string(ports.size()) +
            " with this rule); at most 512 ports in all, counting 80, 443 and the 9 "
            "audit-only ports");
      }
    }
  }
  return Ok{};
}

}  // namespace sbx
