// Unit tests for the policy's network object: the strict loader, validation, the JSON that
// sbx-netd receives, and the launcher's refusal while enforcement is missing.
#include <gtest/gtest.h>

#include <string>

#include "netpolicy/network_allowlist_json.h"
#include "netpolicy/network_proxy_env.h"
#include "sandbox/launcher.h"
#include "sandbox/policy/policy.h"

namespace sbx {
namespace {

Result<Policy> Parse(const std::string& network) {
  return ParsePolicyJson("{\"network\": " + network + "}");
}

void ExpectRejected(const std::string& network, const std::string& must_mention) {
  auto policy = Parse(network);
  ASSERT_FALSE(policy) << network << " was accepted";
  EXPECT_EQ(policy.error().code, ErrorCode::kInvalidInput);
  EXPECT_NE(policy.error().message.find(must_mention), std::string::npos)
      << network << ": " << policy.error().message;
}

TEST(PolicyNetwork, StringsStayNoneAndHost) {
  EXPECT_EQ(Parse("\"none\"")->network, NetworkMode::kNone);
  EXPECT_EQ(Parse("\"host\"")->network, NetworkMode::kHost);
  EXPECT_EQ(Parse(R"({"mode": "none"})")->network, NetworkMode::kNone);
  EXPECT_EQ(Parse(R"({"mode": "host"})")->network, NetworkMode::kHost);
  EXPECT_STREQ(NetworkModeName(NetworkMode::kNone), "none");
  EXPECT_STREQ(NetworkModeName(NetworkMode::kHost), "host");
  EXPECT_STREQ(NetworkModeName(NetworkMode::kAllowlist), "allowlist");
}

TEST(PolicyNetwork, ReadsTheAllowlistObject) {
  auto policy = Parse(R"({"mode": "allowlist",
      "allow": ["pypi.org:443", "files.pythonhosted.org", "*.example.com", "github.com:22,443",
                "203.0.113.0/24:5432", "[2001:db8::1]:443"],
      "deny": ["uploads.example.com", "evil.example.com:80"],
      "allow_private": ["10.20.0.0/16:8443"],
      "limits": {"max_connections": 64, "egress_bytes": "100M", "connect_timeout": 2.5, "idle_timeout": 60}})");
  ASSERT_TRUE(policy) << policy.error().ToString();
  EXPECT_EQ(policy->network, NetworkMode::kAllowlist);
  const NetworkAllowlist& allowlist = policy->network_allowlist;
  ASSERT_EQ(allowlist.allow.size(), 6u);
  EXPECT_EQ(allowlist.allow[2].kind, HostPatternKind::kSuffix);
  EXPECT_EQ(allowlist.allow[4].kind, HostPatternKind::kAddress);
  ASSERT_EQ(allowlist.deny.size(), 2u);
  EXPECT_TRUE(allowlist.deny[0].ports.any) << "a deny rule without ports covers every port";
  EXPECT_FALSE(allowlist.deny[1].ports.any);
  ASSERT_EQ(allowlist.allow_private.size(), 1u);
  EXPECT_EQ(allowlist.limits.max_connections, 64u);
  EXPECT_EQ(allowlist.limits.egress_bytes_max, 100ull << 20);
  EXPECT_DOUBLE_EQ(allowlist.limits.connect_timeout_seconds, 2.5);
  EXPECT_DOUBLE_EQ(allowlist.limits.idle_timeout_seconds, 60);
  EXPECT_EQ(DecideName(allowlist, "uploads.example.com", 443).reason, "deny_rule");
  EXPECT_TRUE(DecideName(allowlist, "www.example.com", 443).allowed);
}

TEST(PolicyNetwork, AllowlistDefaults) {
  auto policy = Parse(R"({"mode": "allowlist"})");
  ASSERT_TRUE(policy) << policy.error().ToString();
  EXPECT_EQ(policy->network, NetworkMode::kAllowlist);
  EXPECT_EQ(policy->network_allowlist, NetworkAllowlist{});
  EXPECT_EQ(policy->network_allowlist.limits.max_connections, 4096u);
}

TEST(PolicyNetwork, StarPortIsFineInDeny) {
  auto policy =
      Parse(R"({"mode": "allowlist", "allow": ["example.com"], "deny": ["*.example.com:*"]})");
  ASSERT_TRUE(policy) << policy.error().ToString();
}

// A network value the loader refuses, and what its message must contain.
struct Rejected {
  const char* network;
  const char* must_mention;
};

TEST(PolicyNetwork, RejectionsNameTheJsonPath) {
  const Rejected rejected[] = {
      {"\"bridge\"", "network: expected \"none\", \"host\" or an object"},
      {"true", "network: expected"},
      {"\"allowlist\"", "needs the object form"},
      {"{}", "network.mode: missing"},
      {R"({"mode": "bridge"})", "network.mode: expected \"allowlist\", \"none\" or \"host\""},
      {R"({"mode": 1})", "network.mode: expected"},
      {R"({"mode": "allowlist", "audit": {}})", "network.audit: unknown key"},
      {R"({"mode": "allowlist", "mode": "host"})", "mode: duplicate key"},
      {R"({"mode": "none", "allow": ["pypi.org"]})",
       "network.allow: only with \"mode\": \"allowlist\""},
      {R"({"mode": "host", "deny": []})", "network.deny: only with"},
      {R"({"mode": "host", "allow_private": []})", "network.allow_private: only with"},
      {R"({"mode": "none", "limits": {}})", "network.limits: only with"},
      {R"({"mode": "allowlist", "allow": "pypi.org"})", "network.allow: expected a list"},
      {R"({"mode": "allowlist", "allow": ["a.org", "b.org", 443]})",
       "network.allow[2]: expected a string"},
      {R"({"mode": "allowlist", "allow": ["a.org", "b.org", "*.com"]})",
       "network.allow[2]: \"*.com\""},
      {R"({"mode": "allowlist", "allow": ["2001:db8::1:443"]})",
       "network.allow[0]: \"2001:db8::1:443\""},
      {R"({"mode": "allowlist", "allow": ["http://x"]})", "network.allow[0]: \"http://x\": a URL"},
      {R"({"mode": "allowlist", "deny": ["ok.org", "*"]})", "network.deny[1]: \"*\""},
      {R"({"mode": "allowlist", "allow_private": ["internal.corp:8443"]})",
       "network.allow_private[0]: \"internal.corp:8443\": allow_private takes IP addresses"},
      {R"({"mode": "allowlist", "allow": ["x.org:1-1000"]})",
       "network.allow[0]: \"x.org:1-1000\": ports too wide"},
  };
  for (const Rejected& bad : rejected) ExpectRejected(bad.network, bad.must_mention);
}

TEST(PolicyNetwork, LimitRejectionsNameTheKey) {
  const Rejected rejected[] = {
      {R"([])", "network.limits: expected an object"},
      {R"({"egress_bytes_max": 1})", "network.limits.egress_bytes_max: unknown key"},
      {R"({"max_connections": 0})", "network.limits.max_connections: 0 is out of range"},
      {R"({"max_connections": 1000001})", "network.limits.max_connections"},
      {R"({"max_connections": 1.5})", "network.limits.max_connections: expected"},
      {R"({"max_connections": "8"})", "network.limits.max_connections: expected"},
      {R"({"egress_bytes": "1Q"})", "network.limits.egress_bytes"},
      {R"({"egress_bytes": 10})", "network.limits.egress_bytes: 10"},
      {R"({"connect_timeout": -1})", "network.limits.connect_timeout: expected"},
      {R"({"connect_timeout": 0})", "network.limits.connect_timeout: 0 s is out of range"},
      {R"({"idle_timeout": 100000})", "network.limits.idle_timeout: 100000 s is out of range"},
  };
  for (const Rejected& bad : rejected) {
    ExpectRejected(std::string(R"({"mode": "allowlist", "limits": )") + bad.network + "}",
                   bad.must_mention);
  }
}

TEST(PolicyNetwork, UnimplementedFeaturesAreRefusedNotIgnored) {
  ExpectRejected(R"({"mode": "allowlist", "http_rules": [{"allow": "GET api.github.com/*"}]})",
                 "network.http_rules: HTTP method and path rules are not implemented yet in this "
                 "sbx; remove it");
}

TEST(PolicyNetwork, ProxyEnvIsABooleanOfAllowlistMode) {
  EXPECT_FALSE(Parse(R"({"mode": "allowlist"})")->network_allowlist.proxy_env);
  EXPECT_FALSE(Parse(R"({"mode": "allowlist", "proxy_env": false})")->network_allowlist.proxy_env);
  EXPECT_TRUE(Parse(R"({"mode": "allowlist", "proxy_env": true})")->network_allowlist.proxy_env);
  for (const char* bad : {"\"true\"", "1", "null", "[]", "{}"}) {
    ExpectRejected(std::string(R"({"mode": "allowlist", "proxy_env": )") + bad + "}",
                   "network.proxy_env: expected true or false");
  }
  ExpectRejected(R"({"mode": "none", "proxy_env": true})",
                 "network.proxy_env: only with \"mode\": \"allowlist\", not \"none\"");
  ExpectRejected(R"({"mode": "host", "proxy_env": false})", "network.proxy_env: only with");
}

TEST(PolicyNetwork, ProxyEnvOwnsPort3128) {
  EXPECT_TRUE(Parse(R"({"mode": "allowlist", "allow": ["squid.corp:3128"]})"));
  ExpectRejected(
      R"({"mode": "allowlist", "proxy_env": true, "allow": ["a.test", "squid.corp:3000-4000"]})",
                 "network.allow[1]: \"squid.corp:3000-4000\": port 3128 is the sandbox's proxy");
  ExpectRejected(R"({"mode": "allowlist", "proxy_env": true, "allow_private": ["10.0.0.1:3128"]})",
                 "network.allow_private[0]");
}

TEST(PolicyNetwork, ProxyEnvVariablesCannotBeSetBesideIt) {
  for (const char* name : {"HTTP_PROXY", "https_proxy", "No_Proxy", "ALL_PROXY", "all_proxy",
                           "FTP_PROXY"}) {
    auto policy = ParsePolicyJson(
        std::string(R"({"network": {"mode": "allowlist", "proxy_env": true}, "env": {")") + name +
        R"(": "socks5://x:1"}})");
    ASSERT_FALSE(policy) << name;
    EXPECT_NE(policy.error().message.find(std::string("env.") + name + ": network.proxy_env sets"),
              std::string::npos)
        << policy.error().message;
  }
  // Without proxy_env the policy's env is the operator's to set (traffic is captured anyway).
  EXPECT_TRUE(ParsePolicyJson(
      R"({"network": {"mode": "allowlist"}, "env": {"HTTPS_PROXY": "http://proxy.corp:3128"}})"));
  // --env goes through the same check.
  auto policy = ParsePolicyJson(R"({"network": {"mode": "allowlist", "proxy_env": true}})");
  ASSERT_TRUE(policy);
  policy->env["http_proxy"] = "http://elsewhere:1";
  EXPECT_FALSE(ValidatePolicy(*policy));
}

TEST(PolicyNetwork, ProxyEnvironmentIsHttpOnlyAndNeverSocks) {
  const auto env = ProxyEnvironment();
  for (const char* name : {"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"}) {
    ASSERT_EQ(env.count(name), 1u) << name;
    EXPECT_EQ(env.at(name), "http://127.0.0.1:3128");
  }
  EXPECT_EQ(env.at("NO_PROXY"), "localhost,127.0.0.1,::1");
  EXPECT_EQ(env.at("no_proxy"), "localhost,127.0.0.1,::1");
  EXPECT_EQ(env.size(), 6u) << "no ALL_PROXY, no FTP_PROXY";
  for (const auto& [name, value] : env) EXPECT_EQ(value.find("socks"), std::string::npos);
}

TEST(PolicyNetwork, ValidateChecksTheAllowlistOnlyInAllowlistMode) {
  Policy policy;
  policy.network_allowlist.limits.max_connections = 0;
  EXPECT_TRUE(ValidatePolicy(policy));
  policy.network = NetworkMode::kAllowlist;
  auto invalid = ValidatePolicy(policy);
  ASSERT_FALSE(invalid);
  EXPECT_NE(invalid.error().message.find("network.limits.max_connections"), std::string::npos);
}

TEST(PolicyNetwork, TheAllowlistMustFitOneMessageToSbxNetd) {
  // 1000 rules of about 80 bytes: within kMaxRules, beyond the message.
  const std::string domain = ".a-rather-long-name-for-one-rule-among-many.example.org";
  std::string allow;
  for (int i = 0; i < 1000; ++i) {
    allow += std::string(i ? "," : "") + "\"host-" + std::to_string(i) + domain + "\"";
  }
  auto policy = Parse(R"({"mode": "allowlist", "allow": [)" + allow + "]}");
  ASSERT_FALSE(policy);
  EXPECT_NE(policy.error().message.find("fit the message to sbx-netd"), std::string::npos)
      << policy.error().message;
}

NetworkAllowlist SampleAllowlist() {
  auto policy = Parse(R"({"mode": "allowlist",
      "allow": ["PyPI.org.", "*.example.com:80,443", "github.com:22,443", "203.0.113.0/24:5432",
                "[2001:db8::/32]:8000-8100"],
      "deny": ["uploads.example.com", "[2001:db8::66]:*"],
      "allow_private": ["10.20.0.0/16:8443", "[fd00::/8]"],
      "limits": {"max_connections": 9, "egress_bytes": 123456789, "connect_timeout": 0.1,
                 "idle_timeout": 1234.5678}, "proxy_env": true})");
  EXPECT_TRUE(policy) << policy.error().ToString();
  return policy->network_allowlist;
}

TEST(NetworkAllowlistJson, RoundTripsExactly) {
  for (const NetworkAllowlist& allowlist : {NetworkAllowlist{}, SampleAllowlist()}) {
    const std::string json = NetworkAllowlistToJson(allowlist);
    auto parsed = ParseNetworkAllowlistJson(json);
    ASSERT_TRUE(parsed) << json << ": " << parsed.error().ToString();
    EXPECT_EQ(*parsed, allowlist) << json;
    EXPECT_EQ(NetworkAllowlistToJson(*parsed), json);
  }
}

TEST(NetworkAllowlistJson, ShapeIsThePolicyObjectWithoutMode) {
  NetworkAllowlist allowlist;
  allowlist.allow = SampleAllowlist().allow;
  allowlist.allow.resize(1);
  EXPECT_EQ(
      NetworkAllowlistToJson(allowlist),
      R"({"allow":["PyPI.org."],"allow_private":[],"deny":[],"extra_ca_files":[],"inject":[],)"
      R"("limits":{"connect_timeout":10.0,"egress_bytes":1073741824,"idle_timeout":300.0,)"
      R"("max_connections":4096},"proxy_env":false,"upstream_ca_files":[]})");
}

TEST(NetworkAllowlistJson, ParsingIsStrict) {
  struct Case {
    const char* text;
    const char* must_mention;
  };
  for (const Case& bad : {
           Case{"", "network allowlist: not valid JSON"},
           Case{"[]", "network: expected an object"},
           Case{R"({"mode": "allowlist"})", "network.mode: unknown key"},
           Case{R"({"inject": {}})", "network.inject: expected a list"},
           Case{R"({"http_rules": []})", "network.http_rules: unknown key"},
           Case{R"({"proxy_env": 1})", "network.proxy_env: expected true or false"},
           Case{R"({"allow": [], "allow": []})", "allow: duplicate key"},
           Case{R"({"allow": ["*.com"]})", "network.allow[0]"},
           Case{R"({"allow_private": ["x.corp"]})", "network.allow_private[0]"},
           Case{R"({"limits": {"max_connections": 0}})", "network.limits.max_connections"},
       }) {
    auto parsed = ParseNetworkAllowlistJson(bad.text);
    ASSERT_FALSE(parsed) << bad.text;
    EXPECT_NE(parsed.error().message.find(bad.must_mention), std::string::npos)
        << bad.text << ": " << parsed.error().message;
  }
}

}  // namespace
}  // namespace sbx
