// Unit tests for sbx-netd's parsing of the runner's messages and its summary message.
#include "src/netd/control.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "sandbox/policy.h"

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

TEST(SummaryMessage, HasTheProtocolsFields) {
  RunSummary summary;
  summary.dns_queries = 3;
  summary.allowed = 2;
  summary.denied = 1;
  summary.denied_names = {"evil.test", "bad\nname\xff"};
  summary.bytes_up = 10;
  summary.bytes_down = 20;
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
