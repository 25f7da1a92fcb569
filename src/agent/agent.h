// The agent loop: give a model a task and a sandboxed session, let it write and run code
// until it answers, and bring the requested files back.
//
// Usage:
//   AgentConfig config;  config.task = "..."; config.expected_outputs = {"report.md"};
//   AgentResult result = RunAgent(llm, session_tools, config, transcript);
//
// Modes: kTools (OpenAI tool calling: run_python, run_shell, read_file, write_file,
// list_files) and kText (the model writes fenced ```python / ```bash blocks; their output is
// the next user message; TERMINATE or a reply without code ends it). The loop ends with a
// final answer, at max_turns (reported as such), or on an unrecoverable error (the LLM
// client's, after its retries); in every case the outputs produced so far are copied back.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "sandbox/workspace/copy_out.h"
#include "src/agent/agent_tools.h"
#include "src/agent/transcript.h"
#include "src/llm/llm_client.h"

namespace sbx::agent {

enum class AgentMode { kTools, kText };

struct AgentConfig {
  std::string model;
  std::string instructions;                  // the system prompt; empty: DefaultInstructions()
  std::string task;
  std::vector<std::string> input_files;      // workspace paths staged for the task (named in the prompt)
  // The network allowlist's rules as written ("pypi.org", "*.example.com:443"); empty: no
  // network. DefaultInstructions() tells the model which it is.
  std::vector<std::string> network_allow;
  std::vector<std::string> expected_outputs; // workspace paths or patterns to copy back
  std::string output_dir;                    // host directory for them; empty: none copied
  int max_turns = 25;
  AgentMode mode = AgentMode::kTools;
  size_t tool_result_bytes = 16 * 1024;
  // Progress a person can follow (each turn, each execution with its duration and ending);
  // the CLI prints it to stderr. May be empty.
  std::function<void(const std::string&)> progress;
};

enum class AgentEnd { kFinalAnswer, kMaxTurns, kError };
const char* AgentEndName(AgentEnd end);

struct AgentResult {
  AgentEnd end = AgentEnd::kError;
  std::string final_answer;
  std::string error;  // kError: what went wrong
  int turns = 0;      // model calls made
  int executions = 0; // tool calls or code replies that ran something in the sandbox
  llm::Usage usage;
  CopyOutResult outputs;
  std::string copy_error;  // copy-out refused or failed
  std::vector<std::string> missing_outputs;  // expected outputs of which nothing was copied
};

// What the loop needs from the session: a runner for tools, and copy-out once it is over
// (which ends the session: copy-out runs only when its processes are dead).
struct AgentSession {
  ToolRunner& tools;
  std::function<Result<CopyOutResult>(const std::vector<std::string>&, const std::string&)> copy_outputs;
};

// The first user message: the task, the input files and the outputs to write.
std::string TaskMessage(const AgentConfig& config);

std::string DefaultInstructions(AgentMode mode, const std::vector<std::string>& network_allow = {});

// Requests (a path, a directory or a pattern in the last component) of which no file came back.
std::vector<std::string> MissingOutputs(const std::vector<std::string>& requests, const CopyOutResult& copied);

AgentResult RunAgent(llm::LlmClient& llm, AgentSession& session, const AgentConfig& config,
                     Transcript& transcript);

}  // namespace sbx::agent
