// The team file loader: what a good file becomes, and each bad input refused
// with its field.
#include "src/agent/team_file.h"

#include <gtest/gtest.h>

namespace sbx::agent {
namespace {

constexpr char kGood[] = R"({
  "pattern": "round_robin", "initial_agent": "planner", "max_rounds": 12, "image": "sklearn",
  "agents": [
    {"name": "planner", "description": "plans", "system_message": "Plan.", "model": "m1",
     "temperature": 0.5, "max_consecutive_auto_reply": 3},
    {"name": "coder", "scripted_model": "coder.json", "base_url": "http://127.0.0.1:1/v1"},
    {"name": "executor", "description": "runs code", "executes_code": true,
     "human_input_mode": "ALWAYS"}
  ]})";

TEST(TeamFile, ReadsEveryField) {
  auto spec = ParseTeam(kGood, "/teams");
  ASSERT_TRUE(spec) << spec.error().message;
  EXPECT_EQ(spec->pattern, TeamPattern::kRoundRobin);
  EXPECT_EQ(spec->initial_agent, "planner");
  EXPECT_EQ(spec->max_rounds, 12);
  EXPECT_EQ(spec->image, "sklearn");
  ASSERT_EQ(spec->agents.size(), 3u);
  EXPECT_EQ(spec->agents[0].system_message, "Plan.");
  EXPECT_EQ(spec->agents[0].model, "m1");
  EXPECT_EQ(spec->agents[0].temperature, 0.5);
  EXPECT_EQ(spec->agents[0].max_consecutive_auto_reply, 3);
  EXPECT_EQ(spec->agents[0].human_input_mode, HumanInputMode::kNever);
  EXPECT_EQ(spec->agents[1].scripted_model,
            "/teams/coder.json");  // beside the team file
  EXPECT_EQ(spec->agents[1].base_url, "http://127.0.0.1:1/v1");
  EXPECT_EQ(spec->agents[1].max_consecutive_auto_reply, 100);  // AG2's default
  EXPECT_TRUE(spec->agents[2].executes_code);
  EXPECT_EQ(spec->agents[2].human_input_mode, HumanInputMode::kAlways);
  EXPECT_EQ(InitialSpeaker(*spec), 0u);

  auto two = ParseTeam(
      R"({"pattern": "two_agent", "agents": [{"name": "executor", "executes_code": true},
                                                             {"name": "coder"}]})",
      "");
  ASSERT_TRUE(two) << two.error().message;
  EXPECT_EQ(InitialSpeaker(*two), 1u) << "two_agent starts with the coder answering the task";
}

TEST(TeamFile, EachBadInputIsRefusedNamingTheFieldAndTheFix) {
  struct Case {
    const char* text;
    std::vector<const char*> expect;  // all in the message
  };
  const std::vector<Case> cases = {
      {R"({"agents": [{"name": "a"}], "colour": "red"})", {"colour: unknown key", "allowed here"}},
      {R"({"agents": [{"name": "a", "modle": "x"}]})", {"agents[0].modle: unknown key"}},
      {R"({"agents": [{"name": "a"}], "max_rounds": "12"})",
       {"max_rounds: expected a whole number"}},
      {R"({"agents": [{"name": "a"}], "max_rounds": -3})", {"max_rounds", "1..1000", "-3"}},
      {R"({"agents": [{"name": "a"}], "max_rounds": 0})", {"max_rounds"}},
      {R"({"agents": [{"name": "a", "temperature": "hot"}]})", {"agents[0].temperature", "0..2"}},
      {R"({"agents": [{"name": "a", "executes_code": "yes"}]})",
       {"agents[0].executes_code", "true or false"}},
      {R"({"agents": [{"name": 7}]})", {"agents[0].name: expected a string"}},
      {R"({"agents": [{"description": "x"}]})", {"agents[0].name: missing"}},
      {R"({"agents": [{"name": "the coder"}]})", {"agents[0].name", "letters, digits"}},
      {R"({"agents": [{"name": "user"}]})", {"agents[0].name", "task's speaker"}},
      {R"({"agents": [{"name": "a"}, {"name": "a"}]})", {"agents[1].name", "unique"}},
      {R"({"agents": [{"name": "a"}], "initial_agent": "b"})",
       {"initial_agent", "\"b\" is not an agent", "a"}},
      {R"({"agents": [{"name": "a"}, {"name": "x", "executes_code": true}, {"name": "y", "executes_code": true}]})",
       {"agents: more than one executor", "x, y", "keep executes_code on one"}},
      {R"({"agents": [{"name": "x", "executes_code": true}]})",
       {"agents: no LLM agent", "add one"}},
      {R"({"agents": [{"name": "x", "executes_code": true, "model": "m"}]})",
       {"agents[0].model", "executor", "has no model"}},
      {R"({"agents": [{"name": "a", "human_input_mode": "sometimes"}]})",
       {"agents[0].human_input_mode", "\"NEVER\", \"ALWAYS\" or \"TERMINATE\""}},
      {R"({"agents": [{"name": "a", "max_consecutive_auto_reply": -1}]})",
       {"agents[0].max_consecutive_auto_reply", "0..10000"}},
      {R"({"agents": [{"name": "a"}], "pattern": "swarm"})",
       {"pattern", "\"round_robin\" or \"two_agent\""}},
      {R"({"agents": [{"name": "a"}, {"name": "b"}, {"name": "c"}], "pattern": "two_agent"})",
       {"pattern: two_agent needs exactly two agents", "round_robin"}},
      {R"({"agents": []})", {"agents: empty"}},
      {R"({"agents": [{"name": "a"}], "image": 3})", {"image: expected a string"}},
      {R"({"agents": [{"name": "a"}], "image": "/var/images/x"})", {"image", "image name", "a-z"}},
      {R"({"agents": [{"name": "a"}], "image": "cafe"})", {"image", "not all hex digits"}},
      {R"({"pattern": "round_robin"})", {"agents: missing"}},
      {R"({"agents": [{"name": "a"}], "agents": [{"name": "b"}]})", {"agents: duplicate key"}},
      {R"([1, 2])", {"team file", "an object"}},
      {R"({"agents": [)", {"not valid JSON"}},
  };
  for (const Case& c : cases) {
    auto spec = ParseTeam(c.text, "");
    ASSERT_FALSE(spec) << c.text;
    for (const char* part : c.expect) {
      EXPECT_NE(spec.error().message.find(part), std::string::npos)
          << c.text << "\n  message: " << spec.error().message << "\n  lacks: " << part;
    }
  }
}

TEST(TeamFile, MissingFileNamesTheFlag) {
  auto spec = LoadTeamFile("/nonexistent/team.json");
  ASSERT_FALSE(spec);
  EXPECT_NE(spec.error().message.find("--team /nonexistent/team.json"), std::string::npos);
}

}  // namespace
}  // namespace sbx::agent
