// `sbx agent`: flags -> policy, manifest, model -> RunAgent -> outputs, transcript, answer.
#include "src/cli/agent_command.h"

#include <signal.h>
#include <sys/stat.h>

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "sandbox/image/image.h"
#include "sandbox/policy/policy.h"
#include "src/agent/agent.h"
#include "src/agent/scripted_model.h"
#include "src/cli/policy_flags.h"
#include "src/cli/team_setup.h"
#include "src/executor/executors.h"
#include "src/llm/llm_config.h"
#include "src/llm/openai_client.h"

namespace sbx::cli {
namespace {

constexpr int kSbxFailed = 125;

struct AgentFlags {
  std::string task, task_file, policy_file, image, out_dir = "sbx-agent-output", transcript;
  std::string scripted_model, mode = "tools", approval = "never", instructions, instructions_file, team;
  std::vector<std::string> single_agent_flags;  // given, and meaningless for a --team run
  std::vector<std::string> inputs, outputs;
  llm::LlmConfigOverrides llm;
  int max_turns = 25;
};

int Refuse(const std::string& message) {
  std::fprintf(stderr, "sbx agent: %s\n", message.c_str());
  return kSbxFailed;
}

void PrintAgentUsage() {
  std::fprintf(stderr,
               "usage: sbx agent --task TEXT | --task-file FILE [--team FILE]\n"
               "                 [--input HOST_PATH[:WORKSPACE_PATH]]... [--expect WORKSPACE_PATH]...\n"
               "                 [--out-dir DIR] [--transcript FILE] [--max-turns N]\n"
               "                 [--instructions TEXT | --instructions-file FILE]\n"
               "                 [--mode tools|code-blocks] [--approve never|always] [--model NAME] [--base-url URL]\n"
               "                 [--scripted-model FILE] [--policy FILE] [--image NAME|ID|DIR]\n"
               "                 [--timeout S] [--memory SIZE] [--pids N] [--cpus N] [--env K=V]...\n"
               "                 [--network none|host|allowlist] [--allow HOST[:PORTS]]...\n"
               "The model is OpenAI-compatible: OPENAI_API_KEY, OPENAI_BASE_URL and SBX_MODEL (flags win).\n"
               "--scripted-model replays a scripted conversation instead of calling a model (offline demo).\n"
               "--team FILE runs a team of agents (docs/teams.md); exit 2 also means max_rounds or\n"
               "max_consecutive_auto_reply stopped it.\n"
               "exit: 0 the model finished and every expected output came back; 1 the model or a request\n"
               "failed; 2 max turns reached; 3 expected outputs missing; 125 refused (bad input).\n");
}

std::string ReadFile(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

std::string BaseName(const std::string& path) {
  std::string trimmed = path;
  while (trimmed.size() > 1 && trimmed.back() == '/') trimmed.pop_back();
  auto slash = trimmed.rfind('/');
  return slash == std::string::npos ? trimmed : trimmed.substr(slash + 1);
}

std::string Absolute(const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  char cwd[4096];
  return ::getcwd(cwd, sizeof cwd) ? std::string(cwd) + "/" + path : path;
}

// --input HOST[:DEST]: a file or a directory, copied into the workspace before the first turn.
Result<void> AddInput(const std::string& spec, executor::ExecutorOptions& options, std::vector<std::string>& names) {
  auto colon = spec.rfind(':');
  std::string host = Absolute(spec.substr(0, colon));
  std::string dest = colon == std::string::npos ? BaseName(host) : spec.substr(colon + 1);
  struct stat st;
  if (::stat(host.c_str(), &st) != 0) return InvalidInput("--input " + spec + ": " + host + " does not exist");
  if (S_ISDIR(st.st_mode)) {
    options.manifest.AddHostDirectory(dest, host);
  } else {
    options.manifest.AddHostFile(dest, host);
  }
  names.push_back(dest);
  return {};
}

// Outputs land beside the run's own records: an output named like one (the sandbox wrote a
// transcript.jsonl, say) must not replace the record of what really happened.
std::vector<std::string> Records(const AgentFlags& flags) {
  std::vector<std::string> records = {"network-*.jsonl"};
  if (flags.transcript.empty()) records.push_back("transcript.jsonl");
  return records;
}

void ReportOutputs(const CopyOutResult& outputs, const std::string& copy_error, const std::string& out_dir,
                   const std::string& transcript_path) {
  for (const auto& entry : outputs.entries) {
    std::fprintf(stderr, "sbx agent: output %s: %s%s%s\n", entry.path.c_str(), CopyStatusName(entry.status),
                 entry.detail.empty() ? "" : ", ", entry.detail.c_str());
  }
  if (outputs.unlisted != 0) {
    std::fprintf(stderr, "sbx agent: %zu more entries not copied (not listed)\n", outputs.unlisted);
  }
  if (!copy_error.empty()) std::fprintf(stderr, "sbx agent: outputs not copied: %s\n", copy_error.c_str());
  std::fprintf(stderr, "sbx agent: outputs in %s, transcript %s\n", out_dir.c_str(), transcript_path.c_str());
}

void CloseAndReportNetworks(executor::SessionExecutor& session) {
  session.Close();  // its network log is complete only once its sbx-netd has stopped
  for (const NetworkOutcome& network : session.EndedNetworks()) {
    std::fprintf(stderr, "sbx agent: network log %s (sha256 %s): %llu allowed, %llu denied, tcp coverage %s\n",
                 network.log_path.c_str(), network.log_sha256.c_str(),
                 static_cast<unsigned long long>(network.allowed), static_cast<unsigned long long>(network.denied),
                 network.tcp_coverage.c_str());
  }
}

// The team's run, from the session on: the same outputs, records and reports as one agent's.
int RunTeamAndReport(TeamSetup& team, executor::SessionExecutor& session, const AgentFlags& flags,
                     const std::string& task, agent::Transcript& transcript, const std::string& out_dir,
                     const std::string& transcript_path) {
  agent::TeamMembers members = team.Members();
  members.code = &session;
  members.progress = [](const std::string& line) { std::fprintf(stderr, "sbx agent: %s\n", line.c_str()); };
  agent::TeamResult result = agent::RunTeam(team.spec, members, task, transcript);
  CopyOutResult outputs;
  std::string copy_error;
  if (!flags.outputs.empty()) {
    auto copied = session.CopyOutputs(flags.outputs, out_dir, Records(flags));
    if (copied) {
      outputs = std::move(*copied);
    } else {
      copy_error = copied.error().message;
    }
  }
  std::vector<std::string> missing = flags.outputs.empty() ? std::vector<std::string>{}
                                                           : agent::MissingOutputs(flags.outputs, outputs);
  std::fprintf(stderr, "sbx agent: team %s at %s's turn after %d round(s), %zu execution(s), %lld tokens\n",
               agent::TeamStopName(result.stop), result.stopped_at.c_str(), result.rounds, result.executions.size(),
               static_cast<long long>(result.usage.total_tokens));
  ReportOutputs(outputs, copy_error, out_dir, transcript_path);
  CloseAndReportNetworks(session);
  if (result.stop == agent::TeamStop::kModelError) {
    std::fprintf(stderr, "sbx agent: stopped: %s\n", result.error.c_str());
  } else {
    std::printf("%s\n", result.messages.back().content.c_str());
  }
  for (const auto& path : missing) std::fprintf(stderr, "sbx agent: expected output missing: %s\n", path.c_str());
  return TeamExitCode(result, missing);
}

}  // namespace

int RunAgentCommand(int argc, char** argv) {
  AgentFlags flags;
  executor::ExecutorOptions options;
  PolicyFlags policy_flags;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      PrintAgentUsage();
      return 0;
    }
    if (arg.rfind("--", 0) != 0) return Refuse("unexpected argument \"" + arg + "\"; see --help");
    std::string value;
    if (!TakeFlagValue(argc, argv, i, arg, value)) return Refuse(arg + ": needs a value");
    if (arg == "--task") flags.task = value;
    else if (arg == "--task-file") flags.task_file = value;
    else if (arg == "--instructions") flags.instructions = value;
    else if (arg == "--instructions-file") flags.instructions_file = value;
    else if (arg == "--input") flags.inputs.push_back(value);
    else if (arg == "--expect") flags.outputs.push_back(value);
    else if (arg == "--out-dir") flags.out_dir = value;
    else if (arg == "--transcript") flags.transcript = value;
    else if (arg == "--scripted-model") flags.scripted_model = value;
    else if (arg == "--team") flags.team = value;
    else if (arg == "--mode") flags.mode = value;
    else if (arg == "--approve") flags.approval = value;
    else if (arg == "--policy") flags.policy_file = value;
    else if (arg == "--image") flags.image = value;
    else if (arg == "--model") flags.llm.model = value;
    else if (arg == "--base-url") flags.llm.base_url = value;
    else if (arg == "--max-turns") {
      char* end = nullptr;
      long turns = std::strtol(value.c_str(), &end, 10);
      if (end == value.c_str() || *end != '\0' || turns < 1 || turns > 1000)
        return Refuse("--max-turns: \"" + value + "\" is not a whole number in 1..1000");
      flags.max_turns = static_cast<int>(turns);
    } else policy_flags.emplace_back(arg, value);
    for (const char* single : {"--instructions", "--instructions-file", "--scripted-model", "--mode", "--approve",
                               "--max-turns"}) {
      if (arg == single) flags.single_agent_flags.push_back(arg);
    }
  }

  // Everything is checked before anything is created.
  if (!flags.team.empty() && !flags.single_agent_flags.empty()) {
    return Refuse(flags.single_agent_flags[0] +
                  ": not with --team; set it per agent in the team file (docs/teams.md)");
  }
  if (flags.task.empty() == flags.task_file.empty()) return Refuse("give the task with exactly one of --task or --task-file");
  if (!flags.task_file.empty()) {
    flags.task = ReadFile(flags.task_file);
    if (flags.task.empty()) return Refuse("--task-file " + flags.task_file + ": missing or empty");
  }
  if (!flags.instructions.empty() && !flags.instructions_file.empty())
    return Refuse("give the system prompt with at most one of --instructions or --instructions-file");
  if (!flags.instructions_file.empty()) {
    flags.instructions = ReadFile(flags.instructions_file);
    if (flags.instructions.empty()) return Refuse("--instructions-file " + flags.instructions_file + ": missing or empty");
  }
  if (flags.mode != "tools" && flags.mode != "code-blocks")
    return Refuse("--mode: use tools or code-blocks, not \"" + flags.mode + "\"");
  auto approval = agent::ParseApprovalMode(flags.approval);
  if (!approval) return Refuse("--approve: " + approval.error().message);
  auto approver = agent::MakeApprover(*approval, stdin, stderr);
  if (!approver) return Refuse(approver.error().message);
  auto policy = ResolvePolicy(flags.policy_file, policy_flags);
  if (!policy) return Refuse(policy.error().ToString());
  options.policy = std::move(*policy);
  std::optional<NetworkAllowlist> policy_network_allowlist;  // told to the model
  if (options.policy->network == NetworkMode::kAllowlist) policy_network_allowlist = options.policy->network_allowlist;
  std::vector<std::string> input_names;
  for (const std::string& input : flags.inputs) {
    if (auto added = AddInput(input, options, input_names); !added) return Refuse(added.error().message);
  }
  if (auto manifest = ValidateManifest(options.manifest); !manifest) return Refuse(manifest.error().message);

  std::unique_ptr<llm::LlmClient> model;
  std::string model_name;
  std::optional<TeamSetup> team;
  if (!flags.team.empty()) {
    auto prepared = PrepareTeam(flags.team, flags.llm);
    if (!prepared) return Refuse(prepared.error().message);
    team = std::move(*prepared);
    if (policy_network_allowlist) {
      for (const auto& rule : policy_network_allowlist->allow) team->spec.network_allow.push_back(rule.text);
    }
  } else if (!flags.scripted_model.empty()) {
    auto scripted = agent::ScriptedModel::Load(flags.scripted_model);
    if (!scripted) return Refuse(scripted.error().message);
    std::fprintf(stderr, "sbx agent: SCRIPTED MODEL (no LLM is called): %s\n", scripted->label().c_str());
    model_name = "scripted";
    model = std::make_unique<agent::ScriptedModel>(std::move(*scripted));
  } else {
    auto config = llm::LoadLlmConfig(llm::ProcessGetenv, flags.llm);
    if (!config) return Refuse(config.error().message);
    model_name = config->model;
    model = std::make_unique<llm::OpenAiClient>(*config);
  }

  std::string image_field = "--image";
  if (team && !team->spec.image.empty()) {
    if (!flags.image.empty() && flags.image != team->spec.image) {
      return Refuse("--image " + flags.image + ": the team file names image \"" + team->spec.image +
                    "\"; give the image in one place");
    }
    flags.image = team->spec.image;
    image_field = "the team file's image";
  }
  auto image_dir = ResolveRunImage(flags.image, image_field, options.policy.get());
  if (!image_dir) return Refuse(image_dir.error().ToString());
  options.image_dir = *image_dir;
  options.network_log_dir = Absolute(flags.out_dir);  // created below, before the first run
  ::signal(SIGPIPE, SIG_IGN);
  auto session = executor::SessionExecutor::Create(std::move(options));
  if (!session) return Refuse(session.error().ToString());

  if (::mkdir(flags.out_dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return Refuse("--out-dir " + flags.out_dir + ": cannot create it");
  }
  std::string out_dir = Absolute(flags.out_dir);
  agent::Transcript transcript;
  std::string transcript_path = flags.transcript.empty() ? out_dir + "/transcript.jsonl" : flags.transcript;
  if (flags.transcript.empty()) ::unlink(transcript_path.c_str());  // the default one is ours to replace
  if (auto opened = agent::Transcript::Open(transcript, transcript_path); !opened) return Refuse(opened.error().ToString());

  if (team) {
    agent::AgentConfig task;
    task.task = flags.task;
    task.input_files = input_names;
    task.expected_outputs = flags.outputs;
    return RunTeamAndReport(*team, **session, flags, agent::TaskMessage(task), transcript, out_dir, transcript_path);
  }
  agent::ToolRunner tools(**session, **approver, 16 * 1024);
  std::vector<std::string> records = Records(flags);
  agent::AgentSession agent_session{tools, [&](const std::vector<std::string>& requests, const std::string& dir) {
                                      return (*session)->CopyOutputs(requests, dir, records);
                                    }};
  agent::AgentConfig config;
  config.model = model_name;
  config.task = flags.task;
  config.instructions = flags.instructions;  // empty: the default, which says what the sandbox has
  config.input_files = input_names;
  if (policy_network_allowlist) {
    for (const auto& rule : policy_network_allowlist->allow) config.network_allow.push_back(rule.text);
  }
  config.expected_outputs = flags.outputs;
  config.output_dir = out_dir;
  config.max_turns = flags.max_turns;
  config.mode = flags.mode == "tools" ? agent::AgentMode::kTools : agent::AgentMode::kText;
  config.progress = [](const std::string& line) { std::fprintf(stderr, "sbx agent: %s\n", line.c_str()); };
  agent::AgentResult result = agent::RunAgent(*model, agent_session, config, transcript);

  std::fprintf(stderr, "sbx agent: %s after %d turn(s), %d execution(s), %lld tokens\n",
               agent::AgentEndName(result.end), result.turns, result.executions,
               static_cast<long long>(result.usage.total_tokens));
  ReportOutputs(result.outputs, result.copy_error, out_dir, transcript_path);
  CloseAndReportNetworks(**session);
  if (result.end == agent::AgentEnd::kError) {
    std::fprintf(stderr, "sbx agent: stopped: %s\n", result.error.c_str());
    return 1;
  }
  std::printf("%s\n", result.final_answer.c_str());
  if (result.end == agent::AgentEnd::kMaxTurns) {
    std::fprintf(stderr, "sbx agent: stopped at --max-turns %d before a final answer\n", flags.max_turns);
    return 2;
  }
  if (!result.missing_outputs.empty()) {
    std::string missing;
    for (const auto& path : result.missing_outputs) missing += " " + path;
    std::fprintf(stderr, "sbx agent: the model finished, but expected outputs are missing:%s\n", missing.c_str());
    return 3;
  }
  return 0;
}

}  // namespace sbx::cli
