// Network allowlist, internal addresses (policies/SCHEMA.md, internal addresses): an allowed
// name that resolves inside (10/8, link-local metadata, loopback), DNS rebinding, and internal
// addresses spelled as IPv6.
#include <string>

#include "tests/integration/network_audit.h"
#include "tests/integration/network_fixture.h"

namespace sbx::testing {
namespace {

using nettest::CountEvents;

const std::string kInternal(nettest::AddressOf("internal.test"));
const std::string kRebindPublic(nettest::AddressOf("rebind.test"));
const std::string kV6(nettest::AddressOf("v6.test"));
const std::string kNat64(nettest::AddressOf("nat64.test"));

TEST_F(NetworkAllowlist, Net18AllowedNamesThatResolveInsideAreRefused) {
  const std::string canary_port = std::to_string(nettest::kCanaryPort);
  const std::vector<std::pair<std::string, std::string>> names = {
      {"internal.test", "internal.test"}, {"meta.test", "meta.test"}, {"loop.test", "canary"}};
  for (const auto& [name, server] : names) {
    auto control = Control({"http", name});
    EXPECT_EQ(Str(control.probe, "body"), server) << control.diagnostics;
  }
  auto control = Control({"banner", "127.0.0.1", canary_port});
  EXPECT_EQ(Str(control.probe, "banner"), "canary-banner canary") << control.diagnostics;
  SBX_NET_SANDBOXED_HALF();
  const auto policy = Allowlist({"internal.test:80", "meta.test:80", "loop.test:80"});
  for (const auto& [name, server] : names) {
    SCOPED_TRACE(name);
    auto run = Sandboxed(policy, {"http", name});
    ASSERT_TRUE(run.ran);
    ExpectBlockedByPolicy(run.probe);
    EXPECT_EQ(CountEvents(run.events, {.server = server}), 0u);
    AuditMatch denied = ConnDenied("internal_address");
    denied.name = name;
    ExpectRecord(ReadAuditLog(run.result), denied);
  }
  // The sandbox's own loopback, where nothing listens on that port.
  auto run = Sandboxed(policy, {"banner", "127.0.0.1", canary_port});
  ASSERT_TRUE(run.ran);
  EXPECT_EQ(Str(run.probe, "errno_name"), "ECONNREFUSED") << run.diagnostics;
  EXPECT_EQ(CountEvents(run.events, {.server = nettest::kCanaryName}), 0u);
}

TEST_F(NetworkAllowlist, Net19RebindingNeverReachesTheInternalAddress) {
  const std::vector<std::string> probe = {"http", "rebind.test", "--count", "20"};
  auto control = Control(probe);
  EXPECT_GE(CountEvents(control.events, {.kind = "request", .server = "internal.test"}), 1u)
      << "unsandboxed, rebinding works: " << control.diagnostics;
  EXPECT_GE(CountEvents(control.events, {.kind = "request", .server = "rebind.test"}), 1u);
  SBX_NET_SANDBOXED_HALF();
  auto run = Sandboxed(Allowlist({"rebind.test:80"}), probe);
  ASSERT_TRUE(run.ran);
  ASSERT_TRUE(run.probe.contains("results")) << run.diagnostics;
  size_t allowed = 0;
  for (const auto& result : run.probe["results"]) {
    if (Int(result, "status") == 200) {
      EXPECT_EQ(Str(result, "body"), "rebind.test") << result.dump();
      ++allowed;
    } else {
      ExpectBlockedByPolicy(result);
    }
  }
  // The allowed name itself stays reachable: a policy that refused everything would pass the
  // checks above.
  EXPECT_GE(allowed, 1u) << run.diagnostics;
  EXPECT_GE(CountEvents(run.events, {.kind = "request", .server = "rebind.test"}), allowed);
  EXPECT_EQ(CountEvents(run.events, {.server = "internal.test"}), 0u);
  auto log = ReadAuditLog(run.result);
  for (const auto& record : Matching(log, {.ev = "conn", .decision = "allow"})) {
    EXPECT_EQ(Str(record, "upstream"), Endpoint(kRebindPublic, 80)) << record.dump();
  }
  for (const auto& record : Matching(log, {.ev = "conn", .decision = "deny"})) {
    EXPECT_EQ(Str(record, "reason"), "internal_address") << record.dump();
  }
}

TEST_F(NetworkAllowlist, Net20Ipv6AndInternalAddressesInIpv6FormAreRefused) {
  // An address rule covers each literal, so only the internal-address check can refuse.
  const auto policy = Allowlist({"pypi.test:80,443", "10.0.0.0/8:80", "[64:ff9b::/96]:80"});
  const std::vector<std::string> v6 = {"tls", kV6};
  const std::vector<std::string> mapped = {"http", "::ffff:" + kInternal, "--host", kInternal};
  const std::vector<std::string> nat64 = {"http", kNat64, "--host", "nat64.test"};
  const std::vector<std::string> aaaa = {"dns", "pypi.test/AAAA"};
  EXPECT_EQ(Str(Control(v6).probe, "peer_cn"), "v6.test");
  EXPECT_EQ(Str(Control(mapped).probe, "body"), "internal.test");
  EXPECT_EQ(Str(Control(nat64).probe, "body"), "nat64.test");
  EXPECT_EQ(Int(Control(aaaa).probe["answers"][0], "ancount"), 1);
  SBX_NET_SANDBOXED_HALF();

  auto run = Sandboxed(policy, v6);
  ASSERT_TRUE(run.ran);
  ExpectReset(run.probe);
  EXPECT_EQ(CountEvents(run.events, {.server = "v6.test"}), 0u);
  ExpectRecord(ReadAuditLog(run.result), ConnDenied("no_rule", Endpoint(kV6, 443)));

  for (const auto* probe : {&mapped, &nat64}) {
    SCOPED_TRACE((*probe)[1]);
    run = Sandboxed(policy, *probe);
    ASSERT_TRUE(run.ran);
    ExpectBlockedByPolicy(run.probe);
    EXPECT_EQ(CountEvents(run.events, {.kind = "conn"}), 0u);
    AuditMatch denied = ConnDenied("internal_address");
    denied.dst_port = 80;
    ExpectRecord(ReadAuditLog(run.result), denied);
  }

  run = Sandboxed(policy, aaaa);
  ASSERT_TRUE(run.ran);
  const auto answer = run.probe["answers"][0];
  EXPECT_EQ(Int(answer, "rcode"), 0) << "NODATA, not NXDOMAIN: " << run.diagnostics;
  EXPECT_EQ(Int(answer, "ancount"), 0) << run.diagnostics;
  EXPECT_EQ(CountEvents(run.events, {.kind = "dns"}), 0u);
  ExpectRecord(ReadAuditLog(run.result), {.ev = "dns", .qname = "pypi.test", .qtype = "AAAA"});
}

}  // namespace
}  // namespace sbx::testing
