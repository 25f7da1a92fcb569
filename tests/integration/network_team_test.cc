// AG2's two-agent coder/executor on "fetch the top 10 Python packages from PyPI and save them
// to a CSV", through `sbx agent --team` in the small internet's T: the scripted coder's block
// fetches the download counts from the fake index (pypi.test, tests/net/pypi_index.py) over
// HTTPS and writes top_packages.csv. With an allowlist naming the index the CSV holds the ten
// most downloaded projects; with one that does not, the same block fails at name resolution,
// the executor's reply to the coder says so, and the index hears nothing. The control runs the
// same script unsandboxed in T, so a failure in the sandbox is the policy's doing.
// The same machinery installs a wheel with pip in one block and imports it in the next.
#include <unistd.h>

#include <fstream>
#include <string>

#include "tests/integration/network_audit.h"
#include "tests/integration/network_fixture.h"
#include "tests/integration/sandbox_fixture.h"
#include "tests/net/process.h"

namespace sbx::testing {
namespace {

using nettest::CountEvents;

const std::string kPypi(nettest::AddressOf("pypi.test"));
const char kTask[] =
    "Create a script that fetches the top 10 Python packages from PyPI and saves them to a CSV";
const char kListPath[] = "/top-pypi-packages-30-days.min.json";  // pypi_index.TOP_PACKAGES_PATH

// What the coder writes: urllib over HTTPS, trusting the test CA (ca.pem, an input).
const char kFetchScript[] = R"(import csv, json, ssl, urllib.request
URL = "https://pypi.test/top-pypi-packages-30-days.min.json"
context = ssl.create_default_context(cafile="ca.pem")
with urllib.request.urlopen(URL, context=context, timeout=30) as response:
    rows = json.load(response)["rows"]
top = sorted(rows, key=lambda row: row["download_count"], reverse=True)[:10]
with open("top_packages.csv", "w", newline="") as f:
    writer = csv.writer(f, lineterminator="\n")
    writer.writerow(["rank", "project", "download_count"])
    for rank, row in enumerate(top, 1):
        writer.writerow([rank, row["project"], row["download_count"]])
print("saved", len(top), "packages to top_packages.csv")
)";

// The ten most downloaded of pypi_index.TOP_PACKAGES (twelve, served out of order).
const char kExpectedCsv[] =
    "rank,project,download_count\n"
    "1,boto3,1310000000\n"
    "2,botocore,1060000000\n"
    "3,urllib3,1020000000\n"
    "4,typing-extensions,970000000\n"
    "5,s3transfer,920000000\n"
    "6,packaging,870000000\n"
    "7,setuptools,830000000\n"
    "8,idna,800000000\n"
    "9,certifi,780000000\n"
    "10,requests,760000000\n";

size_t ListRequests(const std::vector<nlohmann::json>& events) {
  return CountEvents(events, {.kind = "request", .server = "pypi.test", .path = kListPath});
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

struct TeamRun {
  nettest::CommandResult command;
  std::string out_dir;  // outputs, transcript.jsonl, network-1.jsonl
  std::vector<nlohmann::json> events;
  std::vector<nlohmann::json> messages;  // the transcript's "message" events, in order
  std::string diagnostics;
};

class NetworkTeam : public NetworkAllowlist {
 protected:
  // The script run unsandboxed in T with the host python3, in a directory holding ca.pem:
  // it must reach the index whatever the sandbox's policy.
  void ExpectControlFetches() {
    ScratchDir dir;
    std::ofstream(dir.path() + "/fetch.py") << kFetchScript;
    std::ofstream(dir.path() + "/ca.pem") << ReadAll(net().ca_file());
    size_t mark = net().EventMark();
    const std::string command = "cd '" + dir.path() + "' && " + nettest::kHostPython + " fetch.py";
    auto run = nettest::RunBounded(net().topology().InT({"/bin/sh", "-c", command}), 60);
    ASSERT_TRUE(run) << run.error().ToString();
    EXPECT_EQ(run->exit_code, 0) << run->out << run->err;
    EXPECT_EQ(ReadAll(dir.path() + "/top_packages.csv"), kExpectedCsv) << run->err;
    EXPECT_EQ(ListRequests(net().EventsSince(mark)), 1u);
  }

  // `sbx agent --team` in T: the scripted coder sends `replies` (by default kFetchScript, then
  // TERMINATE); `expect` is the output the run must leave ("" for none).
  TeamRun RunTeam(const std::vector<std::string>& allow,
                  const std::vector<std::string>& replies = {std::string("Here is the script.\n```python\n") +
                                                                 kFetchScript + "```\n",
                                                             "Done. TERMINATE"},
                  const std::string& expect = "top_packages.csv") {
    TeamRun run;
    ScratchDir config;
    run.out_dir = scratch_.path() + "/out-" + std::to_string(++runs_);
    nlohmann::json coder = {{"label", "scripted PyPI coder"}, {"replies", nlohmann::json::array()}};
    for (const auto& reply : replies) coder["replies"].push_back({{"content", reply}});
    std::ofstream(config.path() + "/coder.json") << coder.dump();
    std::ofstream(config.path() + "/team.json") << R"({
      "pattern": "two_agent", "max_rounds": 6,
      "agents": [
        {"name": "executor", "description": "runs code", "executes_code": true},
        {"name": "coder", "description": "writes Python", "system_message": "You write Python.",
         "scripted_model": "coder.json"}]})";
    // `ip netns exec` mounts a fresh /sys, which hides the cgroup mounts (see Sandboxed).
    nlohmann::json policy = {{"description", "team under a network allowlist"},
                             {"network", Allowlist(allow)},
                             {"limits", {{"timeout", 60}}},
                             {"allow_degraded", nlohmann::json::array({"cgroup"})}};
    std::ofstream(config.path() + "/policy.json") << policy.dump(2);
    // clang-format off
    std::vector<std::string> argv = {SBX_BINARY, "agent", "--team", config.path() + "/team.json",
                                     "--task", kTask, "--image", TestImage(),
                                     "--policy", config.path() + "/policy.json",
                                     "--input", net().ca_file() + ":ca.pem",
                                     "--out-dir", run.out_dir};
    // clang-format on
    if (!expect.empty()) argv.insert(argv.end(), {"--expect", expect});
    size_t mark = net().EventMark();
    auto command = nettest::RunBounded(net().topology().InT(argv), 180);
    run.events = net().EventsSince(mark);
    if (!command) {
      ADD_FAILURE() << "sbx agent did not start: " << command.error().ToString();
      return run;
    }
    run.command = *command;
    run.diagnostics = "sbx agent exit " + std::to_string(command->exit_code) +
                      (command->timed_out ? " (timed out)" : "") + "\nstdout: " + command->out +
                      "\nstderr: " + command->err;
    std::ifstream transcript(run.out_dir + "/transcript.jsonl");
    for (std::string line; std::getline(transcript, line);) {
      auto event = nlohmann::json::parse(line, nullptr, false);
      if (Str(event, "event") == "message") run.messages.push_back(event);
    }
    return run;
  }

  static std::string Speakers(const TeamRun& run) {
    std::string speakers;
    for (const auto& message : run.messages) speakers += Str(message, "speaker") + " ";
    return speakers;
  }

  // The executor's replies to the coder, in order.
  static std::vector<std::string> ExecutorReplies(const TeamRun& run) {
    std::vector<std::string> replies;
    for (const auto& message : run.messages) {
      if (Str(message, "speaker") == "executor") replies.push_back(Str(message, "content"));
    }
    return replies;
  }

  // The executor's first reply (to the coder).
  static std::string ExecutorReply(const TeamRun& run) {
    auto replies = ExecutorReplies(run);
    if (replies.empty()) ADD_FAILURE() << "the executor never replied\n" << run.diagnostics;
    return replies.empty() ? "" : replies[0];
  }

 private:
  ScratchDir scratch_;
  int runs_ = 0;
};

TEST_F(NetworkTeam, CoderAndExecutorSaveTheTopTenFromAnAllowedIndex) {
  ExpectControlFetches();
  SBX_NET_SANDBOXED_HALF();
  TeamRun run = RunTeam({"pypi.test"});
  EXPECT_EQ(run.command.exit_code, 0) << run.diagnostics;
  EXPECT_EQ(ReadAll(run.out_dir + "/top_packages.csv"), kExpectedCsv) << run.diagnostics;
  EXPECT_EQ(Speakers(run), "user coder executor coder ") << run.diagnostics;
  EXPECT_EQ(ExecutorReply(run).rfind("exitcode: 0 (execution succeeded)", 0), 0u)
      << run.diagnostics;
  EXPECT_NE(ExecutorReply(run).find("saved 10 packages to top_packages.csv"), std::string::npos)
      << run.diagnostics;
  // The index served the list once, over HTTPS, to the sandbox's allowed connection.
  EXPECT_EQ(ListRequests(run.events), 1u) << run.diagnostics;
  auto log = ReadAuditLogFile(run.out_dir + "/network-1.jsonl");
  ExpectRecord(log, DnsAllowed("pypi.test", "allow[0]"));
  ExpectRecord(log, ConnAllowed("pypi.test", "fakeip", Endpoint(kPypi, nettest::kHttpsPort)));
}

TEST_F(NetworkTeam, TheSameScriptIsBlockedAndTheExecutorTellsTheCoder) {
  ExpectControlFetches();
  SBX_NET_SANDBOXED_HALF();
  TeamRun run = RunTeam({"api.test"});
  // The chat ended normally (the coder said TERMINATE), without the expected output.
  EXPECT_EQ(run.command.exit_code, 3) << run.diagnostics;
  EXPECT_NE(run.command.err.find("expected output missing: top_packages.csv"), std::string::npos)
      << run.diagnostics;
  EXPECT_NE(::access((run.out_dir + "/top_packages.csv").c_str(), F_OK), 0) << run.diagnostics;
  EXPECT_EQ(Speakers(run), "user coder executor coder ") << run.diagnostics;
  const std::string reply = ExecutorReply(run);
  EXPECT_EQ(reply.rfind("exitcode: 1 (execution failed)", 0), 0u) << reply;
  EXPECT_NE(reply.find("\n[exit code 1]\n"), std::string::npos) << reply;
  // EAI_NONAME: the sandbox's stub DNS answered NXDOMAIN for the name the policy does not allow.
  EXPECT_NE(reply.find("urllib.error.URLError: <urlopen error [Errno -2] Name or service not "
                       "known>"),
            std::string::npos)
      << reply;
  EXPECT_NE(reply.find("[blocked by the sandbox's network policy, not an outage] pypi.test "
                       "(no_rule)"),
            std::string::npos)
      << reply;
  EXPECT_EQ(CountEvents(run.events, {.server = "pypi.test"}), 0u) << run.diagnostics;
  EXPECT_EQ(CountEvents(run.events, {.kind = "dns"}), 0u) << "the stub must not forward";
  auto log = ReadAuditLogFile(run.out_dir + "/network-1.jsonl");
  ExpectRecord(log, DnsDenied("pypi.test"));
  ExpectNoRecord(log, ConnAllowed("pypi.test", "", ""));
}

// pip through the allowlist into the session, as docs/packages.md shows it: one block installs
// a wheel from the index with --user, the next imports it in the same session (the driver's
// interpreter started before the user site existed; the driver adds it before the next cell).
// The control is Net12PipInstallsAWheelFromAnAllowedIndex's unsandboxed pip in T.
TEST_F(NetworkTeam, PipInstallsIntoTheSessionAndTheNextBlockImports) {
  SBX_NET_SANDBOXED_HALF();
  const std::string install =
      "Install it first.\n```bash\npython3 -m pip install --user --break-system-packages "
      "--no-deps --no-cache-dir --index-url https://pypi.test/simple --cert ca.pem "
      "sbx-test-pkg\n```\n";
  const std::string import_it =
      "Now use it.\n```python\n"
      "import sbx_test_pkg\nprint('value', sbx_test_pkg.VALUE)\n```\n";
  TeamRun run = RunTeam({"pypi.test"}, {install, import_it, "Done. TERMINATE"}, "");
  EXPECT_EQ(run.command.exit_code, 0) << run.diagnostics;
  EXPECT_EQ(Speakers(run), "user coder executor coder executor coder ") << run.diagnostics;
  const auto replies = ExecutorReplies(run);
  ASSERT_EQ(replies.size(), 2u) << run.diagnostics;
  EXPECT_EQ(replies[0].rfind("exitcode: 0 (execution succeeded)", 0), 0u) << replies[0];
  EXPECT_NE(replies[0].find("Successfully installed sbx-test-pkg"), std::string::npos) << replies[0];
  EXPECT_EQ(replies[1].rfind("exitcode: 0 (execution succeeded)", 0), 0u) << replies[1];
  EXPECT_NE(replies[1].find("value 42"), std::string::npos) << replies[1];
  EXPECT_EQ(CountEvents(run.events, {.kind = "request", .server = "pypi.test",
                                     .path = "/simple/sbx-test-pkg/"}),
            1u)
      << run.diagnostics;
}

}  // namespace
}  // namespace sbx::testing
