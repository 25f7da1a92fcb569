// Unit tests for sbx-netd's parsing of the runner's messages and its summary message.
#include "src/netd/control.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "netpolicy/network_allowlist_json.h"
#include "sandbox/policy/policy.h"

namespace sbx::netd {
namespace {

std::string HelloText(const std::string& run = "r1", const std::string& extra = "") {
  NetworkAllowlist allowlist;
  allowlist.allow.push_back(*ParseNetworkRule("pypi.org", "allow"));
  return R"({"v":1,"run":")" + run + R"(","audit_log":true,"network":)" +
         NetworkAllowlistToJson(allowlist) + extra + "}";
}

TEST(ParseHello, ReadsRunAuditFlagAndAllowlist) {
  auto hello = ParseHello(HelloText());
  ASSERT_TRUE(hello) << hello.error().message;
  EXPECT_EQ(hello->run_id, "r1");
  EXPECT_TRUE(hello->audit_log);
  ASSERT_EQ(hello->allowlist.allow.size(), 1u);
  EXPECT_EQ(hello->allowlist.allow[0].name, "pypi.org");
}

TEST(ParseHello, IsStrict) {
  EXPECT_FALSE(ParseHello("not json"));
  EXPECT_FALSE(ParseHello("[]"));
  EXPECT_FALSE(ParseHello(HelloText("r1", R"(,"extra":1)")));
  EXPECT_FALSE(ParseHello(HelloText("")));
  EXPECT_FALSE(ParseHello(HelloText(std::string(129, 'r'))));
  EXPECT_FALSE(ParseHello(HelloText("r 1")));
  EXPECT_FALSE(ParseHello(R"({"v":2,"run":"r","audit_log":false,"network":{}})"));
  EXPECT_FALSE(ParseHello(R"({"v":1,"run":"r","audit_log":"yes","network":{}})"));
  EXPECT_FALSE(ParseHello(R"({"v":1,"run":"r","audit_log":false,"network":[]})"));
  EXPECT_FALSE(ParseHello(R"({"v":1,"run":"r","audit_log":false})"));
}

// A hello with one inject rule for api.test (allowed on 443) and `tls` as given.
std::string InjectHello(const nlohmann::json& tls, const nlohmann::json& inject = nullptr) {
  NetworkAllowlist allowlist;
  allowlist.allow.push_back(*ParseNetworkRule("api.test", "allow"));
  auto network = nlohmann::json::parse(NetworkAllowlistToJson(allowlist));
  network["inject"] = inject.is_null() ? nlohmann::json::parse(
                                             R"([{"name":"openai","hosts":["API.test"],
                                                 "header":"Authorization",
                                                 "format":"Bearer {secret}",
                                                 "secret_from":"env:K"}])")
                                       : inject;
  nlohmann::json hello = {{"v", 1}, {"run", "r1"}, {"audit_log", false}, {"network", network}};
  if (!tls.is_null()) hello["tls"] = tls;
  return hello.dump();
}

nlohmann::json Tls() {
  return {{"secrets",
           {{{"value", "Bearer sk-secret-1"},
             {"placeholder", "sbx-ph-0123456789abcdef0123456789abcdef"}}}}};
}

TEST(ParseHello, ReadsTheTlsObjectAndTheInjectRules) {
  auto hello = ParseHello(InjectHello(Tls()));
  ASSERT_TRUE(hello) << hello.error().message;
  ASSERT_EQ(hello->allowlist.inject.size(), 1u);
  EXPECT_EQ(hello->allowlist.inject[0].name, "openai");
  EXPECT_EQ(hello->allowlist.inject[0].hosts, std::vector<std::string>{"api.test"});
  EXPECT_EQ(hello->allowlist.inject[0].header, "Authorization");
  ASSERT_TRUE(hello->tls);
  EXPECT_TRUE(hello->tls->upstream_ca_pems.empty());
  ASSERT_EQ(hello->tls->secrets.size(), 1u);
  EXPECT_EQ(hello->tls->secrets[0].value.view(), "Bearer sk-secret-1");
  EXPECT_EQ(hello->tls->secrets[0].placeholder.view(), "sbx-ph-0123456789abcdef0123456789abcdef");
  auto no_placeholder = Tls();
  no_placeholder["secrets"][0]["placeholder"] = "";
  EXPECT_TRUE(ParseHello(InjectHello(no_placeholder)));
}

// Each malformed "tls" is refused with an error naming the field and never quoting a secret.
TEST(ParseHello, RefusesAMalformedTlsObjectNamingTheField) {
  struct Case {
    std::string field;
    nlohmann::json tls;
  };
  std::vector<Case> cases;
  auto with = [](const std::string& pointer, nlohmann::json value) {
    auto tls = Tls();
    tls[nlohmann::json::json_pointer(pointer)] = std::move(value);
    return tls;
  };
  auto without = [](const std::string& key) {
    auto tls = Tls();
    tls.erase(key);
    return tls;
  };
  cases.push_back({"tls: missing key \"secrets\"", without("secrets")});
  cases.push_back({"tls: unknown key \"extra\"", with("/extra", "x")});
  // The run's CA is netd's own: a runner that sends one is refused.
  cases.push_back({"tls: unknown key \"ca_key_pem\"", with("/ca_key_pem", "KEY")});
  // The upstream CAs come in the CA files' memfd, not in "tls".
  cases.push_back({"tls: unknown key \"upstream_ca_pem\"",
                   with("/upstream_ca_pem", nlohmann::json::array({"PEM"}))});
  cases.push_back({"tls.secrets", with("/secrets", "x")});
  cases.push_back({"tls.secrets: expected 1", with("/secrets", nlohmann::json::array())});
  cases.push_back({"tls.secrets[0].value", with("/secrets/0/value", "Bearer x\r\nX-Evil: 1")});
  cases.push_back({"tls.secrets[0].value", with("/secrets/0/value", "")});
  cases.push_back({"tls.secrets[0].placeholder", with("/secrets/0/placeholder", "sk-secret-1")});
  cases.push_back({"tls.secrets[0]: unknown key", with("/secrets/0/x", "sk-secret-1")});
  cases.push_back({"tls: expected an object", nlohmann::json::array()});
  cases.push_back({"tls: missing, but network.inject has rules", nullptr});
  for (const Case& c : cases) {
    auto hello = ParseHello(InjectHello(c.tls));
    ASSERT_FALSE(hello) << c.field;
    EXPECT_NE(hello.error().message.find(c.field), std::string::npos) << hello.error().message;
    EXPECT_EQ(hello.error().message.find("sk-secret"), std::string::npos) << c.field;
  }
  auto two_secrets = Tls();
  two_secrets["secrets"].push_back(Tls()["secrets"][0]);
  EXPECT_FALSE(ParseHello(InjectHello(two_secrets)));
  // "tls" without inject rules, and inject rules that are malformed or not allowed on 443.
  EXPECT_FALSE(ParseHello(HelloText("r1", R"(,"tls":{})")));
  EXPECT_FALSE(ParseHello(InjectHello(Tls(), nlohmann::json::parse(
                                                 R"([{"name":"x","hosts":["evil.test"],
                                                     "header":"Authorization"}])"))));
  EXPECT_FALSE(ParseHello(InjectHello(Tls(), nlohmann::json::parse(
                                                 R"([{"name":"x","hosts":["api.test"],
                                                     "header":"Bad Header"}])"))));
  EXPECT_FALSE(ParseHello(InjectHello(Tls(), nlohmann::json::parse(
                                                 R"([{"name":"x","hosts":["api.test"],
                                                     "header":"A","extra":1}])"))));
}

// The CA files' texts come in a memfd (ReceiveHello reads it), cut at "ca_file_sizes": the
// extra CAs, then, with inject rules, the upstream CAs.
TEST(ParseHello, CutsTheCaTextsIntoExtraAndUpstreamCas) {
  NetworkAllowlist allowlist;
  allowlist.allow.push_back(*ParseNetworkRule("api.test", "allow"));
  allowlist.extra_ca_files = {"/etc/corp/a.pem", "/etc/corp/b.pem"};
  nlohmann::json hello = {{"v", 1},
                          {"run", "r1"},
                          {"audit_log", false},
                          {"network", nlohmann::json::parse(NetworkAllowlistToJson(allowlist))},
                          {"ca_file_sizes", {2, 3}}};
  auto parsed = ParseHello(hello.dump(), "AABBB");
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->extra_ca_pems, (std::vector<std::string>{"AA", "BBB"}));
  struct Case {
    nlohmann::json sizes;
    std::string texts;
    std::string must_mention;
  };
  for (const Case& bad : std::vector<Case>{
           {{2}, "AA", "ca_file_sizes: expected 2 sizes"},
           {{2, 2}, "AABBB", "add up to 4 bytes, not the 5"},
           {{2, 4}, "AABBB", "expected sizes of 1 to"},
           {{0, 5}, "AABBB", "expected sizes of 1 to"},
           {{2, (1 << 20) + 2}, "AABBB", "expected sizes of 1 to 1048577 bytes"},
           {{"2", 3}, "AABBB", "expected sizes of 1 to"},
           {nullptr, "AABBB", "ca_file_sizes: missing"},
       }) {
    if (bad.sizes.is_null()) {
      hello.erase("ca_file_sizes");
    } else {
      hello["ca_file_sizes"] = bad.sizes;
    }
    parsed = ParseHello(hello.dump(), bad.texts);
    ASSERT_FALSE(parsed) << bad.must_mention;
    EXPECT_NE(parsed.error().message.find(bad.must_mention), std::string::npos)
        << parsed.error().message;
  }
  EXPECT_FALSE(ParseHello(HelloText("r1", R"(,"ca_file_sizes":[1])"), "A"));
  EXPECT_FALSE(ParseHello(HelloText("r1"), "A")) << "texts without CA files";

  // With inject rules, the upstream CAs follow the extra ones.
  auto network = nlohmann::json::parse(InjectHello(Tls()))["network"];
  network["extra_ca_files"] = {"/etc/corp/a.pem"};
  network["upstream_ca_files"] = {"/etc/corp/up1.pem", "/etc/corp/up2.pem"};
  nlohmann::json inject = {{"v", 1},   {"run", "r1"},           {"audit_log", false},
                           {"network", network}, {"ca_file_sizes", {1, 2, 3}}, {"tls", Tls()}};
  parsed = ParseHello(inject.dump(), "ABBCCC");
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->extra_ca_pems, std::vector<std::string>{"A"});
  ASSERT_TRUE(parsed->tls);
  EXPECT_EQ(parsed->tls->upstream_ca_pems, (std::vector<std::string>{"BB", "CCC"}));
}

TEST(WipeJsonStrings, OverwritesEveryString) {
  auto tls = Tls();
  std::string& value = tls["secrets"][0]["value"].get_ref<std::string&>();
  const char* bytes = value.data();
  const size_t size = value.size();
  WipeJsonStrings(tls);
  EXPECT_TRUE(tls["secrets"][0]["value"].get<std::string>().empty());
  EXPECT_EQ(std::string(bytes, size), std::string(size, '\0'));  // the same buffer, zeroed
}

TEST(SummaryMessage, HasTheProtocolsFields) {
  RunSummary summary;
  summary.dns_queries = 3;
  summary.allowed = 2;
  summary.denied = 1;
  summary.denied_names = {"evil.test", "bad\nname\xff"};
  summary.bytes_up = 10;
  summary.bytes_down = 20;
  summary.log_sha256 = "ab12";
  const std::string text = SummaryMessage(summary);
  EXPECT_EQ(text.find('\n'), std::string::npos);
  const auto message = nlohmann::json::parse(text);
  const auto& fields = message.at("summary");
  EXPECT_EQ(fields.at("dns_queries"), 3);
  EXPECT_EQ(fields.at("allowed"), 2);
  EXPECT_EQ(fields.at("denied"), 1);
  EXPECT_EQ(fields.at("denied_names").size(), 2u);
  EXPECT_EQ(fields.at("bytes_up"), 10);
  EXPECT_EQ(fields.at("bytes_down"), 20);
  EXPECT_EQ(fields.at("log_sha256"), "ab12");
}

TEST(RunCounters, DeniedNamesAreDistinctAndBounded) {
  RunCounters counters;
  for (int i = 0; i < 30; ++i) counters.CountDenied("n" + std::to_string(i % 15));
  counters.CountDenied("");
  EXPECT_EQ(counters.summary().denied, 31u);
  ASSERT_EQ(counters.summary().denied_names.size(), kMaxDeniedNames);
  EXPECT_EQ(counters.summary().denied_names[0], "n0");
  EXPECT_EQ(counters.summary().denied_names[9], "n9");
}

}  // namespace
}  // namespace sbx::netd
