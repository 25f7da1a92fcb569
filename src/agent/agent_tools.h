// The tools the agent offers the model, and how each one runs through the executor.
//
// run_python (stateful), run_shell, read_file, write_file and list_files all run inside the
// session's sandbox: file tools are small Python programs with the path and content passed as
// string literals, so they see exactly what the code sees and reach nothing else. Every
// result the model gets is text bounded to `result_bytes` (head and tail kept, the cut
// stated) and says how the execution ended.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "src/agent/approval.h"
#include "src/executor/code_executor.h"
#include "src/llm/chat_types.h"

namespace sbx::agent {

std::vector<llm::ToolSpec> AgentToolSpecs();

// `text` cut to at most about `max_bytes`: head and tail kept, with a line saying what was cut.
std::string Bounded(const std::string& text, size_t max_bytes);

// A result as the model reads it: how it ended, the output, the value, files and figures.
std::string DescribeResult(const executor::CodeResult& result, size_t max_bytes);

struct ToolRun {
  std::string text;       // what goes back to the model
  bool executed = false;  // something ran in the sandbox
  bool failed = false;    // refused, invalid, or the code failed
  std::string ending;     // "exit code 0", "timed out ...", "refused", "invalid call"
  double seconds = 0;     // wall time of the execution
  std::optional<int> exit_code = std::nullopt;  // when the code ran and exited
};

// "1.2 s", for progress lines.
std::string SecondsText(double seconds);

class ToolRunner {
 public:
  ToolRunner(executor::CodeExecutor& executor, Approver& approver, size_t result_bytes)
      : executor_(executor), approver_(approver), result_bytes_(result_bytes) {}

  // One tool call; unknown tools, bad arguments and refusals are text for the model.
  ToolRun Run(const llm::ToolCall& call);
  // Text mode: the fenced blocks of one reply, in order, after approval.
  ToolRun RunBlocks(const std::vector<executor::CodeBlock>& blocks);

 private:
  ToolRun Execute(const std::string& what, const std::vector<executor::CodeBlock>& blocks);

  executor::CodeExecutor& executor_;
  Approver& approver_;
  size_t result_bytes_;
};

}  // namespace sbx::agent
