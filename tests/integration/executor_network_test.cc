// The executor under a network allowlist: each execution's result says what the policy
// blocked during it (read from the session's audit log), so the agent can tell the model.
// The traffic here never leaves the sandbox: the names are refused by the stub DNS.
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "network_audit.h"
#include "sandbox_fixture.h"
#include "src/agent/agent_tools.h"
#include "src/executor/executors.h"
#include "tests/integration/test_policy.h"

namespace sbx::executor {
namespace {

constexpr const char* kLookUp = R"(
import socket
try:
    socket.getaddrinfo(NAME, 443)
    print("resolved")
except socket.gaierror as error:
    print("gaierror", error.errno)
)";

// Plain HTTP to an allowed name that the host cannot resolve: netd reads the Host, fails to
// resolve it and answers for the upstream.
constexpr char kFetchUnresolvable[] = R"(
import socket
try:
    s = socket.create_connection(("nonexistent.sbx.invalid", 80), timeout=20)
    s.sendall(b"GET / HTTP/1.1\r\nHost: nonexistent.sbx.invalid\r\n\r\n")
    print(s.recv(4096).split(b"\r\n")[0].decode() or "no answer")
except OSError:
    print("no answer")
)";

std::string LookUp(const std::string& name) {
  std::string code = kLookUp;
  return code.replace(code.find("NAME"), 4, "'" + name + "'");
}

ExecutorOptions AllowlistOptions(const std::string& log_dir) {
  ExecutorOptions options;
  options.image_dir = testing::TestImage();
  Policy policy;
  policy.network = NetworkMode::kAllowlist;
  auto rule = ParseNetworkRule("allowed.example", "network.allow[0]");
  EXPECT_TRUE(rule) << rule.error().ToString();
  if (rule) policy.network_allowlist.allow.push_back(*rule);
  // Allowed, but the host cannot resolve it: a failure, not a block.
  auto unresolvable = ParseNetworkRule("nonexistent.sbx.invalid:80", "network.allow[1]");
  EXPECT_TRUE(unresolvable) << unresolvable.error().ToString();
  if (unresolvable) policy.network_allowlist.allow.push_back(*unresolvable);
  options.policy = testing::Checked(std::move(policy));
  options.network_log_dir = log_dir;
  return options;
}

TEST(ExecutorNetwork, EachResultListsWhatThePolicyBlockedDuringIt) {
  testing::ScratchDir logs;
  auto executor = SessionExecutor::Create(AllowlistOptions(logs.path()));
  ASSERT_TRUE(executor) << executor.error().ToString();

  auto blocked = (*executor)->Execute({{"python", LookUp("blocked.example")}});
  ASSERT_TRUE(blocked) << blocked.error().ToString();
  EXPECT_EQ(blocked->output, "gaierror -2\n");  // EAI_NONAME: the stub DNS said NXDOMAIN
  ASSERT_EQ(blocked->network_blocked.size(), 1u);
  EXPECT_EQ(blocked->network_blocked[0], "blocked.example (no_rule)");
  EXPECT_EQ(blocked->network_allowed, 0u);
  EXPECT_GE(blocked->network_denied, 1u);  // A, and AAAA when the resolver asks for it
  const std::string log_path = logs.path() + "/network-1.jsonl";
  EXPECT_EQ(blocked->network_log_path, log_path);
  EXPECT_EQ(blocked->network_mode, "allowlist");
  // The live session's netd is still writing the log: no digest yet.
  EXPECT_EQ(blocked->network_log_sha256, "");
  EXPECT_NE(agent::DescribeResult(*blocked, 4096).find("[blocked by the sandbox's network policy, not an outage] "
                                                       "blocked.example (no_rule)"),
            std::string::npos);

  // The next execution reports only its own: an allowed name gets a (fake) answer.
  auto allowed = (*executor)->Execute({{"python", LookUp("allowed.example")}});
  ASSERT_TRUE(allowed) << allowed.error().ToString();
  EXPECT_EQ(allowed->output, "resolved\n");
  EXPECT_TRUE(allowed->network_blocked.empty());
  EXPECT_TRUE(allowed->network_failed.empty());
  EXPECT_GE(allowed->network_allowed, 1u);
  EXPECT_EQ(allowed->network_denied, 0u);

  // An allowed name that fails upstream is reported as a failure, never as a policy block:
  // a model told "blocked" would stop retrying what may be an outage.
  auto failed = (*executor)->Execute({{"python", kFetchUnresolvable}});
  ASSERT_TRUE(failed) << failed.error().ToString();
  EXPECT_EQ(failed->output, "HTTP/1.1 502 Bad Gateway\n");  // netd answers for the upstream
  EXPECT_TRUE(failed->network_blocked.empty());
  ASSERT_EQ(failed->network_failed.size(), 1u);
  EXPECT_EQ(failed->network_failed[0], "nonexistent.sbx.invalid (resolve_failed)");
  const std::string described = agent::DescribeResult(*failed, 4096);
  EXPECT_EQ(described.find("blocked by the sandbox's network policy"), std::string::npos) << described;
  EXPECT_NE(described.find("[allowed by the network policy but failed: not resolvable, unreachable or "
                           "unverified] nonexistent.sbx.invalid (resolve_failed)"),
            std::string::npos)
      << described;
  EXPECT_TRUE((*executor)->EndedNetworks().empty());
  (*executor)->Close();

  // Once closed, the session's summary names the finished log and the digest of its bytes.
  ASSERT_EQ((*executor)->EndedNetworks().size(), 1u);
  const NetworkOutcome& ended = (*executor)->EndedNetworks()[0];
  EXPECT_EQ(ended.log_path, log_path);
  EXPECT_EQ(ended.log_sha256, testing::Sha256Of(log_path));
  EXPECT_EQ(ended.log_sha256.size(), 64u);
  EXPECT_TRUE(ended.tcp_coverage == "all" || ended.tcp_coverage == "listed+audit") << ended.tcp_coverage;
  // What the redirect left to conntrack; "no_redirect" exactly when there was none.
  EXPECT_EQ(ended.conntrack == "no_redirect", ended.tcp_coverage != "all") << ended.conntrack;
  EXPECT_TRUE(ended.conntrack == "no_redirect" || ended.conntrack == "tcp_short_lived" ||
              ended.conntrack == "tcp_default_timeouts" || ended.conntrack == "all_flows")
      << ended.conntrack;
  EXPECT_GE(ended.denied, 1u);
}

// A fresh sandbox per call: each result is final, so it carries the log's coverage and digest,
// and each call writes a log of its own.
TEST(ExecutorNetwork, SandboxExecutorResultsCarryTheFinishedLogsDigest) {
  testing::ScratchDir logs;
  auto executor = SandboxExecutor::Create(AllowlistOptions(logs.path()));
  ASSERT_TRUE(executor) << executor.error().ToString();
  std::vector<std::string> digests;
  for (const char* name : {"blocked.example", "other-blocked.example"}) {
    auto result = (*executor)->Execute({{"python", LookUp(name)}});
    ASSERT_TRUE(result) << result.error().ToString();
    EXPECT_EQ(result->output, "gaierror -2\n");
    ASSERT_EQ(result->network_blocked.size(), 1u);
    EXPECT_EQ(result->network_blocked[0], std::string(name) + " (no_rule)");
    EXPECT_EQ(result->network_mode, "allowlist");
    EXPECT_TRUE(result->network_coverage == "all" || result->network_coverage == "listed+audit")
        << result->network_coverage;
    EXPECT_EQ(result->network_log_sha256.size(), 64u);
    EXPECT_EQ(result->network_log_sha256, testing::Sha256Of(result->network_log_path));
    digests.push_back(result->network_log_sha256);
  }
  EXPECT_NE(digests[0], digests[1]);  // two runs, two logs
}

// Without an allowlist there is no log, and the mode says what the code had.
TEST(ExecutorNetwork, ResultsNameTheModeWithoutALog) {
  ExecutorOptions options;
  options.image_dir = testing::TestImage();
  auto executor = SandboxExecutor::Create(std::move(options));
  ASSERT_TRUE(executor) << executor.error().ToString();
  auto result = (*executor)->Execute({{"python", "print(1)"}});
  ASSERT_TRUE(result) << result.error().ToString();
  EXPECT_EQ(result->network_mode, "none");
  EXPECT_EQ(result->network_log_path, "");
  EXPECT_EQ(result->network_log_sha256, "");
}

}  // namespace
}  // namespace sbx::executor
