// DecideRunLayers: the one place a lost layer is refused or accepted, by the policy's
// allow_degraded. The cgroup layer is taken away with CgroupOptions (as --cgroup none does),
// so nothing is created on the host.
#include "sandbox/launch/run_layers.h"

#include <gtest/gtest.h>

namespace sbx {
namespace {

CgroupOptions NoCgroups() {
  CgroupOptions options;
  options.try_v2 = false;
  options.try_v1 = false;
  return options;
}

TEST(RunLayers, ALostCgroupIsRefusedUnlessThePolicyAcceptsIt) {
  auto refused = DecideRunLayers(NewRunId(), Policy{}, NoCgroups());
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("cgroup (required for memory, pids and cpu limits; "
                                         "allow_degraded may list \"cgroup\""),
            std::string::npos)
      << refused.error().ToString();
}

TEST(RunLayers, AnAcceptedLossIsNamedAndRlimitsStandIn) {
  Policy policy;
  policy.allow_degraded = {Layer::kCgroup};
  auto layers = DecideRunLayers(NewRunId(), policy, NoCgroups());
  ASSERT_TRUE(layers) << layers.error().ToString();
  EXPECT_FALSE(layers->cgroup.has_value());
  EXPECT_EQ(layers->enforcement().version, CgroupVersion::kNone);
  EXPECT_EQ(layers->degraded, std::vector<std::string>{"cgroup"});
  // The filter compiles on this host (x86_64), so only the cgroup was lost.
  EXPECT_NE(layers->seccomp, nullptr);
}

TEST(RunLayers, TheFilterIsLeftOutOnlyWhenNotAskedFor) {
  Policy policy;
  policy.allow_degraded = {Layer::kCgroup};
  auto layers = DecideRunLayers(NewRunId(), policy, NoCgroups(), {.seccomp = false});
  ASSERT_TRUE(layers) << layers.error().ToString();
  EXPECT_EQ(layers->seccomp, nullptr);
  EXPECT_EQ(layers->degraded, std::vector<std::string>{"cgroup"});  // not listed: not asked for
}

}  // namespace
}  // namespace sbx
