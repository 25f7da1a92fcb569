// `sbx agent --team FILE`: the team file loaded, a model client for each LLM
// agent and the person to ask, all checked before a sandbox is created, and the
// exit code of a team run.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "src/agent/team.h"
#include "src/llm/llm_config.h"

namespace sbx::cli {

struct TeamSetup {
  agent::TeamSpec spec;
  std::vector<std::unique_ptr<llm::LlmClient>> clients;  // one per agent; null for the executor
  std::unique_ptr<agent::HumanInput> human;              // set when a mode asks a person
  agent::TeamMembers Members();
};

// Each LLM agent's model, base_url and temperature win over `defaults` (the
// --model and
// --base-url flags, then the environment); a scripted_model replaces the
// client.
Result<TeamSetup> PrepareTeam(const std::string& path, const llm::LlmConfigOverrides& defaults);

// 0 the team terminated (or the person ended it) and every expected output came
// back; 1 a model error; 2 stopped at max_rounds or max_consecutive_auto_reply;
// 3 outputs missing.
int TeamExitCode(const agent::TeamResult& result, const std::vector<std::string>& missing_outputs);

}  // namespace sbx::cli
