// The agent loop with a fake model and a fake executor: turns, tools, errors, endings, transcript.
#include <gtest/gtest.h>
#include <unistd.h>

#include <deque>
#include <fstream>
#include <sstream>

#include "agent_fakes.h"
#include "files_test_util.h"
#include "src/agent/agent.h"
#include "src/agent/code_blocks.h"
#include "src/agent/scripted_model.h"

namespace sbx::agent {
namespace {

using executor::CodeBlock;
using executor::CodeResult;
using testing::Calls;
using testing::FakeExecutor;
using testing::FakeModel;
using testing::Text;

class RefuseAll final : public Approver {
 public:
  Decision Approve(const std::string&, const std::string&) override { return {false, "not on my laptop"}; }
};

struct Harness {
  FakeModel model;
  FakeExecutor executor;
  std::unique_ptr<Approver> approver = MakeApprover(ApprovalMode::kNever, stdin, stderr).value();
  std::vector<std::pair<std::vector<std::string>, std::string>> copies;
  AgentConfig config;
  Transcript transcript;

  AgentResult Run(Approver* custom = nullptr) {
    ToolRunner tools(executor, custom ? *custom : *approver, 200);
    AgentSession session{tools, [this](const std::vector<std::string>& requests, const std::string& dir)
                                    -> Result<CopyOutResult> {
                           copies.emplace_back(requests, dir);
                           return CopyOutResult{};
                         }};
    return RunAgent(model, session, config, transcript);
  }
};

TEST(AgentLoop, ToolCallsRunThroughTheExecutorAndResultsGoBack) {
  Harness h;
  h.config.task = "count";
  h.config.expected_outputs = {"out.txt"};
  h.config.output_dir = "/tmp/x";
  h.executor.next.output = "42\n";
  h.executor.next.value = "42";
  h.model.replies.push_back(Calls({{"c1", "run_python", R"j({"code": "print(42)"})j"},
                                   {"c2", "run_shell", R"({"command": "ls"})"}}));
  h.model.replies.push_back(Text("The answer is 42."));
  AgentResult result = h.Run();
  EXPECT_EQ(result.end, AgentEnd::kFinalAnswer);
  EXPECT_EQ(result.final_answer, "The answer is 42.");
  EXPECT_EQ(result.turns, 2);
  EXPECT_EQ(result.executions, 2);
  EXPECT_EQ(result.usage.total_tokens, 30);
  ASSERT_EQ(h.executor.calls.size(), 2u);
  EXPECT_EQ(h.executor.calls[0][0].language, "python");
  EXPECT_EQ(h.executor.calls[0][0].source, "print(42)");
  EXPECT_EQ(h.executor.calls[1][0].language, "bash");
  // The second request carries both tool results, each answering its call.
  const auto& messages = h.model.requests[1].messages;
  ASSERT_EQ(messages.size(), 5u);  // system, user, assistant, tool, tool
  EXPECT_EQ(messages[3].role, "tool");
  EXPECT_EQ(messages[3].tool_call_id, "c1");
  EXPECT_NE(messages[3].content->find("[exit code 0]"), std::string::npos) << *messages[3].content;
  EXPECT_NE(messages[3].content->find("[value] 42"), std::string::npos);
  EXPECT_EQ(h.model.requests[0].tools.size(), 5u);
  ASSERT_EQ(h.copies.size(), 1u);
  EXPECT_EQ(h.copies[0].first, std::vector<std::string>{"out.txt"});
}

TEST(AgentLoop, BadToolCallsAreReportedToTheModelNotFatal) {
  Harness h;
  h.model.replies.push_back(Calls({{"a", "run_python", "{not json"},
                                   {"b", "launch_missiles", "{}"},
                                   {"c", "run_python", R"({"code": 7})"}}));
  h.model.replies.push_back(Text("sorry"));
  AgentResult result = h.Run();
  EXPECT_EQ(result.end, AgentEnd::kFinalAnswer);
  EXPECT_TRUE(h.executor.calls.empty());
  const auto& messages = h.model.requests[1].messages;
  EXPECT_NE(messages[3].content->find("run_python"), std::string::npos) << *messages[3].content;
  EXPECT_NE(messages[4].content->find("there is no tool \"launch_missiles\""), std::string::npos);
  EXPECT_NE(messages[5].content->find("\"code\" must be a string"), std::string::npos);
}

TEST(AgentLoop, MaxTurnsAndLlmErrorsEndTheRunAndStillCopyOutputs) {
  Harness h;
  h.config.max_turns = 3;
  h.config.expected_outputs = {"a"};
  h.config.output_dir = "/tmp/x";
  for (int i = 0; i < 5; ++i) h.model.replies.push_back(Calls({{"c", "list_files", "{}"}}));
  AgentResult result = h.Run();
  EXPECT_EQ(result.end, AgentEnd::kMaxTurns);
  EXPECT_EQ(result.turns, 3);
  EXPECT_EQ(h.copies.size(), 1u);

  Harness failing;
  failing.config.expected_outputs = {"a"};
  failing.config.output_dir = "/tmp/x";
  AgentResult error = failing.Run();  // the model has nothing to say: an error
  EXPECT_EQ(error.end, AgentEnd::kError);
  EXPECT_NE(error.error.find("503"), std::string::npos);
  EXPECT_EQ(failing.copies.size(), 1u);
}

TEST(AgentLoop, RefusalGoesBackToTheModelAndNothingRuns) {
  Harness h;
  h.model.replies.push_back(Calls({{"c", "run_shell", R"({"command": "rm -rf /"})"}}));
  h.model.replies.push_back(Text("ok"));
  RefuseAll refuse;
  AgentResult result = h.Run(&refuse);
  EXPECT_EQ(result.executions, 0);
  EXPECT_TRUE(h.executor.calls.empty());
  EXPECT_NE(h.model.requests[1].messages[3].content->find("not on my laptop"), std::string::npos);
}

TEST(AgentLoop, TextModeRunsFencedBlocksUntilTerminate) {
  Harness h;
  h.config.mode = AgentMode::kText;
  h.executor.next.output = "3\n";
  h.model.replies.push_back(Text("Let me check.\n```python\nprint(1 + 2)\n```\n```bash\necho hi\n```\n"));
  h.model.replies.push_back(Text("It is 3. TERMINATE"));
  AgentResult result = h.Run();
  EXPECT_EQ(result.end, AgentEnd::kFinalAnswer);
  ASSERT_EQ(h.executor.calls.size(), 1u);
  ASSERT_EQ(h.executor.calls[0].size(), 2u);
  EXPECT_EQ(h.executor.calls[0][0].source, "print(1 + 2)\n");
  EXPECT_EQ(h.executor.calls[0][1].language, "bash");
  EXPECT_TRUE(h.model.requests[0].tools.empty());
  EXPECT_EQ(h.model.requests[1].messages.back().role, "user");
  EXPECT_NE(h.model.requests[1].messages.back().content->find("3\n"), std::string::npos);
}

TEST(AgentLoop, TranscriptRecordsTheRunAsJsonLines) {
  sbx::testing::TempDir dir;
  Harness h;
  std::string path = dir.path() + "/t.jsonl";
  ASSERT_TRUE(Transcript::Open(h.transcript, path));
  EXPECT_FALSE(Transcript::Open(h.transcript, path));  // never over an existing file
  h.model.replies.push_back(Calls({{"c", "run_python", R"({"code": "1"})"}}));
  h.model.replies.push_back(Text("done"));
  h.Run();
  std::ifstream file(path);
  std::string line, events;
  while (std::getline(file, line)) events += nlohmann::json::parse(line)["event"].get<std::string>() + " ";
  EXPECT_EQ(events, "start message message message tool_result message end ");
}

TEST(CodeBlocks, FencesLanguagesAndTerminate) {
  auto blocks = ExtractCodeBlocks("a\n```py\nx = 1\n```\ntext\n```\ny\n```\n```Shell\nls\n```\n```ruby\nputs 1\n```\n```python\nunclosed\n");
  ASSERT_EQ(blocks.size(), 5u);
  EXPECT_EQ(blocks[0].language, "python");
  EXPECT_EQ(blocks[1].language, "python");
  EXPECT_EQ(blocks[2].language, "bash");
  EXPECT_EQ(blocks[3].language, "ruby");  // the executor refuses it by name
  EXPECT_EQ(blocks[4].source, "unclosed\n");
  EXPECT_TRUE(SaysTerminate("All done.\nTERMINATE"));
  EXPECT_FALSE(SaysTerminate("```python\nprint('TERMINATE')\n```"));
}

TEST(AgentTools, ResultsAreBoundedAndSayHowTheyEnded) {
  std::string big(10000, 'x');
  std::string cut = Bounded("HEAD" + big + "TAIL", 100);
  EXPECT_LT(cut.size(), 200u);
  EXPECT_EQ(cut.rfind("HEAD", 0), 0u);
  EXPECT_TRUE(cut.ends_with("TAIL"));
  EXPECT_NE(cut.find("bytes cut"), std::string::npos);
  CodeResult oom;
  oom.status = RunStatus::kOomKilled;
  oom.state_lost = true;
  oom.notice = "the session ended";
  EXPECT_NE(DescribeResult(oom, 100).find("out of memory"), std::string::npos);
  CodeResult timeout;
  timeout.status = RunStatus::kTimedOut;
  EXPECT_NE(DescribeResult(timeout, 100).find("timed out"), std::string::npos);
}

TEST(ScriptedModel, RepliesInOrderAndRejectsBadScripts) {
  auto model = ScriptedModel::Parse(R"({"label": "demo", "replies": [
      {"content": null, "tool_calls": [{"id": "1", "type": "function",
        "function": {"name": "list_files", "arguments": "{}"}}]},
      {"content": "done"}]})");
  ASSERT_TRUE(model) << model.error().message;
  EXPECT_EQ(model->label(), "demo");
  EXPECT_EQ(model->Complete({})->message.tool_calls[0].name, "list_files");
  EXPECT_EQ(*model->Complete({})->message.content, "done");
  EXPECT_FALSE(model->Complete({}));
  EXPECT_FALSE(ScriptedModel::Parse(R"({"replies": []})"));
  auto bad = ScriptedModel::Parse(R"({"replies": [{"content": 5}]})");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("replies[0]"), std::string::npos) << bad.error().message;
}

TEST(Approval, AlwaysNeedsATerminalAndReadsTheAnswer) {
  FILE* in = std::tmpfile();
  auto refused = MakeApprover(ApprovalMode::kAlways, in, in);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("--approve never"), std::string::npos);
  std::fputs("y\nno thanks\n", in);
  std::rewind(in);
  FILE* out = std::tmpfile();
  auto approver = MakeApprover(ApprovalMode::kAlways, in, out, /*allow_non_terminal=*/true);
  ASSERT_TRUE(approver);
  EXPECT_TRUE((*approver)->Approve("run Python", "print(1)").approved);
  Decision second = (*approver)->Approve("run Python", "print(2)");
  EXPECT_FALSE(second.approved);
  EXPECT_EQ(second.reason, "no thanks");
  EXPECT_FALSE((*approver)->Approve("run Python", "print(3)").approved);  // end of input
  std::fclose(in);
  std::fclose(out);
}

}  // namespace
}  // namespace sbx::agent
