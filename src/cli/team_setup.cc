// Loading a team for the CLI: clients, labels for scripted agents, the
// terminal's person.
#include "src/cli/team_setup.h"

#include <cstdio>

#include "src/agent/scripted_model.h"
#include "src/agent/team_file.h"
#include "src/llm/openai_client.h"

namespace sbx::cli {

agent::TeamMembers TeamSetup::Members() {
  agent::TeamMembers members;
  for (const auto& client : clients) members.models.push_back(client.get());
  members.human = human.get();
  return members;
}

Result<TeamSetup> PrepareTeam(const std::string& path, const llm::LlmConfigOverrides& defaults) {
  auto spec = agent::LoadTeamFile(path);
  if (!spec) return spec.error();
  TeamSetup setup;
  setup.spec = std::move(*spec);
  bool asks = false;
  for (agent::TeamAgent& member : setup.spec.agents) {
    asks = asks || member.human_input_mode != agent::HumanInputMode::kNever;
    if (member.executes_code) {
      setup.clients.emplace_back();
      continue;
    }
    if (!member.scripted_model.empty()) {
      auto scripted = agent::ScriptedModel::Load(member.scripted_model);
      if (!scripted) return scripted.error().Context("--team " + path + ": agent " + member.name);
      std::fprintf(stderr, "sbx agent: %s: SCRIPTED MODEL (no LLM is called): %s\n",
                   member.name.c_str(), scripted->label().c_str());
      if (member.model.empty()) member.model = "scripted";
      setup.clients.push_back(std::make_unique<agent::ScriptedModel>(std::move(*scripted)));
      continue;
    }
    llm::LlmConfigOverrides overrides = defaults;
    if (!member.model.empty()) overrides.model = member.model;
    if (!member.base_url.empty()) overrides.base_url = member.base_url;
    auto config = llm::LoadLlmConfig(llm::ProcessGetenv, overrides);
    if (!config) return config.error().Context("agent " + member.name);
    member.model = config->model;
    setup.clients.push_back(std::make_unique<llm::OpenAiClient>(*config));
  }
  if (asks) {
    auto human = agent::MakeTerminalHuman(stdin, stderr);
    if (!human) return human.error();
    setup.human = std::move(*human);
  }
  return setup;
}

int TeamExitCode(const agent::TeamResult& result, const std::vector<std::string>& missing_outputs) {
  switch (result.stop) {
    case agent::TeamStop::kModelError:
      return 1;
    case agent::TeamStop::kMaxRounds:
    case agent::TeamStop::kMaxConsecutiveAutoReply:
      return 2;
    case agent::TeamStop::kTerminated:
    case agent::TeamStop::kHumanExit:
      break;
  }
  return missing_outputs.empty() ? 0 : 3;
}

}  // namespace sbx::cli
