// Teams of agents taking turns on one task, as AG2's group chat and two-agent
// chat: LLM agents that write (a planner, a coder) and at most one executor
// that runs the code blocks of the message it answers in the team's one
// sandboxed session.
//
// Usage:
//   1. TeamSpec spec = LoadTeamFile(path).value();   // or built in code;
//   ValidateTeam() checks it
//   2. Give each LLM agent a client (same order as spec.agents; nullptr for the
//   executor), a
//      CodeExecutor for the executor, and a HumanInput when an agent's mode
//      asks a person.
//   3. TeamResult result = RunTeam(spec, members, task, transcript);
//   The result holds every message with its speaker, every execution (run or
//   refused) and why the conversation stopped.
//
// Turns: the task opens the conversation (speaker "user"); then the pattern
// picks who replies (round robin from `initial_agent`; two_agent alternates its
// two). Before an agent replies, it checks the message it answers as AG2's
// check_termination_and_human_reply does:
//   NEVER      TERMINATE in the message ends the chat; so does reaching the
//   agent's
//              max_consecutive_auto_reply.
//   ALWAYS     the person is asked before every reply of the agent: Enter lets
//   the agent reply
//              (or, on a TERMINATE message, ends the chat), text is sent as the
//              agent's reply, "exit" ends the chat. For the executor, Enter (or
//              y) runs the code and text refuses it; the refusal goes back to
//              the coder.
//   TERMINATE  the person is asked only when the chat would end (TERMINATE, or
//   the auto-reply
//              limit); Enter ends it on TERMINATE and lets the agent go on past
//              the limit.
// A person's reply resets the agent's consecutive auto-reply count. max_rounds
// bounds the replies (the task is not one).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "src/agent/human_input.h"
#include "src/agent/transcript.h"
#include "src/executor/code_executor.h"
#include "src/llm/llm_client.h"

namespace sbx::agent {

enum class HumanInputMode { kNever, kAlways, kTerminate };
const char* HumanInputModeName(HumanInputMode mode);

enum class TeamPattern { kRoundRobin, kTwoAgent };

struct TeamAgent {
  std::string name;  // [A-Za-z0-9_-], as the Chat Completions "name" field requires
  std::string description;
  std::string system_message;  // empty: DefaultInstructions(kText)
  bool executes_code = false;  // the executor: no model, runs the blocks it is sent
  // LLM agents only. An empty model means the run's default (the CLI's
  // SBX_MODEL).
  std::string model;
  std::string base_url;  // empty: the run's default
  std::optional<double> temperature;
  std::string scripted_model;  // a ScriptedModel file replaces the LLM (offline
                               // runs, tests)
  HumanInputMode human_input_mode = HumanInputMode::kNever;
  int max_consecutive_auto_reply = 100;  // AG2's default
};

struct TeamSpec {
  std::vector<TeamAgent> agents;
  TeamPattern pattern = TeamPattern::kRoundRobin;
  std::string initial_agent;  // empty: the first agent (two_agent: the first LLM agent)
  int max_rounds = 20;
  // The image variant the session runs in (`sbx image build --name`); empty: the default.
  std::string image;
  // Told to LLM agents without a system message, as DefaultInstructions does.
  std::vector<std::string> network_allow;
};

// The structural rules a team must keep (the loader applies them; RunTeam
// trusts them): names unique and well formed, at least one LLM agent, at most
// one executor, initial_agent known, two_agent with exactly two agents,
// max_rounds >= 1, max_consecutive_auto_reply >= 0.
Result<void> ValidateTeam(const TeamSpec& spec);

// Index of the agent who speaks first.
size_t InitialSpeaker(const TeamSpec& spec);

// What a run needs besides the spec. `models[i]` answers for spec.agents[i]
// (nullptr for the executor); `code` runs the executor's blocks; `human` is
// asked per the agents' modes (may be null only when every mode is NEVER).
// `progress` gets a line per turn (who speaks).
struct TeamMembers {
  std::vector<llm::LlmClient*> models;
  executor::CodeExecutor* code = nullptr;
  HumanInput* human = nullptr;
  size_t result_bytes = 16 * 1024;
  std::function<void(const std::string&)> progress;
};

struct TeamMessage {
  std::string speaker;  // an agent's name, or "user" for the task
  std::string content;
  bool from_human = false;  // typed by the person in the agent's place
};

struct TeamExecution {
  std::string agent;  // the executor's name
  std::vector<executor::CodeBlock> blocks;
  bool ran = false;                             // false: refused by the person, or no code to run
  std::optional<int> exit_code = std::nullopt;  // when it ran and exited
  std::string ending;                           // "exit code 0", "refused by the user", ...
  std::string output;                           // the text sent back to the team
};

enum class TeamStop { kTerminated, kMaxRounds, kMaxConsecutiveAutoReply, kModelError, kHumanExit };
const char* TeamStopName(TeamStop stop);

struct TeamResult {
  TeamStop stop = TeamStop::kModelError;
  std::string stopped_at;  // the agent whose turn it was when the chat stopped
  std::string error;       // kModelError: the client's error
  int rounds = 0;          // replies made (the task excluded)
  std::vector<TeamMessage> messages;
  std::vector<TeamExecution> executions;
  llm::Usage usage;
};

TeamResult RunTeam(const TeamSpec& spec, TeamMembers& members, const std::string& task,
                   Transcript& transcript);

}  // namespace sbx::agent
