// The agent loop, in both modes, with its transcript and the final copy-out.
#include "src/agent/agent.h"

#include <fnmatch.h>

#include <chrono>
#include <cstdio>

#include "src/agent/code_blocks.h"

namespace sbx::agent {
namespace {

using nlohmann::json;

void Say(const AgentConfig& config, const std::string& line) {
  if (config.progress) config.progress(line);
}

// What a tool call was for, in a few words: its name and the start of its main argument.
std::string Summary(const llm::ToolCall& call) {
  auto args = json::parse(call.arguments_json, nullptr, false);
  std::string detail;
  if (args.is_object()) {
    for (const char* key : {"path", "command", "code"}) {
      if (args.contains(key) && args[key].is_string()) {
        detail = args[key].get<std::string>();
        break;
      }
    }
  }
  auto newline = detail.find('\n');
  if (newline != std::string::npos) detail = detail.substr(0, newline) + " ...";
  if (detail.size() > 60) detail = detail.substr(0, 57) + "...";
  return detail.empty() ? call.name : call.name + " " + detail;
}

json MessageEvent(int turn, const llm::Message& message) {
  json out = llm::MessageToJson(message);
  out["turn"] = turn;
  out["speaker"] = message.role;
  return out;
}

// Runs the model's reply; returns the messages that answer it, or none when it is final.
std::vector<llm::Message> Answer(const llm::Message& reply, const AgentConfig& config, ToolRunner& tools,
                                 Transcript& transcript, int turn, AgentResult& result) {
  std::vector<llm::Message> answers;
  if (config.mode == AgentMode::kTools) {
    for (const llm::ToolCall& call : reply.tool_calls) {
      ToolRun run = tools.Run(call);
      result.executions += run.executed;
      Say(config, "  " + Summary(call) + ": " + run.ending + (run.executed ? ", " + SecondsText(run.seconds) : ""));
      transcript.Add("tool_result", {{"turn", turn}, {"tool", call.name}, {"tool_call_id", call.id},
                                     {"arguments", call.arguments_json}, {"failed", run.failed},
                                     {"ending", run.ending}, {"seconds", run.seconds}, {"content", run.text}});
      answers.push_back({"tool", run.text, {}, call.id, ""});
    }
    return answers;
  }
  const std::string content = reply.content.value_or("");
  auto blocks = ExtractCodeBlocks(content);
  if (blocks.empty()) return answers;  // no code: the reply is the answer
  ToolRun run = tools.RunBlocks(blocks);
  result.executions += run.executed;
  Say(config, "  " + std::to_string(blocks.size()) + " code block(s): " + run.ending +
                  (run.executed ? ", " + SecondsText(run.seconds) : ""));
  json code = json::array();
  for (const auto& block : blocks) code.push_back({{"language", block.language}, {"source", block.source}});
  transcript.Add("code_result", {{"turn", turn}, {"blocks", code}, {"failed", run.failed},
                                 {"ending", run.ending}, {"seconds", run.seconds}, {"content", run.text}});
  answers.push_back({"user", "Output of your code:\n" + run.text, {}, "", ""});
  return answers;
}

}  // namespace

const char* AgentEndName(AgentEnd end) {
  switch (end) {
    case AgentEnd::kFinalAnswer: return "final_answer";
    case AgentEnd::kMaxTurns: return "max_turns";
    case AgentEnd::kError: return "error";
  }
  return "unknown";
}

std::vector<std::string> MissingOutputs(const std::vector<std::string>& requests, const CopyOutResult& copied) {
  std::vector<std::string> missing;
  for (const std::string& request : requests) {
    bool found = false;
    for (const CopiedEntry& entry : copied.entries) {
      if (entry.status != CopyStatus::kCopied) continue;
      if (entry.path == request || entry.path.rfind(request + "/", 0) == 0 ||
          ::fnmatch(request.c_str(), entry.path.c_str(), FNM_PATHNAME | FNM_PERIOD) == 0) {
        found = true;
        break;
      }
    }
    if (!found) missing.push_back(request);
  }
  return missing;
}

std::string TaskMessage(const AgentConfig& config) {
  std::string text = config.task;
  if (!config.input_files.empty()) {
    text += "\n\nInput files in the workspace (your working directory):";
    for (const auto& file : config.input_files) text += "\n- " + file;
  }
  if (!config.expected_outputs.empty()) {
    text += "\n\nWrite these outputs in the workspace; they are copied back when you finish:";
    for (const auto& file : config.expected_outputs) text += "\n- " + file;
  }
  return text;
}

// A single agent is a team of one: the task comes from "user", replies from "assistant".

std::string DefaultInstructions(AgentMode mode, const std::vector<std::string>& network_allow) {
  std::string network = "There is no network: do not try to install packages. ";
  if (!network_allow.empty()) {
    network = "The network reaches only these hosts (anything else is blocked by policy, which tool "
              "results say):";
    for (const std::string& rule : network_allow) network += " " + rule;
    network += ". ";
  }
  std::string text =
      "You are a careful data analyst with a Linux sandbox. Python 3 with numpy, pandas, "
      "matplotlib (Agg backend; figures left open are saved as PNG files) and scipy is installed; "
      "bash and coreutils too. " + network + "Your working "
      "directory is the workspace, where the input files are and where outputs must be written. "
      "Look at the data before you analyse it, check your results, and keep printed output short.";
  if (mode == AgentMode::kTools) {
    text += " Use the tools to run code and handle files. When the task is done, reply with a short "
            "final answer without calling a tool.";
  } else {
    text += " To run code, reply with one or more fenced blocks (```python or ```bash); their output "
            "comes back in the next message. Python state persists between replies. When the task is "
            "done, reply with a short final answer and the word TERMINATE, without code.";
  }
  return text;
}

AgentResult RunAgent(llm::LlmClient& llm, AgentSession& session, const AgentConfig& config,
                     Transcript& transcript) {
  AgentResult result;
  llm::ChatRequest request;
  request.model = config.model;
  if (config.mode == AgentMode::kTools) request.tools = AgentToolSpecs();
  request.messages.push_back(
      {"system", config.instructions.empty() ? DefaultInstructions(config.mode, config.network_allow) : config.instructions, {}, "", ""});
  request.messages.push_back({"user", TaskMessage(config), {}, "", ""});
  transcript.Add("start", {{"model", config.model},
                           {"mode", config.mode == AgentMode::kTools ? "tools" : "text"},
                           {"max_turns", config.max_turns}});
  for (const auto& message : request.messages) transcript.Add("message", MessageEvent(0, message));

  result.end = AgentEnd::kMaxTurns;
  while (result.turns < config.max_turns) {
    int turn = ++result.turns;
    auto asked = std::chrono::steady_clock::now();
    auto response = llm.Complete(request);
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - asked).count();
    if (!response) {
      result.end = AgentEnd::kError;
      result.error = response.error().message;
      Say(config, "turn " + std::to_string(turn) + ": the model request failed: " + result.error);
      transcript.Add("llm_error", {{"turn", turn}, {"error", result.error}, {"seconds", seconds}});
      break;
    }
    result.usage += response->usage;
    const llm::Message& reply = response->message;
    Say(config, "turn " + std::to_string(turn) + ": model answered in " + SecondsText(seconds) +
                    (reply.tool_calls.empty() ? "" : ", " + std::to_string(reply.tool_calls.size()) + " tool call(s)"));
    json event = MessageEvent(turn, reply);
    event["seconds"] = seconds;
    event["usage"] = {{"prompt_tokens", response->usage.prompt_tokens},
                      {"completion_tokens", response->usage.completion_tokens},
                      {"total_tokens", response->usage.total_tokens}};
    transcript.Add("message", event);
    request.messages.push_back(reply);
    std::vector<llm::Message> answers = Answer(reply, config, session.tools, transcript, turn, result);
    bool text_final = config.mode == AgentMode::kText && SaysTerminate(reply.content.value_or(""));
    if (answers.empty() || text_final) {
      result.end = AgentEnd::kFinalAnswer;
      result.final_answer = reply.content.value_or("");
      break;
    }
    for (auto& answer : answers) request.messages.push_back(std::move(answer));
  }

  if (!config.output_dir.empty() && !config.expected_outputs.empty()) {
    auto copied = session.copy_outputs(config.expected_outputs, config.output_dir);
    if (copied) {
      result.outputs = std::move(*copied);
    } else {
      result.copy_error = copied.error().message;
    }
  }
  if (!config.expected_outputs.empty()) result.missing_outputs = MissingOutputs(config.expected_outputs, result.outputs);
  json outputs = json::array();
  for (const auto& entry : result.outputs.entries) {
    outputs.push_back({{"path", entry.path}, {"status", CopyStatusName(entry.status)}, {"bytes", entry.size}});
  }
  transcript.Add("end", {{"end", AgentEndName(result.end)},
                         {"turns", result.turns},
                         {"executions", result.executions},
                         {"error", result.error},
                         {"final_answer", result.final_answer},
                         {"outputs", outputs},
                         {"outputs_unlisted", result.outputs.unlisted},
                         {"copy_error", result.copy_error},
                         {"missing_outputs", result.missing_outputs},
                         {"usage", {{"prompt_tokens", result.usage.prompt_tokens},
                                    {"completion_tokens", result.usage.completion_tokens},
                                    {"total_tokens", result.usage.total_tokens}}}});
  return result;
}

}  // namespace sbx::agent
