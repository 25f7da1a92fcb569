// The team's turn logic with fake models, a fake executor and a scripted
// person: who speaks when, what each agent sees, and each way a chat stops.
#include "src/agent/team.h"

#include <gtest/gtest.h>

#include <deque>

#include "agent_fakes.h"

namespace sbx::agent {
namespace {

using testing::FakeExecutor;
using testing::FakeModel;
using testing::Text;

// Answers from a queue and records each prompt; an empty queue answers "exit".
class ScriptedHuman final : public HumanInput {
 public:
  std::deque<HumanAnswer> answers;
  std::vector<HumanPrompt> prompts;
  HumanAnswer Ask(const HumanPrompt& prompt) override {
    prompts.push_back(prompt);
    if (answers.empty()) return {HumanAnswer::kExit, ""};
    HumanAnswer answer = answers.front();
    answers.pop_front();
    return answer;
  }
};

TeamAgent Llm(const std::string& name) {
  TeamAgent agent;
  agent.name = name;
  agent.system_message = "You are " + name + ".";
  return agent;
}

TeamAgent Executor() {
  TeamAgent agent;
  agent.name = "executor";
  agent.executes_code = true;
  return agent;
}

struct Team {
  TeamSpec spec;
  std::vector<FakeModel> models;  // one per agent (the executor's is unused)
  FakeExecutor code;
  ScriptedHuman human;
  Transcript transcript;

  explicit Team(std::vector<TeamAgent> agents) : models(agents.size()) {
    spec.agents = std::move(agents);
  }
  FakeModel& model(const std::string& name) {
    for (size_t i = 0; i < spec.agents.size(); ++i) {
      if (spec.agents[i].name == name) return models[i];
    }
    ADD_FAILURE() << "no agent " << name;
    return models[0];
  }
  TeamResult Run() {
    EXPECT_TRUE(ValidateTeam(spec)) << ValidateTeam(spec).error().message;
    TeamMembers members;
    for (auto& model : models) members.models.push_back(&model);
    members.code = &code;
    members.human = &human;
    return RunTeam(spec, members, "Compute it.", transcript);
  }
};

std::string Speakers(const TeamResult& result) {
  std::string order;
  for (const auto& message : result.messages) order += (order.empty() ? "" : " ") + message.speaker;
  return order;
}

TEST(Team, RoundRobinTakesTurnsFromTheInitialAgentUntilTerminate) {
  Team team({Llm("coder"), Executor(), Llm("planner")});
  team.spec.initial_agent = "planner";
  team.code.next.output = "2 3 5\n";
  team.model("planner").replies = {Text("Plan: list primes."), Text("Good. Finish up.")};
  team.model("coder").replies = {Text("```python\nprint(2, 3, 5)\n```"), Text("Done. TERMINATE")};
  TeamResult result = team.Run();
  EXPECT_EQ(result.stop, TeamStop::kTerminated);
  EXPECT_EQ(result.stopped_at, "executor");
  EXPECT_EQ(Speakers(result), "user planner coder executor planner coder");
  EXPECT_EQ(result.rounds, 5);
  ASSERT_EQ(team.code.calls.size(), 1u);
  EXPECT_EQ(team.code.calls[0][0].source, "print(2, 3, 5)\n");
  ASSERT_EQ(result.executions.size(), 1u);
  EXPECT_TRUE(result.executions[0].ran);
  EXPECT_EQ(result.executions[0].exit_code, 0);
  EXPECT_EQ(
      result.messages[3].content.rfind("exitcode: 0 (execution succeeded)\nCode output:\n", 0), 0u)
      << result.messages[3].content;
  EXPECT_NE(result.messages[3].content.find("2 3 5"), std::string::npos);
  EXPECT_EQ(result.usage.total_tokens, 4 * 15);
  // The coder's second request: its own system message, the task, the others'
  // messages as named user messages, its own as the assistant's.
  const auto& seen = team.model("coder").requests.at(1).messages;
  ASSERT_EQ(seen.size(), 6u);
  EXPECT_EQ(*seen[0].content, "You are coder.");
  EXPECT_EQ(seen[1].role, "user");
  EXPECT_EQ(*seen[1].content, "Compute it.");
  EXPECT_EQ(seen[2].name, "planner");
  EXPECT_EQ(seen[3].role, "assistant");
  EXPECT_EQ(seen[4].name, "executor");
  EXPECT_EQ(seen[5].name, "planner");
  EXPECT_TRUE(team.human.prompts.empty()) << "NEVER asks nobody";
}

TEST(Team, MaxRoundsStopsTheChat) {
  Team team({Llm("a"), Llm("b")});
  team.spec.max_rounds = 3;
  for (int i = 0; i < 5; ++i) {
    team.model("a").replies.push_back(Text("more"));
    team.model("b").replies.push_back(Text("more"));
  }
  TeamResult result = team.Run();
  EXPECT_EQ(result.stop, TeamStop::kMaxRounds);
  EXPECT_EQ(result.rounds, 3);
  EXPECT_EQ(Speakers(result), "user a b a");
  EXPECT_EQ(result.stopped_at, "b");
}

TEST(Team, TwoAgentStopsAtTheExecutorsAutoReplyLimit) {
  TeamAgent executor = Executor();
  executor.max_consecutive_auto_reply = 2;
  Team team({executor, Llm("coder")});
  team.spec.pattern = TeamPattern::kTwoAgent;
  for (int i = 0; i < 5; ++i)
    team.model("coder").replies.push_back(Text("```bash\necho again\n```"));
  TeamResult result = team.Run();
  EXPECT_EQ(result.stop, TeamStop::kMaxConsecutiveAutoReply);
  EXPECT_EQ(result.stopped_at, "executor");
  EXPECT_EQ(Speakers(result), "user coder executor coder executor coder");
  EXPECT_EQ(team.code.calls.size(), 2u);
}

TEST(Team, ExecutorWithoutCodeSaysSoAndModelErrorsStopTheChat) {
  Team team({Llm("coder"), Executor()});
  team.model("coder").replies = {Text("I think it is 7.")};  // then the queue is empty: an error
  TeamResult result = team.Run();
  EXPECT_EQ(result.stop, TeamStop::kModelError);
  EXPECT_NE(result.error.find("503"), std::string::npos) << result.error;
  EXPECT_EQ(result.stopped_at, "coder");
  ASSERT_EQ(result.messages.size(), 3u);
  EXPECT_NE(result.messages[2].content.find("No code blocks found"), std::string::npos);
  EXPECT_TRUE(team.code.calls.empty());
}

TEST(Team, AlwaysOnTheExecutorApprovesOrRefusesEachExecution) {
  TeamAgent executor = Executor();
  executor.human_input_mode = HumanInputMode::kAlways;
  Team team({Llm("coder"), executor});
  team.model("coder").replies = {Text("```python\nopen('a', 'w')\n```"),
                                 Text("```bash\nrm -rf /\n```"), Text("Fine. TERMINATE")};
  team.human.answers = {
      {HumanAnswer::kAuto, ""}, {HumanAnswer::kReply, "not that"}, {HumanAnswer::kAuto, ""}};
  TeamResult result = team.Run();
  EXPECT_EQ(result.stop,
            TeamStop::kTerminated);  // Enter on a TERMINATE message ends it
  ASSERT_EQ(team.code.calls.size(), 1u) << "only the approved block ran";
  EXPECT_EQ(team.code.calls[0][0].source, "open('a', 'w')\n");
  ASSERT_EQ(team.human.prompts.size(), 3u);
  EXPECT_TRUE(team.human.prompts[1].executes_code);
  EXPECT_NE(team.human.prompts[1].code.find("rm -rf /"), std::string::npos)
      << "the person saw the code";
  ASSERT_EQ(result.executions.size(), 2u);
  EXPECT_FALSE(result.executions[1].ran);
  EXPECT_EQ(result.executions[1].ending, "refused by the user");
  // The refusal went back to the coder, in the executor's name.
  const auto& seen = team.model("coder").requests.at(2).messages;
  EXPECT_EQ(seen.back().name, "executor");
  EXPECT_NE(seen.back().content->find("refused to run this: not that"), std::string::npos)
      << *seen.back().content;
  EXPECT_TRUE(result.messages[4].from_human);
}

TEST(Team, AlwaysOnAnLlmAgentLetsThePersonReplyOrExit) {
  TeamAgent coder = Llm("coder");
  coder.human_input_mode = HumanInputMode::kAlways;
  Team team({coder, Llm("critic")});
  team.model("critic").replies = {Text("Try harder.")};
  team.model("coder").replies = {Text("model's own answer")};
  team.human.answers = {{HumanAnswer::kReply, "typed by the person"}, {HumanAnswer::kExit, ""}};
  TeamResult result = team.Run();
  EXPECT_EQ(result.stop, TeamStop::kHumanExit);
  EXPECT_EQ(Speakers(result), "user coder critic");
  EXPECT_EQ(result.messages[1].content, "typed by the person");
  EXPECT_TRUE(result.messages[1].from_human);
  EXPECT_TRUE(team.model("coder").requests.empty()) << "the person's reply replaced the model's";
}

TEST(Team, TerminateModeAsksOnlyWhenTheChatWouldEnd) {
  TeamAgent executor = Executor();
  executor.human_input_mode = HumanInputMode::kTerminate;
  executor.max_consecutive_auto_reply = 1;
  Team team({Llm("coder"), executor});
  team.model("coder").replies = {Text("```python\n1\n```"), Text("```python\n2\n```"),
                                 Text("TERMINATE"), Text("Really done. TERMINATE")};
  // At the limit: Enter lets the executor go on. At TERMINATE: text continues,
  // Enter ends.
  team.human.answers = {
      {HumanAnswer::kAuto, ""}, {HumanAnswer::kReply, "also print 3"}, {HumanAnswer::kAuto, ""}};
  TeamResult result = team.Run();
  EXPECT_EQ(result.stop, TeamStop::kTerminated);
  EXPECT_EQ(team.code.calls.size(), 2u);
  ASSERT_EQ(team.human.prompts.size(), 3u) << "not asked before the first, unlimited, execution";
  EXPECT_EQ(Speakers(result), "user coder executor coder executor coder executor coder");
  EXPECT_EQ(result.messages[6].content, "also print 3")
      << "no code to refuse: the person's words as they are";
  EXPECT_TRUE(result.messages[6].from_human);
}

}  // namespace
}  // namespace sbx::agent
