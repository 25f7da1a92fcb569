// The NetworkAllowlist fixture: the small internet per suite, controls and sandboxed probes.
#include "tests/integration/network_fixture.h"

#include <sys/stat.h>

#include <cmath>
#include <cstdlib>
#include <fstream>

#include "tests/integration/sandbox_fixture.h"
#include "tests/net/process.h"

namespace sbx::testing {
namespace {

constexpr double kControlSeconds = 60;
constexpr double kSandboxSeconds = 120;  // above the policy's own timeout

nlohmann::json LastJsonLine(const std::string& text) {
  size_t end = text.find_last_not_of('\n');
  if (end == std::string::npos) return nullptr;
  size_t start = text.rfind('\n', end);
  start = start == std::string::npos ? 0 : start + 1;
  return nlohmann::json::parse(text.substr(start, end - start + 1), nullptr, false);
}

void Copy(const std::string& from, const std::string& to) {
  std::ifstream in(from, std::ios::binary);
  ASSERT_TRUE(in) << from;
  std::ofstream out(to, std::ios::binary | std::ios::trunc);
  out << in.rdbuf();
  out.close();
  ASSERT_TRUE(out) << to;
  ::chmod(to.c_str(), 0644);
}

}  // namespace

std::unique_ptr<nettest::SmallInternet> NetworkAllowlist::net_;
std::string NetworkAllowlist::start_error_;

void NetworkAllowlist::SetUpTestSuite() {
  if (!nettest::TopologyUnavailableReason().empty()) return;  // SetUp skips or fails each test
  auto net = nettest::SmallInternet::Start();
  if (!net) {
    start_error_ = net.error().ToString();
    return;
  }
  net_ = std::move(*net);
}

void NetworkAllowlist::TearDownTestSuite() {
  if (!net_) return;
  auto stopped = net_->Stop();
  EXPECT_TRUE(stopped) << stopped.error().ToString();
  net_.reset();
}

void NetworkAllowlist::SetUp() {
  SBX_SKIP_WITHOUT_TOPOLOGY();
  ASSERT_TRUE(net_) << "the small internet did not start: " << start_error_;
}

bool NetworkAllowlist::ControlsOnly() {
  const char* value = std::getenv("SBX_NET_CONTROLS_ONLY");
  return value != nullptr && std::string(value) == "1";
}

ProbeRun NetworkAllowlist::Control(const std::vector<std::string>& args) {
  ProbeRun run;
  size_t mark = net_->EventMark();
  auto command = net_->RunControlProbe(args, kControlSeconds);
  run.events = net_->EventsSince(mark);
  if (!command) {
    ADD_FAILURE() << "control probe did not start: " << command.error().ToString();
    return run;
  }
  run.probe = LastJsonLine(command->out);
  run.diagnostics = "control exit " + std::to_string(command->exit_code) +
                    (command->timed_out ? " (timed out)" : "") + "\nstdout: " + command->out +
                    "\nstderr: " + command->err;
  EXPECT_TRUE(run.probe.is_object()) << run.diagnostics;
  return run;
}

SandboxedRun NetworkAllowlist::Sandboxed(const nlohmann::json& network,
                                         const std::vector<std::string>& args) {
  SandboxedRun run;
  run.workspace = std::make_shared<ScratchDir>();
  const std::string workspace = run.workspace->path();
  run.log_dir = std::make_shared<ScratchDir>();
  ScratchDir config;
  Copy(net_->probes_script(), workspace + "/probes.py");
  Copy(net_->ca_file(), workspace + "/ca.pem");
  std::string policy_file = config.path() + "/policy.json";
  {
    // `ip netns exec` mounts a fresh /sys, which hides the cgroup mounts; the network path
    // does not depend on cgroups, so the run falls back to rlimits for them.
    nlohmann::json policy = {{"description", "network allowlist integration test"},
                             {"network", network},
                             {"limits", {{"timeout", 60}}},
                             {"allow_degraded", nlohmann::json::array({"cgroup"})}};
    std::ofstream(policy_file) << policy.dump(2);
  }
  // clang-format off
  std::vector<std::string> argv = {SBX_BINARY, "run", "--json", "--image", TestImage(),
                                   "--policy", policy_file, "--workspace", workspace,
                                   "--network-log", run.log_dir->path() + "/network.jsonl",
                                   "--", "/usr/bin/python3", "/workspace/probes.py"};
  // clang-format on
  argv.insert(argv.end(), args.begin(), args.end());
  size_t mark = net_->EventMark();
  auto command = nettest::RunBounded(net_->topology().InT(argv), kSandboxSeconds);
  run.events = net_->EventsSince(mark);
  if (!command) {
    ADD_FAILURE() << "sbx did not start: " << command.error().ToString();
    return run;
  }
  run.exit_code = command->exit_code;
  run.diagnostics = "sbx exit " + std::to_string(command->exit_code) +
                    (command->timed_out ? " (timed out)" : "") + "\nstdout: " + command->out +
                    "\nstderr: " + command->err;
  run.result = nlohmann::json::parse(command->out, nullptr, false);
  if (!run.result.is_object()) {
    ADD_FAILURE() << "sbx printed no JSON result\n" << run.diagnostics;
    run.result = nullptr;
    return run;
  }
  if (Str(run.result, "status") != "exited") {
    ADD_FAILURE() << "the sandboxed probe did not run to its end\n" << run.diagnostics;
    return run;
  }
  run.probe = LastJsonLine(Str(run.result, "stdout"));
  run.ran = run.probe.is_object();
  EXPECT_TRUE(run.ran) << run.diagnostics;
  return run;
}

std::string Str(const nlohmann::json& object, const std::string& key) {
  if (!object.is_object()) return "";
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

long Int(const nlohmann::json& object, const std::string& key) {
  if (!object.is_object()) return -1;
  auto it = object.find(key);
  return it != object.end() && it->is_number_integer() ? it->get<long>() : -1;
}

double Number(const nlohmann::json& object, const std::string& key) {
  if (!object.is_object()) return std::nan("");
  auto it = object.find(key);
  return it != object.end() && it->is_number() ? it->get<double>() : std::nan("");
}

nlohmann::json Allowlist(const std::vector<std::string>& allow) {
  return {{"mode", "allowlist"}, {"allow", allow}};
}

}  // namespace sbx::testing
