// The executor under a network allowlist: each execution's result says what the policy
// blocked during it (read from the session's audit log), so the agent can tell the model.
// The traffic here never leaves the sandbox: the names are refused by the stub DNS.
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "sandbox_fixture.h"
#include "src/agent/agent_tools.h"
#include "src/executor/executors.h"

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

TEST(ExecutorNetwork, EachResultListsWhatThePolicyBlockedDuringIt) {
  testing::ScratchDir logs;
  ExecutorOptions options;
  options.image_dir = testing::TestImage();
  options.policy.network = NetworkMode::kAllowlist;
  auto rule = ParseNetworkRule("allowed.example", "network.allow[0]");
  ASSERT_TRUE(rule) << rule.error().ToString();
  options.policy.network_allowlist.allow.push_back(*rule);
  // Allowed, but the host cannot resolve it: a failure, not a block.
  auto unresolvable = ParseNetworkRule("nonexistent.sbx.invalid:80", "network.allow[1]");
  ASSERT_TRUE(unresolvable) << unresolvable.error().ToString();
  options.policy.network_allowlist.allow.push_back(*unresolvable);
  options.network_log_dir = logs.path();
  auto executor = SessionExecutor::Create(std::move(options));
  ASSERT_TRUE(executor) << executor.error().ToString();

  auto blocked = (*executor)->Execute({{"python", LookUp("blocked.example")}});
  ASSERT_TRUE(blocked) << blocked.error().ToString();
  EXPECT_EQ(blocked->output, "gaierror -2\n");  // EAI_NONAME: the stub DNS said NXDOMAIN
  ASSERT_EQ(blocked->network_blocked.size(), 1u);
  EXPECT_EQ(blocked->network_blocked[0], "blocked.example (no_rule)");
  EXPECT_EQ(blocked->network_allowed, 0u);
  EXPECT_GE(blocked->network_denied, 1u);  // A, and AAAA when the resolver asks for it
  EXPECT_EQ(blocked->network_log_path, logs.path() + "/network-1.jsonl");
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
  (*executor)->Close();
}

}  // namespace
}  // namespace sbx::executor
