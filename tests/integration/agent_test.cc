// The agent end to end: a real loopback server speaking the OpenAI protocol, the real client,
// the real agent loop and a real sandboxed session with the real image.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "sandbox_fixture.h"
#include "src/agent/agent.h"
#include "src/executor/executors.h"
#include "src/llm/openai_client.h"
#include "tests/support/chat_completion_body.h"
#include "tests/support/fake_openai_server.h"

namespace sbx::agent {
namespace {

using sbx::testing::FakeOpenAiServer;
using sbx::testing::FakeResponse;
using sbx::testing::ReadHostFile;
using sbx::testing::ScratchDir;
using sbx::testing::TextCompletionBody;
using sbx::testing::ToolCallsCompletionBody;

constexpr char kKey[] = "sk-agent-test-0123456789abcdef";

// The content of the tool message answering `call_id` in a recorded request.
std::string ToolResultIn(const sbx::testing::RecordedRequest& request, const std::string& call_id) {
  const nlohmann::json body = request.JsonBody();  // held: a range-for would not extend its life
  for (const auto& message : body["messages"]) {
    if (message.value("role", "") == "tool" && message.value("tool_call_id", "") == call_id) {
      return message.value("content", "");
    }
  }
  return "<no tool result for " + call_id + ">";
}

void ScriptTheModel(FakeOpenAiServer& server) {
  server.Enqueue(FakeResponse::Json(200, ToolCallsCompletionBody({{"c1", "run_python",
      R"j({"code": "import pandas as pd\ndf = pd.read_csv('input/data.csv')\nprint('sum', df['v'].sum())"})j"}})));
  server.Enqueue(FakeResponse::Json(200, ToolCallsCompletionBody({{"c2", "run_shell", R"({"command": "env; id -u"})"}})));
  server.Enqueue(FakeResponse::Json(200, ToolCallsCompletionBody({{"c3", "write_file",
      R"j({"path": "output/result.txt", "content": "total 10\n"})j"}})));
  server.Enqueue(FakeResponse::Json(200, TextCompletionBody("The total is 10; see output/result.txt.")));
}

TEST(Agent, RunsTheModelsCodeInTheSandboxAndBringsOutputsBack) {
  FakeOpenAiServer server;
  ScriptTheModel(server);
  ASSERT_TRUE(server.Start());
  ScratchDir host;
  std::ofstream(host.path() + "/data.csv") << "v\n1\n2\n3\n4\n";
  ::setenv("SBX_AGENT_TEST_SECRET", kKey, 1);  // the runner's environment holds a secret

  executor::ExecutorOptions options;
  options.image_dir = sbx::testing::TestImage();
  options.manifest.AddHostFile("input/data.csv", host.path() + "/data.csv");
  auto session = executor::SessionExecutor::Create(std::move(options));
  ASSERT_TRUE(session) << session.error().ToString();
  llm::LlmConfig llm_config;
  llm_config.base_url = server.base_url();
  llm_config.api_key = kKey;
  llm_config.model = "test-model";
  llm::OpenAiClient client(llm_config);
  auto approver = MakeApprover(ApprovalMode::kNever, stdin, stderr).value();
  ToolRunner tools(**session, *approver, 16 * 1024);
  AgentSession agent_session{tools, [&](const std::vector<std::string>& requests, const std::string& dir) {
                               return (*session)->CopyOutputs(requests, dir);
                             }};
  AgentConfig config;
  config.model = "test-model";
  config.task = "Sum column v of input/data.csv and write output/result.txt.";
  config.input_files = {"input/data.csv"};
  config.expected_outputs = {"output/result.txt"};
  config.output_dir = host.path() + "/out";
  ASSERT_EQ(::mkdir(config.output_dir.c_str(), 0755), 0);
  Transcript transcript;
  ASSERT_TRUE(Transcript::Open(transcript, host.path() + "/transcript.jsonl"));

  AgentResult result = RunAgent(client, agent_session, config, transcript);
  ::unsetenv("SBX_AGENT_TEST_SECRET");
  EXPECT_EQ(result.end, AgentEnd::kFinalAnswer) << result.error;
  EXPECT_EQ(result.final_answer, "The total is 10; see output/result.txt.");
  EXPECT_EQ(result.executions, 3);
  auto requests = server.requests();
  ASSERT_EQ(requests.size(), 4u);
  EXPECT_EQ(requests[0].Header("Authorization").value_or(""), std::string("Bearer ") + kKey);
  EXPECT_EQ(requests[0].JsonBody()["model"], "test-model");
  EXPECT_NE(ToolResultIn(requests[1], "c1").find("sum 10"), std::string::npos) << ToolResultIn(requests[1], "c1");
  std::string env = ToolResultIn(requests[2], "c2");
  EXPECT_NE(env.find("HOME=/workspace"), std::string::npos) << env;
  EXPECT_NE(env.find("\n1000\n"), std::string::npos) << env;
  EXPECT_EQ(env.find(kKey), std::string::npos) << "the sandbox saw the runner's secret";
  EXPECT_EQ(ReadHostFile(config.output_dir + "/output/result.txt"), "total 10\n");
  ASSERT_EQ(result.outputs.entries.size(), 1u);
  EXPECT_EQ(result.outputs.entries[0].status, CopyStatus::kCopied);
  std::string log = ReadHostFile(host.path() + "/transcript.jsonl");
  EXPECT_NE(log.find("sum 10"), std::string::npos);
  EXPECT_EQ(log.find(kKey), std::string::npos) << "the transcript holds the API key";
}

// The sandbox writes files named like the run's records; copied out with --expect '*', they
// must not replace the transcript (its real end would go to an unlinked inode).
TEST(Agent, OutputsNamedLikeTheRunsRecordsNeverReplaceThem) {
  ScratchDir host;
  const nlohmann::json code = {{"code", "open('transcript.jsonl', 'w').write('forged\\n')\n"
                                        "open('network-1.jsonl', 'w').write('forged\\n')\n"
                                        "open('report.md', 'w').write('ok\\n')\n"}};
  const nlohmann::json script = {
      {"label", "test: outputs named like records"},
      {"replies", {{{"role", "assistant"}, {"content", nullptr},
                    {"tool_calls", {{{"id", "c1"}, {"type", "function"},
                                     {"function", {{"name", "run_python"}, {"arguments", code.dump()}}}}}}},
                   {{"role", "assistant"}, {"content", "done"}}}}};
  std::ofstream(host.path() + "/script.json") << script.dump();
  const std::string out = host.path() + "/out";
  auto run = sbx::testing::RunOnHost({SBX_BINARY, "agent", "--task", "x", "--scripted-model",
                                      host.path() + "/script.json", "--expect", "*", "--out-dir", out});
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(ReadHostFile(out + "/report.md"), "ok\n");
  const std::string log = ReadHostFile(out + "/transcript.jsonl");
  EXPECT_NE(log.rfind("forged\n", 0), 0u) << log.substr(0, 400);
  EXPECT_NE(log.find("\"event\":\"end\""), std::string::npos) << log.substr(0, 400);
  EXPECT_NE(run.output.find("transcript.jsonl: destination_error"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("network-1.jsonl: destination_error"), std::string::npos) << run.output;
}

TEST(Agent, CliRunsAgainstAnOpenAiCompatibleServer) {
  FakeOpenAiServer server;
  ScriptTheModel(server);
  ASSERT_TRUE(server.Start());
  ScratchDir host;
  std::ofstream(host.path() + "/data.csv") << "v\n1\n2\n3\n4\n";
  ::setenv("OPENAI_BASE_URL", server.base_url().c_str(), 1);
  ::setenv("OPENAI_API_KEY", kKey, 1);
  ::setenv("SBX_MODEL", "cli-model", 1);
  auto run = sbx::testing::RunOnHost({SBX_BINARY, "agent", "--task", "Sum v.", "--instructions",
                                      "You are a terse analyst.", "--input",
                                      host.path() + "/data.csv:input/data.csv", "--expect",
                                      "output/result.txt", "--out-dir", host.path() + "/out"});
  ::unsetenv("OPENAI_BASE_URL");
  ::unsetenv("OPENAI_API_KEY");
  ::unsetenv("SBX_MODEL");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("The total is 10"), std::string::npos) << run.output;
  EXPECT_EQ(run.output.find(kKey), std::string::npos);
  EXPECT_EQ(ReadHostFile(host.path() + "/out/output/result.txt"), "total 10\n");
  std::string log = ReadHostFile(host.path() + "/out/transcript.jsonl");
  EXPECT_NE(log.find("\"end\":\"final_answer\""), std::string::npos) << log.substr(0, 2000);
  EXPECT_EQ(log.find(kKey), std::string::npos);
  const nlohmann::json first = server.requests().at(0).JsonBody();
  EXPECT_EQ(first["model"], "cli-model");
  EXPECT_EQ(first["messages"][0]["content"], "You are a terse analyst.");
}

// The exit codes of `sbx agent` (README): 0 finished with every expected output, 1 a model
// error (a 401: not retried), 2 stopped at --max-turns, 3 finished without an expected output.
TEST(Agent, CliExitCodesSayHowTheRunEnded) {
  ScratchDir host;
  const std::string writes_then_answers = host.path() + "/writes.json";
  std::ofstream(writes_then_answers) << R"({"label": "writes out.txt, then answers", "replies": [
      {"content": null, "tool_calls": [{"id": "c1", "type": "function", "function":
        {"name": "write_file", "arguments": "{\"path\": \"out.txt\", \"content\": \"x\"}"}}]},
      {"content": "done"}]})";
  auto agent = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {SBX_BINARY, "agent", "--task", "t", "--out-dir", host.path() + "/out"});
    return sbx::testing::RunOnHost(args);
  };
  auto finished = agent({"--scripted-model", writes_then_answers, "--expect", "out.txt"});
  EXPECT_EQ(finished.exit_code, 0) << finished.output;
  auto max_turns = agent({"--scripted-model", writes_then_answers, "--max-turns", "1"});
  EXPECT_EQ(max_turns.exit_code, 2) << max_turns.output;
  auto missing = agent({"--scripted-model", writes_then_answers, "--expect", "other.txt"});
  EXPECT_EQ(missing.exit_code, 3) << missing.output;
  EXPECT_NE(missing.output.find("other.txt"), std::string::npos) << missing.output;

  FakeOpenAiServer server;
  server.Enqueue(FakeResponse::Json(401, R"({"error": {"message": "bad key"}})"));
  ASSERT_TRUE(server.Start());
  ::setenv("OPENAI_BASE_URL", server.base_url().c_str(), 1);
  ::setenv("OPENAI_API_KEY", kKey, 1);
  auto model_error = agent({});
  ::unsetenv("OPENAI_BASE_URL");
  ::unsetenv("OPENAI_API_KEY");
  EXPECT_EQ(model_error.exit_code, 1) << model_error.output;
  EXPECT_EQ(server.requests().size(), 1u) << "a 401 is not retried";
  EXPECT_EQ(model_error.output.find(kKey), std::string::npos);
}

TEST(Agent, CliRefusesBadInputWith125AndCreatesNothing) {
  ScratchDir host;
  std::string out = host.path() + "/never";
  ::unsetenv("OPENAI_BASE_URL");
  ::unsetenv("OPENAI_API_KEY");
  struct Case {
    std::vector<std::string> args;
    const char* expect;
  };
  std::vector<Case> cases = {
      {{"--task", "x", "--out-dir", out}, "OPENAI_API_KEY"},
      {{"--out-dir", out}, "--task"},
      {{"--task", "x", "--mode", "text", "--out-dir", out}, "--mode"},
      {{"--task", "x", "--approve", "sometimes", "--out-dir", out}, "approval"},
      {{"--task", "x", "--approve", "always", "--out-dir", out}, "terminal"},
      {{"--task", "x", "--max-turns", "0", "--out-dir", out}, "--max-turns"},
      {{"--task", "x", "--memory", "lots", "--out-dir", out}, "--memory"},
      {{"--task", "x", "--input", "/nonexistent/file.csv", "--out-dir", out}, "does not exist"},
      {{"--task", "x", "--input", "/etc/hostname:../escape", "--out-dir", out}, ".."},
      {{"--task", "x", "--scripted-model", "/nonexistent.json", "--out-dir", out}, "scripted model"},
      {{"--task", "x", "--instructions", "a", "--instructions-file", "/etc/hostname", "--out-dir", out}, "at most one"},
      {{"--task", "x", "--instructions-file", "/nonexistent", "--out-dir", out}, "--instructions-file"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {SBX_BINARY, "agent"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    auto run = sbx::testing::RunOnHost(args);
    EXPECT_EQ(run.exit_code, 125) << c.expect << ": " << run.output;
    EXPECT_NE(run.output.find(c.expect), std::string::npos) << c.expect << ": " << run.output;
    EXPECT_NE(::access(out.c_str(), F_OK), 0) << c.expect << ": created " << out;
  }
}

}  // namespace
}  // namespace sbx::agent
