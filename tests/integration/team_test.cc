// Teams end to end in the real sandbox with scripted models: the AutoGen
// guide's primes task as a coder/executor pair through `sbx agent --team`,
// human-approved execution (a refused block never runs; the same block approved
// does), and team files refused before anything starts.
#include "src/agent/team.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "sandbox_fixture.h"
#include "src/agent/scripted_model.h"
#include "src/executor/executors.h"

namespace sbx::agent {
namespace {

using nlohmann::json;
using sbx::testing::ReadHostFile;
using sbx::testing::ScratchDir;

// A scripted model's file: each reply is an assistant message with this
// content.
std::string Script(const std::vector<std::string>& replies) {
  json script = {{"label", "test coder"}, {"replies", json::array()}};
  for (const auto& reply : replies) script["replies"].push_back({{"content", reply}});
  return script.dump();
}

constexpr char kPrimesCode[] =
    "```python\n"
    "primes = []\n"
    "n = 2\n"
    "while len(primes) < 10:\n"
    "    if all(n % p for p in primes):\n"
    "        primes.append(n)\n"
    "    n += 1\n"
    "with open('primes.txt', 'w') as f:\n"
    "    f.write('\\n'.join(map(str, primes)) + '\\n')\n"
    "print('primes', primes)\n"
    "```\n";

TEST(Team, PrimesTaskAsACoderAndExecutorPair) {
  ScratchDir host;
  std::ofstream(host.path() + "/coder.json") << Script(
      {std::string("Here is the code.\n") + kPrimesCode, "primes.txt holds them. TERMINATE"});
  std::ofstream(host.path() + "/team.json") << R"({
    "pattern": "two_agent", "max_rounds": 10,
    "agents": [
      {"name": "executor", "description": "runs code", "executes_code": true},
      {"name": "coder", "description": "writes Python", "system_message": "You write Python.",
       "scripted_model": "coder.json"}]})";
  const std::string out = host.path() + "/out";
  auto run =
      sbx::testing::RunOnHost({SBX_BINARY, "agent", "--team", host.path() + "/team.json", "--task",
                               "Compute the first 10 prime numbers and write them to primes.txt",
                               "--expect", "primes.txt", "--out-dir", out});
  EXPECT_EQ(run.exit_code, 0) << run.output;
  // The guide's check: the file exists and holds ten numbers, one a line (and
  // they are primes).
  EXPECT_EQ(ReadHostFile(out + "/primes.txt"), "2\n3\n5\n7\n11\n13\n17\n19\n23\n29\n")
      << run.output;
  EXPECT_NE(run.output.find("round 2: executor speaks"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("team terminated at executor's turn after 3 "
                            "round(s), 1 execution(s)"),
            std::string::npos)
      << run.output;
  std::string speakers;
  std::ifstream log(out + "/transcript.jsonl");
  for (std::string line; std::getline(log, line);) {
    json event = json::parse(line);
    if (event["event"] == "message") speakers += event["speaker"].get<std::string>() + " ";
    if (event["event"] == "message" && event["speaker"] == "executor") {
      EXPECT_EQ(event["content"].get<std::string>().rfind("exitcode: 0 (execution succeeded)", 0),
                0u)
          << line;
      EXPECT_NE(line.find("primes [2, 3, 5, 7, 11, 13, 17, 19, 23, 29]"), std::string::npos)
          << line;
    }
  }
  EXPECT_EQ(speakers, "user coder executor coder ");
}

// The coder's block writes a probe file; the person at the executor answers
// `answers`.
struct ApprovalRun {
  TeamResult result;
  std::string workspace;  // `ls` of the workspace after the chat
  std::string shown;      // what the person was shown
};

ApprovalRun RunWithPerson(const std::string& answers) {
  ApprovalRun run;
  executor::ExecutorOptions options;
  options.image_dir = sbx::testing::TestImage();
  auto session = executor::SessionExecutor::Create(std::move(options));
  EXPECT_TRUE(session) << session.error().ToString();
  if (!session) return run;
  auto coder =
      ScriptedModel::Parse(Script({"```bash\necho ran > probe.txt\n```", "Understood. TERMINATE"}));
  EXPECT_TRUE(coder);
  FILE* in = std::tmpfile();
  FILE* out = std::tmpfile();
  std::fputs(answers.c_str(), in);
  std::rewind(in);
  auto human = MakeTerminalHuman(in, out, /*allow_non_terminal=*/true);
  TeamSpec spec;
  spec.pattern = TeamPattern::kTwoAgent;
  spec.agents.resize(2);
  spec.agents[0].name = "coder";
  spec.agents[1].name = "executor";
  spec.agents[1].executes_code = true;
  spec.agents[1].human_input_mode = HumanInputMode::kAlways;
  TeamMembers members;
  members.models = {&*coder, nullptr};
  members.code = session->get();
  members.human = human->get();
  Transcript transcript;
  run.result = RunTeam(spec, members, "Leave a mark.", transcript);
  auto listed = (*session)->Execute({{"bash", "ls"}});
  EXPECT_TRUE(listed) << listed.error().ToString();
  if (listed) run.workspace = listed->output;
  std::rewind(out);
  char buffer[8192] = {};
  run.shown = std::string(buffer, std::fread(buffer, 1, sizeof buffer - 1, out));
  std::fclose(in);
  std::fclose(out);
  return run;
}

TEST(Team, AlwaysRunsOnlyWhatThePersonApproves) {
  // Refused with a reason, then Enter on TERMINATE: the block never ran.
  ApprovalRun refused = RunWithPerson("please do not\n\n");
  EXPECT_EQ(refused.result.stop, TeamStop::kTerminated);
  EXPECT_EQ(refused.workspace.find("probe.txt"), std::string::npos) << refused.workspace;
  EXPECT_NE(refused.shown.find("echo ran > probe.txt"), std::string::npos)
      << "the person saw the code";
  ASSERT_EQ(refused.result.executions.size(), 1u);
  EXPECT_FALSE(refused.result.executions[0].ran);
  ASSERT_GE(refused.result.messages.size(), 3u);
  EXPECT_NE(refused.result.messages[2].content.find("refused to run this: please do not"),
            std::string::npos);
  // The control: the same block, approved, leaves the probe file.
  ApprovalRun approved = RunWithPerson("y\n\n");
  EXPECT_EQ(approved.result.stop, TeamStop::kTerminated);
  EXPECT_NE(approved.workspace.find("probe.txt"), std::string::npos) << approved.workspace;
  ASSERT_EQ(approved.result.executions.size(), 1u);
  EXPECT_TRUE(approved.result.executions[0].ran);
  EXPECT_EQ(approved.result.executions[0].exit_code, 0);
}

TEST(Team, CliRefusesBadTeamsWith125AndCreatesNothing) {
  ScratchDir host;
  std::ofstream(host.path() + "/coder.json") << Script({"TERMINATE"});
  const std::string out = host.path() + "/never";
  const std::string coder = R"({"name": "coder", "scripted_model": "coder.json"})";
  const std::string executor = R"({"name": "executor", "executes_code": true})";
  struct Case {
    std::string team;
    const char* expect;
  };
  const std::vector<Case> cases = {
      {R"({"agents": [)" + coder + R"(], "initial_agent": "planner"})",
       "initial_agent: \"planner\" is not an agent"},
      {R"({"agents": [)" + coder + "," + executor +
           R"(, {"name": "runner", "executes_code": true}]})",
       "more than one executor"},
      {R"({"agents": [)" + executor + "]}", "no LLM agent"},
      {R"({"agents": [)" + coder + R"(], "max_rounds": -1})", "max_rounds"},
      {R"({"agents": [)" + coder + R"(], "colour": 1})", "colour: unknown key"},
      {R"({"agents": [)" + coder + R"(], "image": "no-such-variant"})",
       "the team file's image: no image named 'no-such-variant'"},
      {R"({"agents": [{"name": "coder", "scripted_model": "missing.json"}]})", "scripted model"},
      {R"({"agents": [)" + coder +
           R"(, {"name": "executor", "executes_code": true, "human_input_mode": "ALWAYS"}]})",
       "not a terminal"},
      {R"({"agents": [)" + coder +
           R"(, {"name": "executor", "executes_code": true, "human_input_mode": "TERMINATE"}]})",
       "not a terminal"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string file = host.path() + "/team" + std::to_string(i) + ".json";
    std::ofstream(file) << cases[i].team;
    auto run = sbx::testing::RunOnHost(
        {SBX_BINARY, "agent", "--team", file, "--task", "x", "--out-dir", out});
    EXPECT_EQ(run.exit_code, 125) << cases[i].team << "\n" << run.output;
    EXPECT_NE(run.output.find(cases[i].expect), std::string::npos) << cases[i].expect << "\n"
                                                                   << run.output;
    EXPECT_NE(::access(out.c_str(), F_OK), 0) << cases[i].team << ": created " << out;
  }
  std::ofstream(host.path() + "/ok.json") << R"({"agents": [)" + coder + "]}";
  auto mixed = sbx::testing::RunOnHost({SBX_BINARY, "agent", "--team", host.path() + "/ok.json",
                                        "--approve", "always", "--task", "x", "--out-dir", out});
  EXPECT_EQ(mixed.exit_code, 125) << mixed.output;
  EXPECT_NE(mixed.output.find("--approve: not with --team"), std::string::npos) << mixed.output;
}

}  // namespace
}  // namespace sbx::agent
