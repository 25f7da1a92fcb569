// `sbx agent`: a task, input files and a model -> the agent loop in a sandboxed session ->
// the requested outputs, a transcript and the final answer.
#pragma once

namespace sbx::cli {

int RunAgentCommand(int argc, char** argv);

}  // namespace sbx::cli
