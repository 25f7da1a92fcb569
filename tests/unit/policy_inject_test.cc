// Unit tests for the allowlist's secret-injection fields: network.inject, extra_ca_files and
// upstream_ca_files, read strictly, checked against the allow rules, and sent to sbx-netd.
#include <gtest/gtest.h>

#include <string>

#include "netpolicy/network_allowlist_json.h"
#include "sandbox/policy/policy.h"

namespace sbx {
namespace {

constexpr char kRule[] =
    R"({"name": "openai", "hosts": ["API.OpenAI.com."], "header": "Authorization",
        "format": "Bearer {secret}", "secret_from": "env:OPENAI_API_KEY",
        "sandbox_placeholder_env": "OPENAI_API_KEY"})";

Result<Policy> WithInject(const std::string& inject, const std::string& extra = "") {
  return ParsePolicyJson(R"({"network": {"mode": "allowlist", "allow": ["api.openai.com", "pypi.org"],
                             "inject": )" + inject + extra + "}}");
}

void ExpectRejected(const std::string& inject, const std::string& must_mention) {
  auto policy = WithInject(inject);
  ASSERT_FALSE(policy) << inject << " was accepted";
  EXPECT_EQ(policy.error().code, ErrorCode::kInvalidInput);
  EXPECT_NE(policy.error().message.find(must_mention), std::string::npos)
      << inject << ": " << policy.error().message;
}

TEST(PolicyInject, ReadsARule) {
  auto policy = WithInject(std::string("[") + kRule + "]",
                           R"(, "extra_ca_files": ["/etc/corp/ca.pem"],
                               "upstream_ca_files": ["/etc/corp/ca.pem", "/srv/test-ca.pem"])");
  ASSERT_TRUE(policy) << policy.error().ToString();
  const NetworkAllowlist& allowlist = policy->network_allowlist;
  ASSERT_EQ(allowlist.inject.size(), 1u);
  const InjectRule& rule = allowlist.inject[0];
  EXPECT_EQ(rule.name, "openai");
  EXPECT_EQ(rule.hosts, std::vector<std::string>{"api.openai.com"}) << "normalized";
  EXPECT_EQ(rule.header, "Authorization");
  EXPECT_EQ(rule.format, "Bearer {secret}");
  EXPECT_EQ(rule.secret_from, "env:OPENAI_API_KEY");
  EXPECT_EQ(rule.sandbox_placeholder_env, "OPENAI_API_KEY");
  EXPECT_EQ(allowlist.extra_ca_files, std::vector<std::string>{"/etc/corp/ca.pem"});
  EXPECT_EQ(allowlist.upstream_ca_files.size(), 2u);
}

TEST(PolicyInject, FormatDefaultsToTheBareSecret) {
  auto policy = WithInject(
      R"([{"name": "key", "hosts": ["pypi.org"], "header": "X-Api-Key", "secret_from": "file:/run/key"}])");
  ASSERT_TRUE(policy) << policy.error().ToString();
  EXPECT_EQ(policy->network_allowlist.inject[0].format, "{secret}");
  EXPECT_EQ(policy->network_allowlist.inject[0].sandbox_placeholder_env, "");
}

TEST(PolicyInject, RoundTripsToSbxNetdWithoutSecrets) {
  auto policy = WithInject(std::string("[") + kRule + "]", R"(, "upstream_ca_files": ["/x.pem"])");
  ASSERT_TRUE(policy) << policy.error().ToString();
  const std::string json = NetworkAllowlistToJson(policy->network_allowlist);
  auto parsed = ParseNetworkAllowlistJson(json);
  ASSERT_TRUE(parsed) << json << ": " << parsed.error().ToString();
  EXPECT_EQ(*parsed, policy->network_allowlist);
  EXPECT_NE(json.find("\"secret_from\":\"env:OPENAI_API_KEY\""), std::string::npos) << json;
}

TEST(PolicyInject, BadRulesNameTheFieldAndTheFix) {
  struct Case {
    std::string inject;
    std::string must_mention;
  };
  const std::string base = R"("hosts": ["api.openai.com"], "header": "Authorization", "secret_from": "env:K")";
  for (const Case& bad : std::vector<Case>{
           {"{}", "network.inject: expected a list"},
           {"[1]", "network.inject[0]: expected an object"},
           {R"([{"hosts": ["api.openai.com"], "header": "A", "secret_from": "env:K"}])",
            "network.inject[0].name: missing"},
           {R"([{"name": "x", "header": "A", "secret_from": "env:K"}])",
            "network.inject[0].hosts: missing"},
           {R"([{"name": "x", "hosts": ["api.openai.com"], "header": "A"}])",
            "network.inject[0].secret_from: missing"},
           {R"([{"name": "x", "hosts": ["api.openai.com"], "header": "A", "secret_from": "env:K", "value": "s"}])",
            "network.inject[0].value: unknown key"},
           {R"([{"name": "Open AI", )" + base + "}]", "network.inject[0].name: \"Open AI\""},
           {R"([{"name": "x", "hosts": [], "header": "A", "secret_from": "env:K"}])",
            "network.inject[0].hosts: expected a list of 1 to 32 exact host names"},
           {R"([{"name": "x", "hosts": ["*.openai.com"], "header": "A", "secret_from": "env:K"}])",
            "network.inject[0].hosts[0]: \"*.openai.com\": inject takes exact host names"},
           {R"([{"name": "x", "hosts": ["api.openai.com:8443"], "header": "A", "secret_from": "env:K"}])",
            "inject takes exact host names without ports"},
           {R"([{"name": "x", "hosts": ["10.0.0.1"], "header": "A", "secret_from": "env:K"}])",
            "network.inject[0].hosts[0]"},
           {R"([{"name": "x", "hosts": ["http://api.openai.com"], "header": "A", "secret_from": "env:K"}])",
            "network.inject[0].hosts[0]"},
           {R"([{"name": "x", "hosts": ["files.pythonhosted.org"], "header": "A", "secret_from": "env:K"}])",
            "\"files.pythonhosted.org\" is not allowed on port 443; add \"files.pythonhosted.org\" "
            "to network.allow"},
           {R"([{"name": "x", "hosts": ["api.openai.com"], "header": "Host", "secret_from": "env:K"}])",
            "network.inject[0].header: \"Host\": not a header sbx can set"},
           {R"([{"name": "x", "hosts": ["api.openai.com"], "header": "Content-Length", "secret_from": "env:K"}])",
            "not a header sbx can set"},
           {R"([{"name": "x", "hosts": ["api.openai.com"], "header": "Proxy-Authorization", "secret_from": "env:K"}])",
            "not a header sbx can set"},
           {R"([{"name": "x", "hosts": ["api.openai.com"], "header": "Bad Header", "secret_from": "env:K"}])",
            "not a header sbx can set"},
           {R"([{"name": "x", "format": "Bearer", )" + base + "}]",
            "network.inject[0].format: must contain {secret} exactly once"},
           {R"([{"name": "x", "format": "{secret}{secret}", )" + base + "}]", "exactly once"},
           {R"([{"name": "x", "format": "Bearer {secret}\r\nX-Evil: 1", )" + base + "}]",
            "no control characters"},
           {R"([{"name": "x", "sandbox_placeholder_env": "1BAD", )" + base + "}]",
            "network.inject[0].sandbox_placeholder_env: \"1BAD\""},
           {R"([{"name": "x", )" + base + R"(}, {"name": "x", "hosts": ["pypi.org"], "header": "A", "secret_from": "env:K"}])",
            "network.inject[1].name: \"x\" is used twice"},
           {R"([{"name": "x", )" + base + R"(}, {"name": "y", "hosts": ["api.openai.com"], "header": "A", "secret_from": "env:K"}])",
            "network.inject[1].hosts[0]: \"api.openai.com\" is in two inject rules"},
       }) {
    ExpectRejected(bad.inject, bad.must_mention);
  }
}

TEST(PolicyInject, LiteralSecretsAreRefusedWithoutEchoingThem) {
  for (const std::string source : {"sk-live-1234567890abcdef", "env:", "env:1X", "file:relative",
                                   "fd:3", "literal:sk-live-1234567890abcdef"}) {
    auto policy = WithInject(R"([{"name": "x", "hosts": ["api.openai.com"], "header": "A",
                                  "secret_from": ")" + source + "\"}]");
    ASSERT_FALSE(policy) << source;
    const std::string& message = policy.error().message;
    EXPECT_NE(message.find("network.inject[0].secret_from: not \"env:NAME\" or \"file:/absolute/path\""),
              std::string::npos)
        << message;
    EXPECT_EQ(message.find("1234567890abcdef"), std::string::npos) << "echoed: " << message;
  }
}

TEST(PolicyInject, CaFilesAreAbsolutePaths) {
  for (const std::string& bad : {std::string(R"("extra_ca_files": "x")"),
                                 std::string(R"("extra_ca_files": ["ca.pem"])"),
                                 std::string(R"("upstream_ca_files": [1])")}) {
    auto policy = ParsePolicyJson(R"({"network": {"mode": "allowlist", )" + bad + "}}");
    ASSERT_FALSE(policy) << bad;
    EXPECT_NE(policy.error().message.find("_ca_files"), std::string::npos) << policy.error().message;
  }
}

TEST(PolicyInject, OnlyInAllowlistMode) {
  auto policy = ParsePolicyJson(R"({"network": {"mode": "none", "inject": []}})");
  ASSERT_FALSE(policy);
  EXPECT_NE(policy.error().message.find("network.inject: only with \"mode\": \"allowlist\""),
            std::string::npos)
      << policy.error().message;
}

TEST(PolicyInject, ThePlaceholderVariableIsNotAlsoInEnv) {
  auto policy = ParsePolicyJson(std::string(R"({"env": {"OPENAI_API_KEY": "x"},
      "network": {"mode": "allowlist", "allow": ["api.openai.com"], "inject": [)") + kRule + "]}}");
  ASSERT_FALSE(policy);
  EXPECT_NE(policy.error().message.find("env.OPENAI_API_KEY: also network.inject's sandbox_placeholder_env"),
            std::string::npos)
      << policy.error().message;
}

TEST(PolicyInject, WithProxyEnvThePlaceholderVariableIsNoProxyVariable) {
  for (const char* name : {"HTTPS_PROXY", "http_proxy", "No_Proxy", "ALL_PROXY"}) {
    const std::string rule = std::string(R"({"name": "openai", "hosts": ["api.openai.com"],
        "header": "Authorization", "secret_from": "env:OPENAI_API_KEY", "sandbox_placeholder_env": ")") + name + "\"}";
    auto policy = WithInject("[" + rule + "]", R"(, "proxy_env": true)");
    ASSERT_FALSE(policy) << name << " was accepted";
    EXPECT_EQ(policy.error().code, ErrorCode::kInvalidInput);
    EXPECT_NE(policy.error().message.find(std::string("network.inject[0].sandbox_placeholder_env: ") +
                                          name + " is a proxy variable"),
              std::string::npos)
        << policy.error().message;
    // Without proxy_env nothing else sets it: the operator's choice.
    EXPECT_TRUE(WithInject("[" + rule + "]")) << name;
  }
}

}  // namespace
}  // namespace sbx
