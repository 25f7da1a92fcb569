// Reading a team file strictly, and the rules every team keeps.
#include "src/agent/team_file.h"

#include <cctype>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "netpolicy/policy_json.h"
#include "sandbox/image/image.h"

namespace sbx::agent {
namespace {

using nlohmann::json;
using policy_json::FieldError;

const std::set<std::string> kTopKeys = {"agents", "pattern", "initial_agent", "max_rounds", "image"};
const std::set<std::string> kLlmKeys = {
    "name",           "description",      "system_message",
    "model",          "base_url",         "temperature",
    "scripted_model", "human_input_mode", "max_consecutive_auto_reply",
    "executes_code"};
const std::set<std::string> kExecutorKeys = {"name", "description", "executes_code",
                                             "human_input_mode", "max_consecutive_auto_reply"};

Result<std::string> StringField(const std::string& field, const json& value) {
  if (!value.is_string()) return FieldError(field, "a string", value);
  return value.get<std::string>();
}

Result<int> CountField(const std::string& field, const json& value, int min, int max) {
  if (!value.is_number_integer() || value.get<int64_t>() < min || value.get<int64_t>() > max) {
    return FieldError(
        field, "a whole number in " + std::to_string(min) + ".." + std::to_string(max), value);
  }
  return static_cast<int>(value.get<int64_t>());
}

Result<HumanInputMode> ModeField(const std::string& field, const json& value) {
  if (value == "NEVER") return HumanInputMode::kNever;
  if (value == "ALWAYS") return HumanInputMode::kAlways;
  if (value == "TERMINATE") return HumanInputMode::kTerminate;
  return FieldError(field, "\"NEVER\", \"ALWAYS\" or \"TERMINATE\"", value);
}

std::string Resolve(const std::string& path, const std::string& base_dir) {
  if (path.empty() || path[0] == '/' || base_dir.empty()) return path;
  return base_dir + "/" + path;
}

Result<TeamAgent> ReadAgent(const std::string& where, const json& value,
                            const std::string& base_dir) {
  if (!value.is_object()) return FieldError(where, "an object with a name", value);
  TeamAgent agent;
  if (auto it = value.find("executes_code"); it != value.end()) {
    if (!it->is_boolean()) return FieldError(where + ".executes_code", "true or false", *it);
    agent.executes_code = it->get<bool>();
  }
  if (agent.executes_code) {
    for (const auto& item : value.items()) {
      if (!kExecutorKeys.count(item.key()) && kLlmKeys.count(item.key())) {
        return InvalidInput(where + "." + item.key() +
                            ": the executor (executes_code) has no model; "
                            "remove it, or make this an "
                            "LLM agent without executes_code");
      }
    }
  }
  SBX_TRY(policy_json::CheckKeys(where, value, agent.executes_code ? kExecutorKeys : kLlmKeys));
  auto name = value.find("name");
  if (name == value.end()) return InvalidInput(where + ".name: missing; every agent has a name");
  SBX_ASSIGN_OR_RETURN(auto name_text, StringField(where + ".name", *name));
  agent.name = name_text;
  bool well_formed = !agent.name.empty() && agent.name.size() <= 64;
  for (char c : agent.name)
    well_formed =
        well_formed && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-');
  if (!well_formed) {
    return InvalidInput(where + ".name: \"" + agent.name +
                        "\" is not a name; use 1 to 64 letters, digits, _ or - "
                        "(the model API's rule)");
  }
  if (agent.name == "user")
    return InvalidInput(where + ".name: \"user\" is the task's speaker; choose another");
  for (const auto& [key, target] :
       {std::pair<const char*, std::string*>{"description", &agent.description},
        {"system_message", &agent.system_message},
        {"model", &agent.model},
        {"base_url", &agent.base_url},
        {"scripted_model", &agent.scripted_model}}) {
    if (auto it = value.find(key); it != value.end()) {
      SBX_ASSIGN_OR_RETURN(auto text, StringField(where + "." + key, *it));
      *target = text;
    }
  }
  agent.scripted_model = Resolve(agent.scripted_model, base_dir);
  if (auto it = value.find("temperature"); it != value.end()) {
    if (!it->is_number() || !std::isfinite(it->get<double>()) || it->get<double>() < 0 ||
        it->get<double>() > 2) {
      return FieldError(where + ".temperature", "a number in 0..2", *it);
    }
    agent.temperature = it->get<double>();
  }
  if (auto it = value.find("human_input_mode"); it != value.end()) {
    SBX_ASSIGN_OR_RETURN(auto mode, ModeField(where + ".human_input_mode", *it));
    agent.human_input_mode = mode;
  }
  if (auto it = value.find("max_consecutive_auto_reply"); it != value.end()) {
    SBX_ASSIGN_OR_RETURN(auto count,
                         CountField(where + ".max_consecutive_auto_reply", *it, 0, 10000));
    agent.max_consecutive_auto_reply = count;
  }
  return agent;
}

std::string Names(const TeamSpec& spec) {
  std::string names;
  for (const auto& agent : spec.agents) names += (names.empty() ? "" : ", ") + agent.name;
  return names;
}

}  // namespace

Result<void> ValidateTeam(const TeamSpec& spec) {
  if (spec.agents.empty())
    return InvalidInput("agents: empty; a team needs at least one LLM agent");
  std::set<std::string> seen;
  std::string executors, llms;
  for (size_t i = 0; i < spec.agents.size(); ++i) {
    const TeamAgent& agent = spec.agents[i];
    if (!seen.insert(agent.name).second) {
      return InvalidInput("agents[" + std::to_string(i) + "].name: \"" + agent.name +
                          "\" is already an agent's name; names must be unique");
    }
    std::string& list = agent.executes_code ? executors : llms;
    list += (list.empty() ? "" : ", ") + agent.name;
    if (agent.max_consecutive_auto_reply < 0) {
      return InvalidInput("agents[" + std::to_string(i) +
                          "].max_consecutive_auto_reply: must be >= 0");
    }
  }
  if (llms.empty()) {
    return InvalidInput(
        "agents: no LLM agent (every agent has executes_code); "
        "add one with a model or "
        "scripted_model to write the code");
  }
  if (executors.find(',') != std::string::npos) {
    return InvalidInput("agents: more than one executor (" + executors +
                        "); the team has one sandboxed session, so keep "
                        "executes_code on one agent");
  }
  if (!spec.initial_agent.empty() && !seen.count(spec.initial_agent)) {
    return InvalidInput("initial_agent: \"" + spec.initial_agent +
                        "\" is not an agent; the agents are " + Names(spec));
  }
  if (spec.pattern == TeamPattern::kTwoAgent && spec.agents.size() != 2) {
    return InvalidInput(
        "pattern: two_agent needs exactly two agents (a coder "
        "and an executor), not " +
        std::to_string(spec.agents.size()) + "; use round_robin for more");
  }
  if (spec.max_rounds < 1) return InvalidInput("max_rounds: must be at least 1");
  return Ok{};
}

Result<TeamSpec> ParseTeam(const std::string& text, const std::string& base_dir) {
  SBX_ASSIGN_OR_RETURN(auto parsed, policy_json::ParseStrict(text, "team file"));
  const json& root = parsed;
  if (!root.is_object()) return FieldError("team file", "an object with \"agents\"", root);
  SBX_TRY(policy_json::CheckKeys("", root, kTopKeys));
  TeamSpec spec;
  auto agents = root.find("agents");
  if (agents == root.end()) return InvalidInput("agents: missing; list the team's agents");
  if (!agents->is_array()) return FieldError("agents", "an array of agents", *agents);
  for (size_t i = 0; i < agents->size(); ++i) {
    SBX_ASSIGN_OR_RETURN(auto agent,
                         ReadAgent("agents[" + std::to_string(i) + "]", (*agents)[i], base_dir));
    spec.agents.push_back(std::move(agent));
  }
  if (auto it = root.find("pattern"); it != root.end()) {
    if (*it == "round_robin") {
      spec.pattern = TeamPattern::kRoundRobin;
    } else if (*it == "two_agent") {
      spec.pattern = TeamPattern::kTwoAgent;
    } else {
      return FieldError("pattern", "\"round_robin\" or \"two_agent\"", *it);
    }
  }
  if (auto it = root.find("initial_agent"); it != root.end()) {
    SBX_ASSIGN_OR_RETURN(auto name, StringField("initial_agent", *it));
    spec.initial_agent = name;
  }
  if (auto it = root.find("max_rounds"); it != root.end()) {
    SBX_ASSIGN_OR_RETURN(auto rounds, CountField("max_rounds", *it, 1, 1000));
    spec.max_rounds = rounds;
  }
  if (auto it = root.find("image"); it != root.end()) {
    auto image = StringField("image", *it);
    if (!image) return image.error();
    // Only a name: a directory would make the file mean different things on different hosts.
    SBX_TRY_CTX(ValidateImageName(*image), "image");
    spec.image = *image;
  }
  SBX_TRY(ValidateTeam(spec));
  return spec;
}

Result<TeamSpec> LoadTeamFile(const std::string& path) {
  std::ifstream file(path);
  if (!file) return InvalidInput("--team " + path + ": cannot read it");
  std::stringstream text;
  text << file.rdbuf();
  auto slash = path.rfind('/');
  auto spec = ParseTeam(text.str(), slash == std::string::npos ? "" : path.substr(0, slash));
  if (!spec) return spec.error().Context("--team " + path);
  return spec;
}

}  // namespace sbx::agent
