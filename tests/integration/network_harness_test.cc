// The small internet itself (tests/net): it comes up, answers, and leaves nothing behind.
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

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
  SBX_SKIP_WITHOUT_TOPOLOGY();
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
  // Other test processes may hold entries there (and /etc/netns itself): only ours must be gone.
  const std::string ours = "sbxt-" + std::to_string(::getpid()) + "-";
  if (DIR* dir = ::opendir("/etc/netns")) {
    while (dirent* entry = ::readdir(dir)) EXPECT_NE(std::string(entry->d_name).rfind(ours, 0), 0u);
    ::closedir(dir);
  }
}

nlohmann::json LastLine(const std::string& text) {
  size_t end = text.find_last_not_of('\n');
  size_t start = end == std::string::npos ? std::string::npos : text.rfind('\n', end);
  start = start == std::string::npos ? 0 : start + 1;
  return nlohmann::json::parse(text.substr(start), nullptr, /*allow_exceptions=*/false);
}

// The control of secret-injection tests: only a client told to trust the rogue CA accepts
// untrusted.test, so a proxy that verifies upstream against ca.pem must refuse it.
TEST(SmallInternetHarness, RogueCaHostVerifiesOnlyAgainstTheRogueCa) {
  SBX_SKIP_WITHOUT_TOPOLOGY();
  auto net = nettest::SmallInternet::Start();
  ASSERT_TRUE(net) << net.error().ToString();
  const std::string url = "https://" + std::string(nettest::kRogueCaHost) + "/";

  auto with_test_ca = (*net)->RunControlProbe({"urlopen", url, "--cafile", (*net)->ca_file()});
  ASSERT_TRUE(with_test_ca) << with_test_ca.error().ToString();
  auto refused = LastLine(with_test_ca->out);
  EXPECT_EQ(refused.value("error", ""), "SSLCertVerificationError") << with_test_ca->out;
  EXPECT_EQ(refused.value("ssl_reason", ""), "CERTIFICATE_VERIFY_FAILED") << with_test_ca->out;

  auto with_rogue_ca =
      (*net)->RunControlProbe({"urlopen", url, "--cafile", (*net)->rogue_ca_file()});
  ASSERT_TRUE(with_rogue_ca) << with_rogue_ca.error().ToString();
  auto accepted = LastLine(with_rogue_ca->out);
  EXPECT_EQ(accepted.value("status", 0), 200) << with_rogue_ca->out;
  EXPECT_EQ(accepted.value("body", ""), nettest::kRogueCaHost) << with_rogue_ca->out;

  // The rogue CA signs nothing else: pypi.test fails against it.
  auto other = (*net)->RunControlProbe(
      {"urlopen", "https://pypi.test/", "--cafile", (*net)->rogue_ca_file()});
  ASSERT_TRUE(other) << other.error().ToString();
  EXPECT_EQ(LastLine(other->out).value("ssl_reason", ""), "CERTIFICATE_VERIFY_FAILED")
      << other->out;
}

// /echo returns header names, never values; the request event keeps the values in U.
TEST(SmallInternetHarness, EchoListsHeaderNamesAndEventsRecordTheirSecretValues) {
  SBX_SKIP_WITHOUT_TOPOLOGY();
  auto net = nettest::SmallInternet::Start();
  ASSERT_TRUE(net) << net.error().ToString();
  const std::string secret = "sbx-test-secret-7f3a";
  size_t mark = (*net)->EventMark();
  auto with_headers = (*net)->RunControlProbe({"urlopen", "https://api.test/echo?q=1", "--header",
                                               "Authorization: Bearer " + secret, "--header",
                                               "X-Api-Key: key-" + secret, "--data", "{}"});
  ASSERT_TRUE(with_headers) << with_headers.error().ToString();
  auto without = (*net)->RunControlProbe({"urlopen", "http://api.test/echo"});
  ASSERT_TRUE(without) << without.error().ToString();
  auto events = (*net)->EventsSince(mark);

  auto probe = LastLine(with_headers->out);
  EXPECT_EQ(probe.value("status", 0), 200) << with_headers->out;
  EXPECT_EQ(probe.dump().find(secret), std::string::npos) << "a value came back: " << probe;
  auto echo = nlohmann::json::parse(probe.value("body", ""), nullptr, false);
  ASSERT_TRUE(echo.is_object()) << with_headers->out;
  EXPECT_EQ(echo["method"], "POST");
  EXPECT_EQ(echo["path"], "/echo?q=1");
  std::vector<std::string> names;
  for (const auto& name : echo["headers"]) {
    std::string lower = name.get<std::string>();
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    names.push_back(lower);
  }
  EXPECT_TRUE(std::is_sorted(echo["headers"].begin(), echo["headers"].end())) << echo;
  for (const char* want : {"authorization", "x-api-key", "host", "content-length"})
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want << " in " << echo;

  auto plain = nlohmann::json::parse(LastLine(without->out).value("body", ""), nullptr, false);
  ASSERT_TRUE(plain.is_object()) << without->out;
  EXPECT_EQ(plain["method"], "GET");

  std::vector<nlohmann::json> requests;
  for (const auto& event : events) {
    if (event.value("kind", "") == "request" && event.value("server", "") == "api.test")
      requests.push_back(event);
  }
  ASSERT_EQ(requests.size(), 2u) << nlohmann::json(events);
  const auto& https = requests[0].value("port", 0) == 443 ? requests[0] : requests[1];
  const auto& http = requests[0].value("port", 0) == 443 ? requests[1] : requests[0];
  EXPECT_EQ(https["authorization"], "Bearer " + secret) << https;
  EXPECT_EQ(https["x_api_key"], "key-" + secret) << https;
  EXPECT_EQ(https["method"], "POST") << https;
  EXPECT_TRUE(http.contains("authorization") && http["authorization"].is_null()) << http;
  EXPECT_TRUE(http.contains("x_api_key") && http["x_api_key"].is_null()) << http;
}

TEST(SmallInternetHarness, WhatADeadTestLeftIsReapedAtTheNextStart) {
  SBX_SKIP_WITHOUT_TOPOLOGY();
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
