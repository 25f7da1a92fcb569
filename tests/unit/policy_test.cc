// Unit tests for the strict policy loader and validation.
#include "sandbox/policy/policy.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "sandbox/launcher.h"

namespace sbx {
namespace {

// The memory bounds check against the host's RAM as /proc/meminfo reports it.
TEST(Policy, HostMemoryIsMemTotal) {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  uint64_t kib = 0;
  while (meminfo >> key && key != "MemTotal:") meminfo.ignore(1 << 10, '\n');
  ASSERT_TRUE(meminfo >> kib) << "no MemTotal in /proc/meminfo";
  EXPECT_EQ(HostMemoryBytes(), kib * 1024);
}

TEST(Policy, ShippedDefaultMatchesBuiltInDefaults) {
  auto loaded = LoadPolicyFile(std::string(SBX_POLICY_DIR) + "/default.json");
  ASSERT_TRUE(loaded) << loaded.error().ToString();
  Policy defaults;
  EXPECT_EQ(loaded->limits.memory_bytes, defaults.limits.memory_bytes);
  EXPECT_EQ(loaded->limits.pids, defaults.limits.pids);
  EXPECT_EQ(loaded->limits.cpus, defaults.limits.cpus);
  EXPECT_EQ(loaded->limits.timeout_seconds, defaults.limits.timeout_seconds);
  EXPECT_EQ(loaded->limits.output_bytes, defaults.limits.output_bytes);
  EXPECT_EQ(loaded->limits.file_size_bytes, defaults.limits.file_size_bytes);
  EXPECT_EQ(loaded->limits.open_files, defaults.limits.open_files);
  EXPECT_EQ(loaded->network, NetworkMode::kNone);
  EXPECT_TRUE(loaded->allow_degraded.empty());
}

TEST(Policy, StrictPolicyLoads) {
  auto loaded = LoadPolicyFile(std::string(SBX_POLICY_DIR) + "/strict.json");
  ASSERT_TRUE(loaded) << loaded.error().ToString();
  EXPECT_EQ(loaded->limits.memory_bytes, 256ull << 20);
  EXPECT_DOUBLE_EQ(loaded->limits.cpus, 0.5);
}

TEST(Policy, ReadsEveryField) {
  auto policy = ParsePolicyJson(R"({"network": "host", "limits": {"memory": 104857600,
      "pids": 32, "cpus": 0.5, "timeout": 2.5, "output": "4K", "file_size": "1M",
      "open_files": 64, "rootfs_size": "16M", "tmp_size": "8M"},
      "env": {"FOO": "bar"}, "allow_degraded": ["cgroup"]})");
  ASSERT_TRUE(policy) << policy.error().ToString();
  EXPECT_EQ(policy->network, NetworkMode::kHost);
  EXPECT_EQ(policy->limits.memory_bytes, 100u << 20);
  EXPECT_EQ(policy->limits.pids, 32u);
  EXPECT_DOUBLE_EQ(policy->limits.timeout_seconds, 2.5);
  EXPECT_EQ(policy->limits.output_bytes, 4096u);
  EXPECT_EQ(policy->limits.tmp_size_bytes, 8u << 20);
  EXPECT_EQ(policy->env.at("FOO"), "bar");
  EXPECT_TRUE(policy->AllowsDegraded(Layer::kCgroup));
  EXPECT_FALSE(policy->AllowsDegraded(Layer::kSeccomp));
}

TEST(Policy, IsolationDefaultsToNamespacesAndOuterIsExplicit) {
  auto defaults = ParsePolicyJson("{}");
  ASSERT_TRUE(defaults);
  EXPECT_EQ(defaults->isolation, Isolation::kNamespaces);
  auto outer = ParsePolicyJson(R"({"isolation": "outer", "network": "host"})");
  ASSERT_TRUE(outer) << outer.error().ToString();
  EXPECT_EQ(outer->isolation, Isolation::kOuter);
  auto named = ParsePolicyJson(R"({"isolation": "namespaces"})");
  ASSERT_TRUE(named);
  EXPECT_EQ(named->isolation, Isolation::kNamespaces);
  Policy allowlist = *outer;
  allowlist.network = NetworkMode::kAllowlist;
  auto refused = ValidatePolicy(allowlist);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("network \"allowlist\" cannot be enforced"), std::string::npos)
      << refused.error().message;
}

TEST(Policy, ImageIsAVariantNameNeverADirectory) {
  auto defaults = ParsePolicyJson("{}");
  ASSERT_TRUE(defaults);
  EXPECT_EQ(defaults->image, "");
  auto named = ParsePolicyJson(R"({"image": "sklearn"})");
  ASSERT_TRUE(named) << named.error().ToString();
  EXPECT_EQ(named->image, "sklearn");
  for (const auto& [text, expect] : std::vector<std::pair<std::string, std::string>>{
           {R"({"image": "./rootfs"})", "image: image name './rootfs': use 1-32 of a-z"},
           {R"({"image": "/var/cache/sbx/images/default"})", "image: image name '/var/cache"},
           {R"({"image": "Sklearn"})", "image: image name 'Sklearn'"},
           {R"({"image": "cafe"})", "not all hex digits"},
           {R"({"image": ""})", "image: image name ''"},
           {R"({"image": 3})", "image"},
           {R"({"image": "sklearn", "isolation": "outer", "network": "host"})",
            "image: isolation \"outer\" runs the container's own root file system"}}) {
    auto refused = ParsePolicyJson(text);
    ASSERT_FALSE(refused) << text;
    EXPECT_NE(refused.error().message.find(expect), std::string::npos) << text << "\n" << refused.error().message;
  }
}

// Each bad fixture is rejected, and the message names what is wrong.
struct BadFixture {
  const char* file;
  const char* must_mention;
};

class BadPolicy : public ::testing::TestWithParam<BadFixture> {};

TEST_P(BadPolicy, IsRejectedWithTheFieldNamed) {
  const BadFixture& fixture = GetParam();
  auto policy = LoadPolicyFile(std::string(SBX_TEST_DATA_DIR) + "/policies/" + fixture.file);
  ASSERT_FALSE(policy) << fixture.file << " was accepted";
  EXPECT_EQ(policy.error().code, ErrorCode::kInvalidInput);
  EXPECT_NE(policy.error().message.find(fixture.must_mention), std::string::npos)
      << fixture.file << ": " << policy.error().message;
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, BadPolicy,
    ::testing::Values(
        BadFixture{"unknown_key.json", "limits.memroy: unknown key"},
        BadFixture{"unknown_top_key.json", "netwrok: unknown key"},
        BadFixture{"duplicate_key.json", "timeout: duplicate key"},
        BadFixture{"truncated.json", "not valid JSON"},
        BadFixture{"trailing_garbage.json", "not valid JSON"},
        BadFixture{"comment.json", "not valid JSON"},
        BadFixture{"bom.json", "byte-order mark"},
        BadFixture{"invalid_utf8.json", "not valid JSON"},
        BadFixture{"nul_in_string.json", "env.A"},
        BadFixture{"memory_bool.json", "limits.memory: expected a size"},
        BadFixture{"memory_null.json", "limits.memory: expected a size"},
        BadFixture{"pids_fraction.json", "limits.pids: expected a non-negative whole number"},
        BadFixture{"pids_negative.json", "limits.pids"},
        BadFixture{"pids_string.json", "limits.pids"},
        BadFixture{"pids_2_64.json", "limits.pids"},
        BadFixture{"memory_1e309.json", "not valid JSON"},
        BadFixture{"timeout_nan.json", "not valid JSON"},
        BadFixture{"timeout_zero.json", "limits.timeout"},
        BadFixture{"timeout_ten_years.json", "limits.timeout"},
        BadFixture{"memory_one_byte.json", "limits.memory"},
        BadFixture{"memory_above_ram.json", "limits.memory"},
        BadFixture{"pids_one.json", "limits.pids"},
        BadFixture{"nofile_three.json", "limits.open_files"},
        BadFixture{"output_zero.json", "limits.output"},
        BadFixture{"cpus_1000.json", "limits.cpus"},
        BadFixture{"memory_hex.json", "limits.memory"},
        BadFixture{"env_key_equals.json", "not a valid variable name"},
        BadFixture{"env_key_empty.json", "not a valid variable name"},
        BadFixture{"network_unknown.json", "network: expected \"none\", \"host\" or an object"},
        BadFixture{"degrade_userns.json", "allow_degraded[0]"},
        BadFixture{"isolation_unknown.json", "isolation: \"gvisor\" is not an isolation mode"},
        BadFixture{"isolation_number.json", "isolation: expected \"namespaces\" or \"outer\""},
        BadFixture{"isolation_outer_no_network.json", "set \"network\": \"host\""},
        BadFixture{"top_array.json", "(top level)"},
        BadFixture{"empty.json", "not valid JSON"},
        BadFixture{"deep_nesting.json", "nesting deeper than 16"}));

TEST(Policy, RejectsOversizedDocument) {
  std::string big = "{\"description\": \"" + std::string(2 << 20, 'x') + "\"}";
  auto policy = ParsePolicyJson(big);
  ASSERT_FALSE(policy);
  EXPECT_NE(policy.error().message.find("at most 1 MiB"), std::string::npos);
}

TEST(Policy, MissingFileNamesThePath) {
  auto policy = LoadPolicyFile("/nonexistent/policy.json");
  ASSERT_FALSE(policy);
  EXPECT_NE(policy.error().message.find("/nonexistent/policy.json"), std::string::npos);
}

// A fifo (or a directory) as the policy is refused before it is opened: opening a fifo for
// reading would wait for a writer that may never come.
TEST(Policy, NonRegularFileIsRefusedWithoutOpeningIt) {
  char dir[] = "/tmp/sbx-policy-test-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string fifo = std::string(dir) + "/policy.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto from_fifo = LoadPolicyFile(fifo);
  ASSERT_FALSE(from_fifo);
  EXPECT_NE(from_fifo.error().message.find("not a regular file"), std::string::npos)
      << from_fifo.error().message;
  auto from_dir = LoadPolicyFile(dir);
  ASSERT_FALSE(from_dir);
  EXPECT_NE(from_dir.error().message.find("not a regular file"), std::string::npos)
      << from_dir.error().message;
  ::unlink(fifo.c_str());
  ::rmdir(dir);
}

TEST(Policy, EnvEntryValidation) {
  EXPECT_TRUE(ValidateEnvEntry("env", "PYTHONPATH", "/workspace/lib"));
  EXPECT_FALSE(ValidateEnvEntry("env", "1ABC", "x"));
  EXPECT_FALSE(ValidateEnvEntry("env", "A", std::string(40000, 'x')));
  EXPECT_FALSE(ValidateEnvEntry("env", "A", std::string("a\0b", 3)));
}

// A run is given a ValidPolicy, which only ValidPolicy::Check makes: no Policy converts to one.
static_assert(std::is_same_v<decltype(RunSpec::policy), ValidPolicy>);
static_assert(!std::is_constructible_v<ValidPolicy, Policy>);
static_assert(!std::is_convertible_v<Policy, ValidPolicy>);

// RunSpec's default policy (a default ValidPolicy) is the default Policy, which passes the check.
TEST(ValidPolicy, TheDefaultPolicyIsValid) {
  EXPECT_TRUE(ValidatePolicy(Policy{}));
  auto checked = ValidPolicy::Check(Policy{});
  ASSERT_TRUE(checked) << checked.error().ToString();
  EXPECT_EQ(checked->get().limits.memory_bytes, ValidPolicy().get().limits.memory_bytes);
  EXPECT_EQ(RunSpec().policy->limits.pids, Policy().limits.pids);
}

// An invalid policy is refused where it would become a ValidPolicy, with the field named, so it
// never reaches the launcher (which no longer checks it).
TEST(ValidPolicy, AnInvalidPolicyIsRefusedWithItsFieldNamed) {
  Policy few_pids;
  few_pids.limits.pids = 1;
  auto refused = ValidPolicy::Check(few_pids);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::kInvalidInput);
  EXPECT_NE(refused.error().message.find("limits.pids"), std::string::npos) << refused.error().ToString();
  Policy outer;
  outer.isolation = Isolation::kOuter;  // with network "none", which it cannot enforce
  auto outer_refused = ValidPolicy::Check(outer);
  ASSERT_FALSE(outer_refused);
  EXPECT_NE(outer_refused.error().message.find("isolation"), std::string::npos) << outer_refused.error().ToString();
}

}  // namespace
}  // namespace sbx
