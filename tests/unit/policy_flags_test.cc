// Unit tests for the policy flags `sbx run` and `sbx agent` share (network ones).
#include "src/cli/policy_flags.h"

#include <gtest/gtest.h>

#include <string>

namespace sbx::cli {
namespace {

TEST(PolicyFlags, NetworkModes) {
  Policy policy;
  ASSERT_TRUE(ApplyPolicyFlag("--network", "host", policy));
  EXPECT_EQ(policy.network, NetworkMode::kHost);
  ASSERT_TRUE(ApplyPolicyFlag("--network", "allowlist", policy));
  EXPECT_EQ(policy.network, NetworkMode::kAllowlist);
  ASSERT_TRUE(ApplyPolicyFlag("--network", "none", policy));
  EXPECT_EQ(policy.network, NetworkMode::kNone);
  auto bad = ApplyPolicyFlag("--network", "bridge", policy);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "--network: use none, host or allowlist, not \"bridge\"");
}

TEST(PolicyFlags, Isolation) {
  Policy policy;
  ASSERT_TRUE(ApplyPolicyFlag("--isolation", "outer", policy));
  EXPECT_EQ(policy.isolation, Isolation::kOuter);
  ASSERT_TRUE(ApplyPolicyFlag("--isolation", "namespaces", policy));
  EXPECT_EQ(policy.isolation, Isolation::kNamespaces);
  auto bad = ApplyPolicyFlag("--isolation", "none", policy);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message.rfind("--isolation: \"none\" is not an isolation mode; use", 0), 0u)
      << bad.error().message;
}

TEST(PolicyFlags, AnOuterRunHasNoImageAndRefusesOne) {
  Policy policy;
  policy.isolation = Isolation::kOuter;
  policy.network = NetworkMode::kHost;
  auto none = ResolveRunImage("", "--image", policy);
  ASSERT_TRUE(none) << none.error().ToString();
  EXPECT_EQ(*none, "");
  auto refused = ResolveRunImage("sklearn", "the team file's image", policy);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().message,
            "the team file's image: isolation \"outer\" runs the container's own root file system, not an "
            "image; drop the team file's image");
}

TEST(PolicyFlags, AllowAppendsRulesAndSwitchesToAllowlist) {
  Policy policy;
  ASSERT_TRUE(ApplyPolicyFlag("--allow", "pypi.org", policy));
  ASSERT_TRUE(ApplyPolicyFlag("--allow", "github.com:22,443", policy));
  EXPECT_EQ(policy.network, NetworkMode::kAllowlist);
  ASSERT_EQ(policy.network_allowlist.allow.size(), 2u);
  EXPECT_EQ(policy.network_allowlist.allow[1].text, "github.com:22,443");
  EXPECT_TRUE(ValidatePolicy(policy));
  EXPECT_TRUE(DecideName(policy.network_allowlist, "github.com", 22).allowed);
}

TEST(PolicyFlags, AllowAddsToThePolicyFilesAllowlist) {
  auto policy = ParsePolicyJson(R"({"network": {"mode": "allowlist", "allow": ["pypi.org"]}})");
  ASSERT_TRUE(policy) << policy.error().ToString();
  ASSERT_TRUE(ApplyPolicyFlag("--allow", "files.pythonhosted.org", *policy));
  EXPECT_EQ(policy->network_allowlist.allow.size(), 2u);
}

TEST(PolicyFlags, AllowNamesTheFlagInErrors) {
  Policy policy;
  auto bad = ApplyPolicyFlag("--allow", "*.com", policy);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message.rfind("--allow: \"*.com\": ", 0), 0u) << bad.error().message;
  EXPECT_EQ(policy.network, NetworkMode::kNone) << "a rejected rule changes nothing";
}

TEST(PolicyFlags, AllowAndHostConflictInEitherOrder) {
  Policy host_first;
  ASSERT_TRUE(ApplyPolicyFlag("--network", "host", host_first));
  auto allow = ApplyPolicyFlag("--allow", "pypi.org", host_first);
  ASSERT_FALSE(allow);
  EXPECT_NE(allow.error().message.find("--network host"), std::string::npos)
      << allow.error().message;

  Policy allow_first;
  ASSERT_TRUE(ApplyPolicyFlag("--allow", "pypi.org", allow_first));
  auto host = ApplyPolicyFlag("--network", "host", allow_first);
  ASSERT_FALSE(host);
  EXPECT_NE(host.error().message.find("--network host"), std::string::npos) << host.error().message;
  EXPECT_EQ(allow_first.network, NetworkMode::kAllowlist);
}

TEST(PolicyFlags, StarPortFromAllowIsValidAndCapturesEveryPort) {
  Policy policy;
  ASSERT_TRUE(ApplyPolicyFlag("--allow", "pypi.org:*", policy));
  auto valid = ValidatePolicy(policy);
  ASSERT_TRUE(valid) << valid.error().ToString();
  EXPECT_TRUE(CapturesAllPorts(policy.network_allowlist));
}

}  // namespace
}  // namespace sbx::cli
