// sbx-agent: `sbx agent`, as its own program so that only the agent loads the LLM client's
// libcurl (sbx execs this with argv[0] = "sbx-agent" in place of "agent").
#include "sandbox/launch/reap_later.h"
#include "src/cli/agent_command.h"

int main(int argc, char** argv) {
  const int status = sbx::cli::RunAgentCommand(argc, argv);
  sbx::WaitForReaps();  // nothing of its runs outlives this process (reap_later.h)
  return status;
}
