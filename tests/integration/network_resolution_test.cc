// How sbx-netd resolves the names it dials: exactly the allowed name (never a search-list
// expansion of the host's resolv.conf), anew for every connection (a changed record is
// followed, an internal answer refused), and never to an address of the host's own interfaces.
// Each probe runs first unsandboxed in T.
#include <fstream>
#include <set>
#include <string>

#include "tests/integration/network_audit.h"
#include "tests/integration/network_fixture.h"

namespace sbx::testing {
namespace {

using nettest::CountEvents;

// Rewrites T's resolv.conf (the topology's own file, bound over /etc/resolv.conf for every
// process in T, sbx-netd included) for one test, and puts the default back.
class ResolvConfInT {
 public:
  ResolvConfInT(const nettest::Topology& topology, const std::string& extra_lines)
      : path_(topology.ResolvConfPath()) {
    Write(nettest::Topology::DefaultResolvConf() + extra_lines);
  }
  ~ResolvConfInT() { Write(nettest::Topology::DefaultResolvConf()); }

 private:
  void Write(const std::string& text) {
    std::ofstream out(path_, std::ios::trunc);
    out << text;
    out.close();
    EXPECT_TRUE(out.good()) << "cannot write " << path_;
  }
  std::string path_;
};

TEST_F(NetworkAllowlist, AllowedNamesAreResolvedWithoutTheHostsSearchDomains) {
  // Kubernetes' resolv.conf shape: a search list and ndots:5, so the host's resolver tries
  // "<name>.corp.test" before "<name>", and a name that does not exist gains the suffix.
  ResolvConfInT resolv_conf(net().topology(), "search " + std::string(nettest::kSearchDomain) +
                                                  "\noptions ndots:5\n");
  auto control_apex = Control({"http", "apex.test"});
  EXPECT_EQ(Str(control_apex.probe, "body"), "evil.test")
      << "unsandboxed, the search list wins: " << control_apex.diagnostics;
  auto control_ghost = Control({"http", "ghost.test"});
  EXPECT_EQ(Str(control_ghost.probe, "body"), "evil.test")
      << "unsandboxed, a missing name gains the suffix: " << control_ghost.diagnostics;
  SBX_NET_SANDBOXED_HALF();
  const auto policy = Allowlist({"apex.test:80", "ghost.test:80"});
  auto apex = Sandboxed(policy, {"http", "apex.test"});
  ASSERT_TRUE(apex.ran);
  EXPECT_EQ(Int(apex.probe, "status"), 200) << apex.diagnostics;
  EXPECT_EQ(Str(apex.probe, "body"), "cdn.test") << "apex.test is cdn.test's address";
  EXPECT_EQ(CountEvents(apex.events, {.server = "evil.test"}), 0u);
  ExpectRecord(ReadAuditLog(apex.result),
               ConnAllowed("apex.test", "fakeip",
                           Endpoint(std::string(nettest::AddressOf("cdn.test")), 80)));

  auto ghost = Sandboxed(policy, {"http", "ghost.test"});
  ASSERT_TRUE(ghost.ran);
  EXPECT_EQ(Int(ghost.probe, "status"), 502) << ghost.diagnostics;
  EXPECT_EQ(CountEvents(ghost.events, {.server = "evil.test"}), 0u);
  AuditMatch failed = ConnDenied("resolve_failed");
  failed.name = "ghost.test";
  ExpectRecord(ReadAuditLog(ghost.result), failed);
}

TEST_F(NetworkAllowlist, EachConnectionResolvesTheNameAnew) {
  // flip.test's record changes at every query (TTL 0): api.test's address, then cdn.test's.
  constexpr int kConnections = 4;
  const std::vector<std::string> probe = {"http", "flip.test", "--count",
                                          std::to_string(kConnections)};
  auto control = Control(probe);
  ASSERT_TRUE(control.probe.contains("results")) << control.diagnostics;
  SBX_NET_SANDBOXED_HALF();
  auto run = Sandboxed(Allowlist({"flip.test:80"}), probe);
  ASSERT_TRUE(run.ran);
  ASSERT_EQ(run.probe["results"].size(), static_cast<size_t>(kConnections)) << run.diagnostics;
  std::set<std::string> served_by;
  for (const auto& result : run.probe["results"]) {
    EXPECT_EQ(Int(result, "status"), 200) << result.dump();
    served_by.insert(Str(result, "body"));
  }
  // The sandbox resolved flip.test once (one fake address); netd looked it up per connection.
  EXPECT_EQ(served_by, (std::set<std::string>{"api.test", "cdn.test"})) << run.diagnostics;
  EXPECT_GE(CountEvents(run.events, {.kind = "dns", .qname = "flip.test"}),
            static_cast<size_t>(kConnections));
}

TEST_F(NetworkAllowlist, TheHostsOwnAddressesAreRefusedUnlessAllowPrivateNamesThem) {
  // self.test is T's veth address (documentation range, so not "internal" by its prefix), where
  // a service of the host (the canary) listens.
  const std::string self(nettest::kVethAddressT);
  auto control = Control({"http", "self.test"});
  EXPECT_EQ(Str(control.probe, "body"), "self.test") << control.diagnostics;
  SBX_NET_SANDBOXED_HALF();
  for (const std::string& target : {std::string("self.test"), self}) {
    SCOPED_TRACE(target);
    auto run = Sandboxed(Allowlist({"self.test:80", self + ":80"}), {"http", target});
    ASSERT_TRUE(run.ran);
    ExpectBlockedByPolicy(run.probe);
    EXPECT_EQ(CountEvents(run.events, {.server = "self.test"}), 0u);
    ExpectRecord(ReadAuditLog(run.result), ConnDenied("internal_address"));
  }
  auto policy = Allowlist({"self.test:80"});
  policy["allow_private"] = {self + ":80"};
  auto opted_in = Sandboxed(policy, {"http", "self.test"});
  ASSERT_TRUE(opted_in.ran);
  EXPECT_EQ(Str(opted_in.probe, "body"), "self.test") << opted_in.diagnostics;
}

}  // namespace
}  // namespace sbx::testing
