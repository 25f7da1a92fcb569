// The small internet itself (tests/net): it comes up, answers, and leaves nothing behind.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "tests/integration/network_fixture.h"
#include "tests/integration/sandbox_fixture.h"
#include "tests/net/small_internet.h"

namespace sbx::testing {
namespace {

bool Exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

std::string NetnsList() {
  auto run = nettest::RunBounded({nettest::kIp, "netns", "list"}, 10);
  return run ? run->out : "";
}

TEST(SmallInternetHarness, UpAndDownRepeatedlyLeavesNothing) {
  if (auto why = nettest::TopologyUnavailableReason(); !why.empty()) GTEST_SKIP() << why;
  const bool etc_netns_before = Exists("/etc/netns");
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE(round);
    auto net = nettest::SmallInternet::Start();
    ASSERT_TRUE(net) << net.error().ToString();
    const std::string t = (*net)->topology().t(), u = (*net)->topology().u();
    const std::string state = (*net)->state_dir();
    EXPECT_NE(NetnsList().find(t), std::string::npos);
    EXPECT_TRUE(Exists("/etc/netns/" + t + "/hosts"));
    EXPECT_EQ(HostProcessesWith(state).size(), 2u) << "the internet and the canary";
    auto probe = (*net)->RunControlProbe({"urlopen", "https://pypi.test/"});
    ASSERT_TRUE(probe);
    EXPECT_NE(probe->out.find("\"body\": \"pypi.test\""), std::string::npos)
        << probe->out << probe->err;

    auto stopped = (*net)->Stop();
    EXPECT_TRUE(stopped) << stopped.error().ToString();
    const std::string list = NetnsList();
    EXPECT_EQ(list.find(t), std::string::npos) << list;
    EXPECT_EQ(list.find(u), std::string::npos) << list;
    EXPECT_FALSE(Exists("/etc/netns/" + t));
    EXPECT_FALSE(Exists(state));
    EXPECT_TRUE(HostProcessesWith(state).empty());
  }
  EXPECT_EQ(Exists("/etc/netns"), etc_netns_before);
}

TEST(SmallInternetHarness, WhatADeadTestLeftIsReapedAtTheNextStart) {
  if (auto why = nettest::TopologyUnavailableReason(); !why.empty()) GTEST_SKIP() << why;
  pid_t dead = ::fork();
  if (dead == 0) ::_exit(0);
  ASSERT_GT(dead, 0);
  ::waitpid(dead, nullptr, 0);
  const std::string stale = "sbxt-" + std::to_string(dead) + "-dead00";
  auto added = nettest::RunBounded({nettest::kIp, "netns", "add", stale}, 10);
  ASSERT_TRUE(added && added->exit_code == 0) << (added ? added->err : added.error().ToString());
  ASSERT_EQ(::mkdir("/etc/netns", 0755) == 0 || errno == EEXIST, true);
  ASSERT_EQ(::mkdir(("/etc/netns/" + stale).c_str(), 0755), 0);
  std::ofstream("/etc/netns/" + stale + "/hosts") << "127.0.0.1 localhost\n";
  const std::string state = "/var/tmp/sbx-net-" + std::to_string(dead) + "-dead00";
  ASSERT_EQ(::mkdir(state.c_str(), 0700), 0);
  std::ofstream(state + "/events.jsonl") << "{}\n";

  nettest::ReapStaleSmallInternets();
  EXPECT_EQ(NetnsList().find(stale), std::string::npos);
  EXPECT_FALSE(Exists("/etc/netns/" + stale));
  EXPECT_FALSE(Exists(state));
}

}  // namespace
}  // namespace sbx::testing
