// The NetworkAllowlist suite's fixture: one small internet (tests/net) per suite, sbx run
// inside its netns T, and every probe run twice: unsandboxed in T (the control, which must
// reach what the sandbox must not) and in the sandbox under an allowlist policy.
//
// SBX_NET_CONTROLS_ONLY=1 runs the controls and skips each test's sandboxed half: a check of
// the harness on a build whose sbx does not enforce allowlists yet.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/integration/sandbox_fixture.h"
#include "tests/net/small_internet.h"

namespace sbx::testing {

// One probes.py run: its JSON line and what the servers of the small internet logged meanwhile.
struct ProbeRun {
  nlohmann::json probe;                // the probe's last stdout line, parsed (null if none)
  std::vector<nlohmann::json> events;  // server events during the run
  std::string diagnostics;             // the raw output, for failure messages
};

// A sandboxed run adds the `sbx run --json` result.
// `ran` is false (and a failure was added) when sbx refused the policy, the run did not exit
// normally, or the probe printed nothing: tests ASSERT it before looking further.
struct SandboxedRun : ProbeRun {
  bool ran = false;
  int exit_code = -1;
  nlohmann::json result;  // the whole --json object (null if sbx printed none)
  std::shared_ptr<ScratchDir> workspace;
  // Holds the run's audit log (--network-log) until the run is dropped.
  std::shared_ptr<ScratchDir> log_dir;
};

class NetworkAllowlist : public ::testing::Test {
 public:
  static void SetUpTestSuite();
  static void TearDownTestSuite();

 protected:
  void SetUp() override;
  static nettest::SmallInternet& net() { return *net_; }
  static bool ControlsOnly();

  // probes.py <args> unsandboxed in T with the host python3.
  ProbeRun Control(const std::vector<std::string>& args);
  // probes.py <args> as /workspace/probes.py in a sandbox started in T by
  // `sbx run --json --policy <file with "network": network> --workspace <fresh dir>`.
  SandboxedRun Sandboxed(const nlohmann::json& network, const std::vector<std::string>& args);

 private:
  static std::unique_ptr<nettest::SmallInternet> net_;
  static std::string start_error_;
};

// A field of a probe's output or a log record: "" / -1 when absent or of another type.
std::string Str(const nlohmann::json& object, const std::string& key);
long Int(const nlohmann::json& object, const std::string& key);
double Number(const nlohmann::json& object, const std::string& key);  // NaN when absent

// {"mode":"allowlist","allow":[...]}; tests add "deny", "allow_private" or "limits".
nlohmann::json Allowlist(const std::vector<std::string>& allow);

// Skips the test, saying why, when the small internet cannot be built on this machine; fails
// it instead under SBX_REQUIRE_NET_TOPOLOGY=1, which tools/test.sh sets where it can be built.
// clang-format off
#define SBX_SKIP_WITHOUT_TOPOLOGY()                                                       \
  do {                                                                                    \
    const std::string why_ = ::sbx::nettest::TopologyUnavailableReason();                 \
    if (!why_.empty() && ::sbx::nettest::TopologyRequired())                              \
      FAIL() << "SBX_REQUIRE_NET_TOPOLOGY=1, but the small internet cannot be built: "    \
             << why_;                                                                     \
    if (!why_.empty()) GTEST_SKIP() << why_;                                              \
  } while (0)
// clang-format on

// Ends a test after its controls when SBX_NET_CONTROLS_ONLY=1.
// clang-format off
#define SBX_NET_SANDBOXED_HALF()                                                  \
  if (ControlsOnly())                                                             \
    GTEST_SKIP() << "SBX_NET_CONTROLS_ONLY=1: the sandboxed half is skipped"
// clang-format on

}  // namespace sbx::testing
