// The team's turn loop: who speaks next, when a person is asked, when the chat
// stops.
#include "src/agent/team.h"

#include <chrono>

#include "src/agent/agent.h"
#include "src/agent/agent_tools.h"
#include "src/agent/approval.h"
#include "src/agent/code_blocks.h"

namespace sbx::agent {
namespace {

using nlohmann::json;

constexpr char kNoCode[] =
    "No code blocks found in the message to run. Reply "
    "with the code in fenced blocks "
    "(```python or ```bash).";

std::string CodeText(const std::vector<executor::CodeBlock>& blocks) {
  std::string code;
  for (const auto& block : blocks) code += "[" + block.language + "]\n" + block.source;
  return code;
}

json BlocksJson(const std::vector<executor::CodeBlock>& blocks) {
  json out = json::array();
  for (const auto& block : blocks)
    out.push_back({{"language", block.language}, {"source", block.source}});
  return out;
}

json UsageJson(const llm::Usage& usage) {
  return {{"prompt_tokens", usage.prompt_tokens},
          {"completion_tokens", usage.completion_tokens},
          {"total_tokens", usage.total_tokens}};
}

class TeamRun {
 public:
  TeamRun(const TeamSpec& spec, TeamMembers& members, Transcript& transcript)
      : spec_(spec),
        members_(members),
        transcript_(transcript),
        auto_replies_(spec.agents.size(), 0),
        tools_approver_(MakeApprover(ApprovalMode::kNever, stdin, stderr).value()) {}

  TeamResult Run(const std::string& task) {
    json names = json::array();
    for (const auto& agent : spec_.agents) {
      names.push_back({{"name", agent.name},
                       {"description", agent.description},
                       {"executes_code", agent.executes_code},
                       {"model", agent.model},
                       {"human_input_mode", HumanInputModeName(agent.human_input_mode)}});
    }
    transcript_.Add("start", {{"team", names},
                              {"pattern", spec_.pattern == TeamPattern::kTwoAgent ? "two_agent"
                                                                                  : "round_robin"},
                              {"max_rounds", spec_.max_rounds}});
    Add("user", task, false, {});
    size_t speaker = InitialSpeaker(spec_);
    for (;; speaker = (speaker + 1) % spec_.agents.size()) {
      const TeamAgent& agent = spec_.agents[speaker];
      result_.stopped_at = agent.name;
      if (result_.rounds >= spec_.max_rounds) return Stop(TeamStop::kMaxRounds);
      const TeamMessage last = result_.messages.back();  // a copy: replies grow the list
      const bool terminating = last.speaker != "user" && SaysTerminate(last.content);
      const bool over_limit = auto_replies_[speaker] >= agent.max_consecutive_auto_reply;
      const int round = result_.rounds + 1;
      Say("round " + std::to_string(round) + ": " + agent.name + " speaks");
      if (Asks(agent.human_input_mode, terminating, over_limit)) {
        HumanAnswer answer = AskHuman(speaker, last.content);
        if (answer.kind == HumanAnswer::kExit) return Stop(TeamStop::kHumanExit);
        if (answer.kind == HumanAnswer::kReply) {
          auto_replies_[speaker] = 0;
          HumanReply(speaker, round, last.content, answer.text);
          continue;
        }
        if (terminating) return Stop(TeamStop::kTerminated);
      } else if (agent.human_input_mode == HumanInputMode::kNever) {
        if (terminating) return Stop(TeamStop::kTerminated);
        if (over_limit) return Stop(TeamStop::kMaxConsecutiveAutoReply);
      }
      ++auto_replies_[speaker];
      if (agent.executes_code) {
        ExecutorReply(speaker, round, last.content);
      } else if (!ModelReply(speaker, round)) {
        return Stop(TeamStop::kModelError);
      }
    }
  }

 private:
  static bool Asks(HumanInputMode mode, bool terminating, bool over_limit) {
    if (mode == HumanInputMode::kAlways) return true;
    return mode == HumanInputMode::kTerminate && (terminating || over_limit);
  }

  void Say(const std::string& line) {
    if (members_.progress) members_.progress(line);
  }

  void Add(const std::string& speaker, const std::string& content, bool from_human, json event) {
    result_.messages.push_back({speaker, content, from_human});
    if (speaker != "user") ++result_.rounds;
    event["round"] = result_.rounds;
    event["speaker"] = speaker;
    event["content"] = content;
    if (from_human) event["from_human"] = true;
    transcript_.Add("message", std::move(event));
  }

  HumanAnswer AskHuman(size_t speaker, const std::string& message) {
    const TeamAgent& agent = spec_.agents[speaker];
    HumanPrompt prompt{agent.name, agent.executes_code, message, ""};
    if (agent.executes_code) prompt.code = CodeText(ExtractCodeBlocks(message));
    HumanAnswer answer = members_.human->Ask(prompt);
    static const char* kKinds[] = {"auto", "reply", "exit"};
    transcript_.Add("human", {{"round", result_.rounds + 1},
                              {"agent", agent.name},
                              {"answer", kKinds[answer.kind]},
                              {"text", answer.text}});
    return answer;
  }

  // The person answered in the agent's place. When the executor had code to
  // run, that is a refusal: the blocks are recorded as not run and the coder
  // reads why.
  void HumanReply(size_t speaker, int round, const std::string& message, const std::string& text) {
    const TeamAgent& agent = spec_.agents[speaker];
    auto blocks =
        agent.executes_code ? ExtractCodeBlocks(message) : std::vector<executor::CodeBlock>{};
    if (blocks.empty()) {
      Say("  " + agent.name + ": the person replied");
      Add(agent.name, text, true, {});
      return;
    }
    std::string content = "[not run] the user refused to run this: " + text;
    Say("  " + agent.name + ": " + std::to_string(blocks.size()) +
        " code block(s) refused by the user");
    result_.executions.push_back(
        {agent.name, blocks, false, std::nullopt, "refused by the user", content});
    transcript_.Add("code_result", {{"round", round},
                                    {"speaker", agent.name},
                                    {"blocks", BlocksJson(blocks)},
                                    {"ran", false},
                                    {"ending", "refused by the user"},
                                    {"content", content}});
    Add(agent.name, content, true, {});
  }

  // AG2's executor reply: "exitcode: N (execution succeeded|failed)" and the
  // output.
  void ExecutorReply(size_t speaker, int round, const std::string& message) {
    const TeamAgent& agent = spec_.agents[speaker];
    auto blocks = ExtractCodeBlocks(message);
    if (blocks.empty()) {
      Say("  " + agent.name + ": no code to run");
      Add(agent.name, kNoCode, false, {});
      return;
    }
    ToolRunner tools(*members_.code, *tools_approver_, members_.result_bytes);
    ToolRun run = tools.RunBlocks(blocks);
    int exit_code = run.exit_code.value_or(1);
    std::string content = "exitcode: " + std::to_string(exit_code) +
                          (exit_code == 0 ? " (execution succeeded)" : " (execution failed)") +
                          "\nCode output:\n" + run.text;
    Say("  " + agent.name + ": " + std::to_string(blocks.size()) + " code block(s): " + run.ending +
        (run.executed ? ", " + SecondsText(run.seconds) : ""));
    result_.executions.push_back(
        {agent.name, blocks, run.executed, run.exit_code, run.ending, content});
    json event = {{"round", round},      {"speaker", agent.name}, {"blocks", BlocksJson(blocks)},
                  {"ran", run.executed}, {"ending", run.ending},  {"seconds", run.seconds},
                  {"content", content}};
    if (run.exit_code) event["exit_code"] = *run.exit_code;
    transcript_.Add("code_result", std::move(event));
    Add(agent.name, content, false, {});
  }

  // The agent sees the chat as AG2 shows it: its own messages as the
  // assistant's, everyone else's as the user's, named by speaker.
  bool ModelReply(size_t speaker, int round) {
    const TeamAgent& agent = spec_.agents[speaker];
    llm::ChatRequest request;
    request.model = agent.model;
    request.temperature = agent.temperature;
    request.messages.push_back({"system",
                                agent.system_message.empty()
                                    ? DefaultInstructions(AgentMode::kText, spec_.network_allow)
                                    : agent.system_message,
                                {},
                                "",
                                ""});
    for (const TeamMessage& message : result_.messages) {
      if (message.speaker == agent.name) {
        request.messages.push_back({"assistant", message.content, {}, "", ""});
      } else {
        request.messages.push_back(
            {"user", message.content, {}, "", message.speaker == "user" ? "" : message.speaker});
      }
    }
    auto asked = std::chrono::steady_clock::now();
    auto response = members_.models[speaker]->Complete(request);
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - asked).count();
    if (!response) {
      result_.error = response.error().message;
      Say("  " + agent.name + ": the model request failed: " + result_.error);
      transcript_.Add("llm_error", {{"round", round},
                                    {"speaker", agent.name},
                                    {"error", result_.error},
                                    {"seconds", seconds}});
      return false;
    }
    result_.usage += response->usage;
    Say("  " + agent.name + ": answered in " + SecondsText(seconds));
    Add(agent.name, response->message.content.value_or(""), false,
        {{"seconds", seconds}, {"usage", UsageJson(response->usage)}});
    return true;
  }

  TeamResult Stop(TeamStop stop) {
    result_.stop = stop;
    Say("stopped: " + std::string(TeamStopName(stop)) + " (at " + result_.stopped_at + "'s turn)");
    transcript_.Add("end", {{"stop", TeamStopName(stop)},
                            {"stopped_at", result_.stopped_at},
                            {"rounds", result_.rounds},
                            {"executions", result_.executions.size()},
                            {"error", result_.error},
                            {"usage", UsageJson(result_.usage)}});
    return std::move(result_);
  }

  const TeamSpec& spec_;
  TeamMembers& members_;
  Transcript& transcript_;
  std::vector<int> auto_replies_;             // consecutive auto replies, per agent
  std::unique_ptr<Approver> tools_approver_;  // the person decides before the runner is asked
  TeamResult result_;
};

}  // namespace

const char* HumanInputModeName(HumanInputMode mode) {
  switch (mode) {
    case HumanInputMode::kNever:
      return "NEVER";
    case HumanInputMode::kAlways:
      return "ALWAYS";
    case HumanInputMode::kTerminate:
      return "TERMINATE";
  }
  return "unknown";
}

const char* TeamStopName(TeamStop stop) {
  switch (stop) {
    case TeamStop::kTerminated:
      return "terminated";
    case TeamStop::kMaxRounds:
      return "max_rounds";
    case TeamStop::kMaxConsecutiveAutoReply:
      return "max_consecutive_auto_reply";
    case TeamStop::kModelError:
      return "model_error";
    case TeamStop::kHumanExit:
      return "human_exit";
  }
  return "unknown";
}

size_t InitialSpeaker(const TeamSpec& spec) {
  for (size_t i = 0; i < spec.agents.size(); ++i) {
    if (spec.agents[i].name == spec.initial_agent) return i;
  }
  if (spec.pattern == TeamPattern::kTwoAgent) {
    for (size_t i = 0; i < spec.agents.size(); ++i) {
      if (!spec.agents[i].executes_code) return i;
    }
  }
  return 0;
}

TeamResult RunTeam(const TeamSpec& spec, TeamMembers& members, const std::string& task,
                   Transcript& transcript) {
  return TeamRun(spec, members, transcript).Run(task);
}

}  // namespace sbx::agent
