// Unit tests for the network allowlist's rules: grammar, matching, decisions, the internal set.
#include "netpolicy/network_rules.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace sbx {
namespace {

NetworkRule Rule(const std::string& entry, DefaultPorts default_ports = DefaultPorts::kHttps) {
  auto rule = ParseNetworkRule(entry, "network.allow[0]", default_ports);
  EXPECT_TRUE(rule) << entry << ": " << rule.error().ToString();
  return rule ? *rule : NetworkRule{};
}

IpAddress Ip(const std::string& text) {
  auto address = IpAddress::Parse(text);
  EXPECT_TRUE(address) << text;
  return address.value_or(IpAddress{});
}

// A decision as one string, so that a failure shows all of it.
std::string Show(const NetworkDecision& decision) {
  return std::string(decision.allowed ? "allow" : "deny") + " rule=" + decision.rule +
         " reason=" + decision.reason;
}

std::vector<PortRange> Ranges(std::initializer_list<std::pair<int, int>> ranges) {
  std::vector<PortRange> out;
  for (auto [first, last] : ranges)
    out.push_back({static_cast<uint16_t>(first), static_cast<uint16_t>(last)});
  return out;
}

TEST(NetworkRuleParse, ExactNameDefaultsToPort443) {
  NetworkRule rule = Rule("PyPI.org.");
  EXPECT_EQ(rule.kind, HostPatternKind::kExactName);
  EXPECT_EQ(rule.name, "pypi.org");
  EXPECT_EQ(rule.text, "PyPI.org.");
  EXPECT_FALSE(rule.ports.any);
  EXPECT_EQ(rule.ports.ranges, Ranges({{443, 443}}));
}

TEST(NetworkRuleParse, SingleLabelNameAndUnderscore) {
  EXPECT_EQ(Rule("localhost").name, "localhost");
  EXPECT_EQ(Rule("_srv.example.com").name, "_srv.example.com");
  EXPECT_EQ(Rule("xn--bcher-kva.de").name, "xn--bcher-kva.de");
}

TEST(NetworkRuleParse, SuffixKeepsThePartAfterTheStar) {
  NetworkRule rule = Rule("*.Example.COM");
  EXPECT_EQ(rule.kind, HostPatternKind::kSuffix);
  EXPECT_EQ(rule.name, "example.com");
}

TEST(NetworkRuleParse, PortForms) {
  EXPECT_EQ(Rule("github.com:22,443").ports.ranges, Ranges({{22, 22}, {443, 443}}));
  EXPECT_EQ(Rule("api.internal.corp:8000-8100").ports.ranges, Ranges({{8000, 8100}}));
  EXPECT_EQ(Rule("a.example:1,65535,7-7").ports.ranges, Ranges({{1, 1}, {65535, 65535}, {7, 7}}));
  NetworkRule any = Rule("example.com:*");
  EXPECT_TRUE(any.ports.any);
  EXPECT_TRUE(any.ports.ranges.empty());
}

TEST(NetworkRuleParse, DenyRulesDefaultToEveryPort) {
  EXPECT_TRUE(Rule("uploads.example.com", DefaultPorts::kAll).ports.any);
  EXPECT_EQ(Rule("uploads.example.com:80", DefaultPorts::kAll).ports.ranges, Ranges({{80, 80}}));
}

TEST(NetworkRuleParse, Ipv4AndCidr) {
  NetworkRule host = Rule("203.0.113.7");
  EXPECT_EQ(host.kind, HostPatternKind::kAddress);
  EXPECT_EQ(host.address, Ip("203.0.113.7"));
  EXPECT_EQ(host.prefix_length, 32);
  NetworkRule net = Rule("203.0.113.0/24:5432");
  EXPECT_EQ(net.address, Ip("203.0.113.0"));
  EXPECT_EQ(net.prefix_length, 24);
  EXPECT_EQ(net.ports.ranges, Ranges({{5432, 5432}}));
  EXPECT_EQ(Rule("0.0.0.0/0").prefix_length, 0);
}

TEST(NetworkRuleParse, BracketedIpv6AndPrefix) {
  NetworkRule host = Rule("[2001:db8::1]:443");
  EXPECT_EQ(host.kind, HostPatternKind::kAddress);
  EXPECT_TRUE(host.address.v6);
  EXPECT_EQ(host.prefix_length, 128);
  NetworkRule net = Rule("[2001:DB8::/32]");
  EXPECT_EQ(net.address, Ip("2001:db8::"));
  EXPECT_EQ(net.prefix_length, 32);
  EXPECT_EQ(net.ports.ranges, Ranges({{443, 443}}));
}

TEST(NetworkRuleParse, V4MappedIpv6RuleBecomesTheIpv4Rule) {
  NetworkRule rule = Rule("[::ffff:203.0.113.0/120]:80");
  EXPECT_FALSE(rule.address.v6);
  EXPECT_EQ(rule.address, Ip("203.0.113.0"));
  EXPECT_EQ(rule.prefix_length, 24);
}

// Each rejected entry fails, and the message names the field, quotes the entry and says why.
struct BadEntry {
  std::string entry;
  std::string must_mention;
};

class BadNetworkRule : public ::testing::TestWithParam<BadEntry> {};

TEST_P(BadNetworkRule, IsRejectedNamingTheEntry) {
  const BadEntry& bad = GetParam();
  auto rule = ParseNetworkRule(bad.entry, "network.allow[2]");
  ASSERT_FALSE(rule) << bad.entry << " was accepted";
  EXPECT_EQ(rule.error().code, ErrorCode::kInvalidInput);
  const std::string& message = rule.error().message;
  EXPECT_EQ(message.rfind("network.allow[2]: ", 0), 0u) << message;
  EXPECT_NE(message.find(bad.must_mention), std::string::npos) << bad.entry << ": " << message;
}

INSTANTIATE_TEST_SUITE_P(
    Grammar, BadNetworkRule,
    ::testing::Values(
        BadEntry{"", "empty"}, BadEntry{"*", "every host"}, BadEntry{"*:443", "every host"},
        BadEntry{"*.com", "at least two labels"}, BadEntry{"*.com.", "at least two labels"},
        BadEntry{"**", "whole first label"}, BadEntry{"**.example.com", "whole first label"},
        BadEntry{"a*.b.com", "whole first label"}, BadEntry{"a.*.com", "whole first label"},
        BadEntry{"*example.com", "whole first label"},
        BadEntry{"*.*.example.com", "whole first label"},
        BadEntry{"2001:db8::1:443", "[2001:db8::1]:443"}, BadEntry{"2001:db8::1", "brackets"},
        BadEntry{"http://x", "a URL"}, BadEntry{"https://pypi.org/simple", "a URL"},
        BadEntry{"x/y", "a path"}, BadEntry{"example.com/path:443", "a path"},
        BadEntry{"user@x", "user@"}, BadEntry{"[::1", "missing ']'"},
        BadEntry{"[::1]x", "after ']'"}, BadEntry{"[1.2.3.4]", "brackets are for IPv6"},
        BadEntry{"[pypi.org]:443", "not an IPv6 address"}, BadEntry{"1.2.3.4/33", "/33"},
        BadEntry{"1.2.3.4/", "prefix length"}, BadEntry{"1.2.3.4/x", "prefix length"},
        BadEntry{"[2001:db8::/129]", "/129"}, BadEntry{"203.0.113.7/24", "write 203.0.113.0/24"},
        BadEntry{"[2001:db8::1/32]", "write [2001:db8::/32]"}, BadEntry{"1.2.3.256", "not one"},
        BadEntry{"1.2.3", "not one"}, BadEntry{"01.2.3.4", "not one"},
        BadEntry{"x.com:0", "port 0"}, BadEntry{"x.com:65536", "port 65536"},
        BadEntry{"x.com:99999", "port 99999"}, BadEntry{"x.com:123456", "not a port number"},
        BadEntry{"x.com:9-3", "reversed; write 3-9"}, BadEntry{"x.com:", "nothing after ':'"},
        BadEntry{"x.com:22,,443", "not a port number"}, BadEntry{"x.com:http", "not a port number"},
        BadEntry{"x.com:-5", "not a port number"}, BadEntry{"x.com:1-2-3", "not a port number"},
        BadEntry{"x.com:*,443", "not a port number"}, BadEntry{":443", "no host"},
        BadEntry{"b\xc3\xbc"
                 "cher.de",
                 "punycode"},
        BadEntry{"b\xc3\xbc"
                 "cher.de",
                 "\\xc3\\xbc"},
        BadEntry{"exa mple.com", "space"}, BadEntry{"exa\r\nmple.com", "control character"},
        BadEntry{std::string("exa\0mple.com", 11), "control character"},
        BadEntry{std::string(64, 'a') + ".com", "at most 63"},
        BadEntry{std::string(63, 'a') + "." + std::string(63, 'b') + "." + std::string(63, 'c') +
                     "." + std::string(63, 'd'),
                 "at most 253"},
        BadEntry{"a..b.com", "empty label"}, BadEntry{".example.com", "empty label"},
        BadEntry{"exa!mple.com", "'!' is not allowed"}, BadEntry{std::string(1100, 'a'), "1024"}));

TEST(NetworkRuleParse, LongestValidLabelAndName) {
  EXPECT_TRUE(ParseNetworkRule(std::string(63, 'a') + ".com", "f"));
  std::string name = std::string(63, 'a') + "." + std::string(63, 'b') + "." +
                     std::string(63, 'c') + "." + std::string(61, 'd');  // 253 bytes
  ASSERT_EQ(name.size(), 253u);
  EXPECT_TRUE(ParseNetworkRule(name, "f"));
}

TEST(NetworkRuleMatch, ExactNameIsCaseInsensitiveWithTrailingDot) {
  NetworkAllowlist policy;
  policy.allow = {Rule("pypi.org")};
  for (const char* name : {"pypi.org", "PYPI.ORG", "pypi.org.", "PyPi.Org."}) {
    EXPECT_TRUE(DecideName(policy, name, 443).allowed) << name;
  }
  EXPECT_FALSE(DecideName(policy, "www.pypi.org", 443).allowed);
  EXPECT_FALSE(DecideName(policy, "pypi.org.evil.test", 443).allowed);
  EXPECT_FALSE(DecideName(policy, "xpypi.org", 443).allowed);
  EXPECT_TRUE(policy.allow[0].MatchesName("pypi.org", 443));
  EXPECT_FALSE(policy.allow[0].MatchesName("pypi.org", 80));
  EXPECT_FALSE(policy.allow[0].MatchesName("pypi.org", 0)) << "port 0 is no destination";
}

TEST(NetworkRuleMatch, SuffixMatchesBelowButNotTheApexNorLookalikes) {
  NetworkRule rule = Rule("*.example.com");
  EXPECT_TRUE(rule.MatchesName("a.example.com", 443));
  EXPECT_TRUE(rule.MatchesName("a.b.example.com", 443));
  EXPECT_FALSE(rule.MatchesName("example.com", 443));
  EXPECT_FALSE(rule.MatchesName("badexample.com", 443));
  EXPECT_FALSE(rule.MatchesName(".example.com", 443));
  EXPECT_FALSE(rule.MatchesName("a.example.com.evil.test", 443));
  EXPECT_FALSE(rule.MatchesName("a.example.com", 80));
}

TEST(NetworkRuleMatch, CidrV4AndV6) {
  NetworkRule v4 = Rule("203.0.113.0/24:5432");
  EXPECT_TRUE(v4.MatchesAddress(Ip("203.0.113.0"), 5432));
  EXPECT_TRUE(v4.MatchesAddress(Ip("203.0.113.255"), 5432));
  EXPECT_FALSE(v4.MatchesAddress(Ip("203.0.114.1"), 5432));
  EXPECT_FALSE(v4.MatchesAddress(Ip("203.0.113.9"), 443));
  EXPECT_TRUE(v4.MatchesAddress(Ip("::ffff:203.0.113.9"), 5432)) << "a dual-stack listener's view";
  EXPECT_FALSE(v4.MatchesAddress(Ip("2001:db8::cb00:7109"), 5432));

  NetworkRule odd = Rule("198.51.100.64/26");
  EXPECT_TRUE(odd.MatchesAddress(Ip("198.51.100.127"), 443));
  EXPECT_FALSE(odd.MatchesAddress(Ip("198.51.100.128"), 443));
  EXPECT_FALSE(odd.MatchesAddress(Ip("198.51.100.63"), 443));

  NetworkRule v6 = Rule("[2001:db8:1::/48]:443");
  EXPECT_TRUE(v6.MatchesAddress(Ip("2001:db8:1:ffff::1"), 443));
  EXPECT_FALSE(v6.MatchesAddress(Ip("2001:db8:2::1"), 443));
  EXPECT_FALSE(v6.MatchesAddress(Ip("203.0.113.9"), 443));

  NetworkRule one = Rule("[2001:db8::1]:443");
  EXPECT_TRUE(one.MatchesAddress(Ip("2001:db8::1"), 443));
  EXPECT_FALSE(one.MatchesAddress(Ip("2001:db8::2"), 443));
}

TEST(NetworkRuleMatch, PortSets) {
  PortSet ports = Rule("x.example:22,8000-8100").ports;
  for (uint16_t port : {22, 8000, 8050, 8100}) EXPECT_TRUE(ports.Contains(port)) << port;
  for (uint16_t port : {0, 21, 23, 443, 7999, 8101}) EXPECT_FALSE(ports.Contains(port)) << port;
  PortSet any = Rule("x.example:*").ports;
  EXPECT_TRUE(any.Contains(1));
  EXPECT_TRUE(any.Contains(65535));
  EXPECT_FALSE(any.Contains(0));
}

TEST(NetworkDecision, NamesMatchNameRulesOnly) {
  NetworkAllowlist policy;
  policy.allow = {Rule("203.0.113.0/24"), Rule("pypi.org")};
  EXPECT_FALSE(DecideName(policy, "203.0.113.7", 443).allowed)
      << "an address rule never matches a name";
  EXPECT_EQ(DecideName(policy, "pypi.org", 443).rule, "allow[1]");
  EXPECT_FALSE(DecideAddress(policy, Ip("151.101.0.223"), 443).allowed)
      << "a name rule never matches an IP";
  EXPECT_EQ(Show(DecideAddress(policy, Ip("203.0.113.7"), 443)), "allow rule=allow[0] reason=");
}

TEST(NetworkDecision, DenyWins) {
  NetworkAllowlist policy;
  policy.allow = {Rule("*.example.com:80,443"), Rule("203.0.113.0/24")};
  policy.deny = {Rule("uploads.example.com", DefaultPorts::kAll),
                 Rule("203.0.113.66", DefaultPorts::kAll)};
  EXPECT_EQ(Show(DecideName(policy, "uploads.example.com", 443)),
            "deny rule=deny[0] reason=deny_rule");
  EXPECT_EQ(DecideName(policy, "uploads.example.com", 80).reason, "deny_rule");
  EXPECT_EQ(DecideNameQuery(policy, "uploads.example.com").reason, "deny_rule")
      << "no DNS answer either";
  EXPECT_TRUE(DecideName(policy, "www.example.com", 443).allowed);
  EXPECT_EQ(Show(DecideAddress(policy, Ip("203.0.113.66"), 443)),
            "deny rule=deny[1] reason=deny_rule");
  EXPECT_TRUE(DecideAddress(policy, Ip("203.0.113.67"), 443).allowed);
}

TEST(NetworkDecision, DnsAnswersWhileSomeAllowedPortIsNotDenied) {
  NetworkAllowlist policy;
  policy.allow = {Rule("*.example.com:22,443")};
  policy.deny = {Rule("git.example.com:22", DefaultPorts::kAll)};
  EXPECT_TRUE(DecideNameQuery(policy, "git.example.com").allowed);
  EXPECT_TRUE(DecideName(policy, "git.example.com", 443).allowed);
  EXPECT_EQ(DecideName(policy, "git.example.com", 22).reason, "deny_rule");
  policy.deny.push_back(Rule("*.example.com:400-500", DefaultPorts::kAll));
  EXPECT_EQ(Show(DecideNameQuery(policy, "git.example.com")), "deny rule=deny[0] reason=deny_rule");
}

TEST(NetworkDecision, PortZeroIsNeverADestination) {
  NetworkAllowlist policy;
  policy.allow = {Rule("pypi.org:*"), Rule("203.0.113.0/24:*")};
  policy.allow_private = {Rule("10.0.0.0/8:*")};
  EXPECT_TRUE(DecideNameQuery(policy, "pypi.org").allowed) << "the name is still answered";
  EXPECT_EQ(Show(DecideName(policy, "pypi.org", 0)), "deny rule= reason=port");
  EXPECT_EQ(Show(DecideAddress(policy, Ip("203.0.113.10"), 0)), "deny rule= reason=port");
  EXPECT_EQ(DecideAddress(policy, Ip("10.0.0.5"), 0).reason, "port");
  EXPECT_FALSE(AllowPrivateCovers(policy, Ip("10.0.0.5"), 0));
  EXPECT_TRUE(AllowPrivateCovers(policy, Ip("10.0.0.5"), 1));
}

TEST(NetworkDecision, ReasonsNoRuleAndPort) {
  NetworkAllowlist policy;
  policy.allow = {Rule("pypi.org"), Rule("203.0.113.10")};
  EXPECT_EQ(Show(DecideName(policy, "pypi.org", 22)), "deny rule=allow[0] reason=port");
  EXPECT_EQ(DecideAddress(policy, Ip("203.0.113.10"), 8443).reason, "port");
  EXPECT_EQ(Show(DecideName(policy, "x9f2.evil.tld", 443)), "deny rule= reason=no_rule");
  EXPECT_EQ(DecideNameQuery(policy, "x9f2.evil.tld").reason, "no_rule");
  EXPECT_EQ(DecideAddress(policy, Ip("203.0.113.12"), 443).reason, "no_rule");
  EXPECT_EQ(DecideName(policy, "bad\r\nname", 443).reason, "no_rule");
  EXPECT_EQ(DecideName(NetworkAllowlist{}, "pypi.org", 443).reason, "no_rule");
}

TEST(NetworkDecision, InternalLiteralsNeedAllowPrivate) {
  NetworkAllowlist policy;
  policy.allow = {Rule("10.0.0.0/8"), Rule("0.0.0.0/0")};
  EXPECT_EQ(Show(DecideAddress(policy, Ip("10.0.0.5"), 443)),
            "deny rule=allow[0] reason=internal_address");
  EXPECT_EQ(DecideAddress(policy, Ip("169.254.169.254"), 443).reason, "internal_address");
  EXPECT_EQ(DecideAddress(policy, Ip("::ffff:10.0.0.5"), 443).reason, "internal_address");
  EXPECT_TRUE(DecideAddress(policy, Ip("203.0.113.10"), 443).allowed);

  policy.allow_private = {Rule("10.20.0.0/16:8443")};
  EXPECT_EQ(Show(DecideAddress(policy, Ip("10.20.1.2"), 8443)),
            "allow rule=allow_private[0] reason=");
  EXPECT_TRUE(AllowPrivateCovers(policy, Ip("10.20.1.2"), 8443));
  EXPECT_TRUE(AllowPrivateCovers(policy, Ip("::ffff:10.20.1.2"), 8443));
  EXPECT_FALSE(AllowPrivateCovers(policy, Ip("10.20.1.2"), 443));
  EXPECT_FALSE(AllowPrivateCovers(policy, Ip("10.21.1.2"), 8443));
  EXPECT_EQ(DecideAddress(policy, Ip("10.21.1.2"), 8443).reason, "port")
      << "10/8 names it on 443 only";
  EXPECT_EQ(DecideAddress(policy, Ip("10.20.1.2"), 443).reason, "internal_address");
}

TEST(InternalAddress, EveryRange) {
  for (const char* text : {"0.0.0.0",
                           "0.1.2.3",
                           "10.0.0.5",
                           "10.255.255.255",
                           "100.64.0.1",
                           "100.127.255.255",
                           "127.0.0.1",
                           "127.255.0.1",
                           "169.254.169.254",
                           "169.254.0.1",
                           "172.16.0.1",
                           "172.31.255.255",
                           "192.168.1.1",
                           "198.18.3.4",
                           "198.19.255.255",
                           "224.0.0.1",
                           "239.255.255.250",
                           "240.0.0.1",
                           "255.255.255.255",
                           "::",
                           "::1",
                           "fc00::1",
                           "fd12:3456::1",
                           "fe80::1",
                           "febf::1",
                           "fec0::1",
                           "ff02::1",
                           "::ffff:10.0.0.5",
                           "::ffff:169.254.169.254",
                           "::ffff:127.0.0.1",
                           "::10.0.0.5",
                           "64:ff9b::a00:5",
                           "64:ff9b::7f00:1",
                           "64:ff9b:1::1",
                           "2002:0a00:0005::",
                           "2002:a9fe:a9fe::1"}) {
    EXPECT_TRUE(IsInternalAddress(Ip(text))) << text;
  }
}

TEST(InternalAddress, PublicAndDocumentationRangesAreNot) {
  for (const char* text : {"203.0.113.10",
                           "192.0.2.1",
                           "198.51.100.9",
                           "8.8.8.8",
                           "1.1.1.1",
                           "9.255.255.255",
                           "11.0.0.0",
                           "100.63.255.255",
                           "100.128.0.0",
                           "172.15.255.255",
                           "172.32.0.0",
                           "198.17.255.255",
                           "198.20.0.0",
                           "223.255.255.255",
                           "2001:db8::10",
                           "2606:4700::1111",
                           "::ffff:203.0.113.10",
                           "64:ff9b::cb00:710a",
                           "2002:cb00:710a::",
                           "fbff::1",
                           "fe00::1"}) {
    EXPECT_FALSE(IsInternalAddress(Ip(text))) << text;
  }
}

TEST(IpAddressParse, FormsAndRejections) {
  IpAddress v4 = Ip("203.0.113.7");
  EXPECT_FALSE(v4.v6);
  EXPECT_EQ(v4.bytes[0], 203);
  EXPECT_EQ(v4.bytes[3], 7);
  EXPECT_EQ(v4.ToString(), "203.0.113.7");
  EXPECT_EQ(Ip("2001:DB8:0:0::1").ToString(), "2001:db8::1");
  EXPECT_EQ(Ip("::ffff:10.0.0.5").ToString(), "::ffff:10.0.0.5");
  for (const char* bad : {"", "1.2.3", "1.2.3.4.5", "01.2.3.4", "1.2.3.256", "0x7f.0.0.1", "[::1]",
                          "fe80::1%eth0", "1.2.3.4 ", "example.com", "::g"}) {
    EXPECT_FALSE(IpAddress::Parse(bad)) << bad;
  }
  EXPECT_FALSE(IpAddress::Parse(std::string("1.2.3.4\0junk", 12)));
}

TEST(NormalizeHostName, LowerCasesAndStripsOneDot) {
  EXPECT_EQ(NormalizeHostName("PyPI.Org."), "pypi.org");
  EXPECT_EQ(NormalizeHostName("_dmarc.example.com"), "_dmarc.example.com");
  EXPECT_EQ(NormalizeHostName(std::string(63, 'a') + ".com"), std::string(63, 'a') + ".com");
  for (std::string bad :
       {std::string(""), std::string("."), std::string("a..b"), std::string("pypi.org.."),
        std::string(".pypi.org"), std::string(64, 'a') + ".com",
        std::string("b\xc3\xbc"
                    "cher.de"),
        std::string("evil.test\r\nX: y"), std::string("a b.com"), std::string("user@x.com"),
        std::string("x.com:443"), std::string("*.example.com"), std::string("a\0b.com", 7)}) {
    EXPECT_FALSE(NormalizeHostName(bad)) << bad;
  }
  std::string long_name;
  for (int i = 0; i < 127; ++i) long_name += "a.";
  long_name += "bb";  // 256 bytes
  EXPECT_FALSE(NormalizeHostName(long_name));
}

TEST(CapturePorts, FixedAuditAndRulePortsSortedUnique) {
  NetworkAllowlist policy;
  EXPECT_EQ(CapturePorts(policy),
            (std::vector<uint16_t>{22, 25, 53, 80, 443, 853, 3306, 5432, 6379, 8000, 8080, 8443}));
  policy.allow = {Rule("github.com:22,443"), Rule("x.example:9000-9002"), Rule("y.example:1")};
  policy.allow_private = {Rule("10.20.0.0/16:8443,7000")};
  policy.deny = {Rule("z.example:5000", DefaultPorts::kAll)};
  EXPECT_EQ(CapturePorts(policy),
            (std::vector<uint16_t>{1, 22, 25, 53, 80, 443, 853, 3306, 5432, 6379, 7000, 8000, 8080,
                                   8443, 9000, 9001, 9002}));
  EXPECT_TRUE(CheckCapturePorts(policy, "network"));
}

TEST(CapturePorts, StarCapturesEveryPortThroughTheRedirectInstead) {
  NetworkAllowlist policy;
  policy.deny = {Rule("z.example:*", DefaultPorts::kAll)};
  EXPECT_FALSE(CapturesAllPorts(policy)) << "* in deny rules opens nothing";
  EXPECT_FALSE(CapturePorts(policy).empty());

  for (auto* list : {&policy.allow, &policy.allow_private}) {
    policy.allow = {Rule("pypi.org")};
    policy.allow_private.clear();
    list->push_back(Rule(list == &policy.allow ? "x.example:*" : "10.0.0.0/8:*"));
    EXPECT_TRUE(CapturesAllPorts(policy));
    EXPECT_TRUE(CapturePorts(policy).empty()) << "no listener per port beside the redirect";
    EXPECT_TRUE(CheckCapturePorts(policy, "network"));
    // Nothing is redirected to loopback, where the proxy_env listener owns 3128.
    policy.proxy_env = true;
    EXPECT_TRUE(CheckCapturePorts(policy, "network"));
    policy.proxy_env = false;
  }
}

TEST(CapturePorts, TooWideOrTheProxyPortIsRefusedNamingTheRule) {
  NetworkAllowlist policy;
  policy.allow = {Rule("pypi.org"), Rule("x.example:3128")};
  policy.proxy_env = true;
  auto proxy = CheckCapturePorts(policy, "network");
  ASSERT_FALSE(proxy);
  EXPECT_NE(proxy.error().message.find("network.allow[1]: \"x.example:3128\": port 3128"),
            std::string::npos)
      << proxy.error().message;
  policy.proxy_env = false;

  // 12 fixed ports + 500 = 512 is the most; one more is refused.
  policy.allow = {Rule("pypi.org"), Rule("x.example:10000-10499")};
  EXPECT_TRUE(CheckCapturePorts(policy, "network"));
  policy.allow_private = {Rule("10.0.0.0/8:20000")};
  auto wide = CheckCapturePorts(policy, "network");
  ASSERT_FALSE(wide);
  EXPECT_NE(wide.error().message.find(
                "network.allow_private[0]: \"10.0.0.0/8:20000\": ports too wide to capture"),
            std::string::npos)
      << wide.error().message;
  EXPECT_NE(wide.error().message.find("at most 512 ports in all"), std::string::npos);
}

}  // namespace
}  // namespace sbx
