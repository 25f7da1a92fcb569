// Unit tests for sbx-netd's per-connection decision (docs/network.md, Deciding a connection), with
// fake-address destinations that only a sandbox's network namespace could produce for real.
#include "src/netd/connection_decision.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "src/netd/endpoint.h"
#include "src/netd/host_addresses.h"

namespace sbx::netd {
namespace {

NetworkRule Rule(const std::string& text) {
  auto rule = ParseNetworkRule(text, "test");
  EXPECT_TRUE(rule) << text << ": " << (rule ? "" : rule.error().message);
  return rule ? *rule : NetworkRule{};
}

IpAddress Ip(const std::string& text) {
  auto address = IpAddress::Parse(text);
  EXPECT_TRUE(address) << text;
  return address ? *address : IpAddress{};
}

class ConnectionDecisionTest : public ::testing::Test {
 protected:
  ConnectionDecisionTest() {
    policy_.allow = {Rule("pypi.org:80,443"), Rule("*.example.com:443"), Rule("203.0.113.0/24:443"),
                     Rule("github.com:22"), Rule("internal.test:443")};
    policy_.deny = {Rule("uploads.example.com:*")};
    policy_.allow_private = {Rule("10.20.0.0/16:443")};
    pypi_ = IpAddressFromV4(*pool_.Assign("pypi.org"));
    github_ = IpAddressFromV4(*pool_.Assign("github.com"));
    uploads_ = IpAddressFromV4(*pool_.Assign("uploads.example.com"));
  }

  ConnectionVerdict Decide(const IpAddress& dst, uint16_t port, Peek peek = {}) {
    return DecideConnection(policy_, ClassifyDestination(dst, port, pool_), peek);
  }

  NetworkAllowlist policy_;
  FakeIpPool pool_;
  IpAddress pypi_, github_, uploads_;
};

TEST_F(ConnectionDecisionTest, LoopbackUnspecifiedAndMulticastAreRefused) {
  for (const char* dst : {"127.0.0.1", "127.9.9.9", "0.0.0.0", "0.1.2.3", "224.0.0.1", "::1",
                          "::", "ff02::1", "::ffff:127.0.0.1"}) {
    const Destination destination = ClassifyDestination(Ip(dst), 443, pool_);
    EXPECT_EQ(destination.kind, DestinationKind::kRefused) << dst;
    const ConnectionVerdict verdict = Decide(Ip(dst), 443);
    EXPECT_FALSE(verdict.allowed) << dst;
    EXPECT_EQ(verdict.reason, "internal_address") << dst;
  }
}

TEST_F(ConnectionDecisionTest, FakeAddressStandsForItsName) {
  const Destination destination = ClassifyDestination(pypi_, 443, pool_);
  EXPECT_EQ(destination.kind, DestinationKind::kFakeName);
  EXPECT_EQ(destination.name, "pypi.org");
  const ConnectionVerdict verdict = Decide(pypi_, 443, {PeekKind::kTlsSni, "pypi.org"});
  EXPECT_TRUE(verdict.allowed);
  EXPECT_EQ(verdict.rule, "allow[0]");
  EXPECT_EQ(verdict.name, "pypi.org");
  EXPECT_EQ(verdict.name_src, "fakeip");
}

TEST_F(ConnectionDecisionTest, DualStackListenersReportV4MappedDestinations) {
  IpAddress mapped;
  mapped.v6 = true;
  mapped.bytes[10] = mapped.bytes[11] = 0xff;
  std::copy(pypi_.bytes.begin(), pypi_.bytes.begin() + 4, mapped.bytes.begin() + 12);
  const Destination destination = ClassifyDestination(mapped, 443, pool_);
  EXPECT_EQ(destination.kind, DestinationKind::kFakeName);
  EXPECT_EQ(destination.address, pypi_);
}

TEST_F(ConnectionDecisionTest, UnmappedFakeAddressIsDenied) {
  const ConnectionVerdict verdict = Decide(Ip("198.18.0.1"), 443, {PeekKind::kTlsSni, "pypi.org"});
  EXPECT_FALSE(verdict.allowed);
  EXPECT_EQ(verdict.reason, "unmapped_fake_ip");
}

TEST_F(ConnectionDecisionTest, SniAndHostMustBeTheFakeAddressesName) {
  EXPECT_TRUE(Decide(pypi_, 443, {PeekKind::kTlsSni, "PyPI.org."}).allowed);  // case, dot
  EXPECT_EQ(Decide(pypi_, 443, {PeekKind::kTlsNoSni, ""}).reason, "sni_mismatch")
      << "no server_name shows no name to match";
  EXPECT_TRUE(Decide(pypi_, 80, {PeekKind::kHttpHost, "pypi.org"}).allowed);
  const auto sni = Decide(pypi_, 443, {PeekKind::kTlsSni, "evil.test"});
  EXPECT_FALSE(sni.allowed);
  EXPECT_EQ(sni.reason, "sni_mismatch");
  const auto host = Decide(pypi_, 80, {PeekKind::kHttpHost, "evil.test"});
  EXPECT_FALSE(host.allowed);
  EXPECT_EQ(host.reason, "host_mismatch");
  // A name that is allowed too is still not the name behind this address (fronting).
  EXPECT_EQ(Decide(pypi_, 443, {PeekKind::kTlsSni, "a.example.com"}).reason, "sni_mismatch");
  EXPECT_EQ(Decide(pypi_, 443, {PeekKind::kTlsInvalid, ""}).reason, "sni_mismatch");
  EXPECT_EQ(Decide(pypi_, 80, {PeekKind::kHttpInvalid, ""}).reason, "host_mismatch");
  EXPECT_EQ(Decide(pypi_, 443, {PeekKind::kTimeout, ""}).reason, "timeout");
}

TEST_F(ConnectionDecisionTest, OtherPortsAreDecidedByNameAndPortWithoutPeeking) {
  const auto ssh = Decide(github_, 22);
  EXPECT_TRUE(ssh.allowed);
  EXPECT_EQ(ssh.name, "github.com");
  const auto wrong_port = Decide(pypi_, 8443);
  EXPECT_FALSE(wrong_port.allowed);
  EXPECT_EQ(wrong_port.reason, "port");
}

TEST_F(ConnectionDecisionTest, DenyRulesWin) {
  const auto verdict = Decide(uploads_, 443, {PeekKind::kTlsSni, "uploads.example.com"});
  EXPECT_FALSE(verdict.allowed);
  EXPECT_EQ(verdict.reason, "deny_rule");
  EXPECT_EQ(verdict.rule, "deny[0]");
}

TEST_F(ConnectionDecisionTest, IpLiteralAdoptsAnAllowedSniOrHost) {
  const auto sni = Decide(Ip("198.51.100.7"), 443, {PeekKind::kTlsSni, "pypi.org"});
  EXPECT_TRUE(sni.allowed);
  EXPECT_EQ(sni.name, "pypi.org");  // dialled by name: the literal is never used
  EXPECT_EQ(sni.name_src, "sni");
  const auto host = Decide(Ip("198.51.100.7"), 80, {PeekKind::kHttpHost, "pypi.org"});
  EXPECT_TRUE(host.allowed);
  EXPECT_EQ(host.name_src, "host");
}

TEST_F(ConnectionDecisionTest, IpLiteralWithoutAnAllowedNameIsMatchedByAddress) {
  const auto none = Decide(Ip("198.51.100.7"), 443, {PeekKind::kTlsNoSni, ""});
  EXPECT_FALSE(none.allowed);
  EXPECT_EQ(none.reason, "no_rule");
  const auto unknown = Decide(Ip("198.51.100.7"), 443, {PeekKind::kTlsSni, "evil.test"});
  EXPECT_FALSE(unknown.allowed);
  const auto cidr = Decide(Ip("203.0.113.9"), 443, {PeekKind::kTlsSni, "evil.test"});
  EXPECT_TRUE(cidr.allowed);  // the address rule allows it; netd dials the literal
  EXPECT_FALSE(cidr.name);
  EXPECT_EQ(cidr.rule, "allow[2]");
  // A denied SNI wins over an allowed address.
  const auto denied = Decide(Ip("203.0.113.9"), 443, {PeekKind::kTlsSni, "uploads.example.com"});
  EXPECT_FALSE(denied.allowed);
  EXPECT_EQ(denied.reason, "deny_rule");
  // An SNI that is itself an address literal is not a name.
  EXPECT_FALSE(Decide(Ip("198.51.100.7"), 443, {PeekKind::kTlsSni, "203.0.113.9"}).allowed);
  // Not peeked: address rules only.
  EXPECT_EQ(Decide(Ip("203.0.113.9"), 22).reason, "port");
  EXPECT_FALSE(Decide(Ip("2001:db8::1"), 443).allowed);
}

TEST_F(ConnectionDecisionTest, DialableAddressesDropInternalOnesUnlessAllowPrivateCovers) {
  const std::vector<IpAddress> resolved = {
      Ip("10.0.0.5"),        Ip("169.254.169.254"), Ip("127.0.0.1"),
      Ip("::ffff:10.0.0.6"), Ip("10.20.1.1"),       Ip("151.101.0.223"),
      Ip("151.101.0.223"),   Ip("fd00::1"),         Ip("2a04:4e42::223")};
  const auto dialable = DialableAddresses(policy_, {}, resolved, 443);
  ASSERT_EQ(dialable.size(), 3u);
  EXPECT_EQ(dialable[0], Ip("10.20.1.1"));  // allow_private 10.20.0.0/16:443
  EXPECT_EQ(dialable[1], Ip("151.101.0.223"));
  EXPECT_EQ(dialable[2], Ip("2a04:4e42::223"));
  EXPECT_TRUE(DialableAddresses(policy_, {}, {Ip("10.20.1.1")}, 8443).empty());  // wrong port
  EXPECT_TRUE(DialableAddresses(policy_, {}, {Ip("198.18.0.7")}, 443).empty());  // fake range
}

TEST_F(ConnectionDecisionTest, TheHostsOwnAddressesAreDroppedUnlessAllowPrivateCovers) {
  const std::vector<IpAddress> host = {Ip("151.101.0.223"), Ip("10.20.1.1"), Ip("2a04:4e42::1")};
  const std::vector<IpAddress> resolved = {
      Ip("151.101.0.223"), Ip("::ffff:151.101.0.223"), Ip("64:ff9b::9765:df"),
      Ip("2002:9765:df::1"), Ip("2a04:4e42::1"), Ip("10.20.1.1"), Ip("151.101.0.224")};
  const auto dialable = DialableAddresses(policy_, host, resolved, 443);
  ASSERT_EQ(dialable.size(), 2u);
  EXPECT_EQ(dialable[0], Ip("10.20.1.1"));  // the host's, but allow_private 10.20.0.0/16:443
  EXPECT_EQ(dialable[1], Ip("151.101.0.224"));
  EXPECT_EQ(DialableAddresses(policy_, {}, resolved, 443).size(), 6u) << "the control";
}

TEST(HostAddresses, IncludeLoopbackOnceAndNoMappedForms) {
  auto addresses = ReadHostAddresses();
  ASSERT_TRUE(addresses) << addresses.error().message;
  EXPECT_EQ(std::count(addresses->begin(), addresses->end(), Ip("127.0.0.1")), 1);
  for (const IpAddress& address : *addresses) {
    EXPECT_EQ(UnwrapV4Mapped(address), address) << address.ToString();
  }
}

TEST(Endpoint, FormatsAndUnwraps) {
  EXPECT_EQ(EndpointToString({IpAddressFromV4(0xc6120411), 443}), "198.18.4.17:443");
  EXPECT_EQ(EndpointToString({*IpAddress::Parse("2001:db8::1"), 443}), "[2001:db8::1]:443");
  EXPECT_EQ(UnwrapV4Mapped(*IpAddress::Parse("::ffff:1.2.3.4")), *IpAddress::Parse("1.2.3.4"));
  EXPECT_EQ(UnwrapV4Mapped(*IpAddress::Parse("::1.2.3.4")), *IpAddress::Parse("::1.2.3.4"));
  const auto asio = AsioFromEndpoint({*IpAddress::Parse("1.2.3.4"), 80});
  const auto back = EndpointFromAsio(asio);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->address, *IpAddress::Parse("1.2.3.4"));
  EXPECT_EQ(back->port, 80);
}

}  // namespace
}  // namespace sbx::netd
