// Tool specs, tool dispatch and the bounded text the model reads back.
#include "src/agent/agent_tools.h"

#include <chrono>
#include <cstdio>

#include <nlohmann/json.hpp>

namespace sbx::agent {
namespace {

using nlohmann::json;

json StringParam(const char* description) { return {{"type", "string"}, {"description", description}}; }

json Schema(json properties, std::vector<std::string> required) {
  return {{"type", "object"}, {"properties", std::move(properties)}, {"required", std::move(required)},
          {"additionalProperties", false}};
}

// A Python string literal holding `text` (a JSON string is one; non-UTF-8 is replaced).
std::string PyLiteral(const std::string& text) {
  return json(text).dump(-1, ' ', false, json::error_handler_t::replace);
}

constexpr size_t kReadFileBytes = 64 * 1024;

std::string ReadFileCode(const std::string& path) {
  return "import sys\np = " + PyLiteral(path) + "\nwith open(p, 'rb') as f:\n    data = f.read(" +
         std::to_string(kReadFileBytes + 1) + ")\nsys.stdout.write(data[:" + std::to_string(kReadFileBytes) +
         "].decode('utf-8', 'replace'))\nif len(data) > " + std::to_string(kReadFileBytes) +
         ":\n    print('\\n[the file is longer than " + std::to_string(kReadFileBytes) +
         " bytes; read the rest with run_python]')\n";
}

std::string WriteFileCode(const std::string& path, const std::string& content) {
  return "import os\np = " + PyLiteral(path) + "\nd = os.path.dirname(p)\nif d:\n    os.makedirs(d, exist_ok=True)\n"
         "with open(p, 'w', encoding='utf-8') as f:\n    n = f.write(" + PyLiteral(content) +
         ")\nprint(f'wrote {n} characters to {p}')\n";
}

std::string ListFilesCode(const std::string& path) {
  return "import os\nroot = " + PyLiteral(path) + "\nshown = 0\n"
         "for d, dirs, files in os.walk(root):\n"
         "    dirs[:] = sorted(x for x in dirs if not x.startswith('.'))\n"
         "    for name in sorted(files):\n"
         "        p = os.path.join(d, name)\n"
         "        if shown < 500:\n"
         "            print(f'{os.path.relpath(p, root)}\\t{os.lstat(p).st_size} bytes')\n"
         "        shown += 1\n"
         "if shown > 500:\n    print(f'[{shown - 500} more files not listed]')\n"
         "if shown == 0:\n    print('(no files)')\n";
}

std::string Ending(const executor::CodeResult& result) {
  switch (result.status) {
    case RunStatus::kTimedOut: return "timed out (the time limit for one execution)";
    case RunStatus::kOomKilled: return "killed: out of memory (the sandbox's memory limit)";
    case RunStatus::kPidsLimit: return "failed: the process limit was reached";
    case RunStatus::kSeccompViolation: return "killed: a forbidden system call";
    case RunStatus::kSignaled: return "killed by a signal";
    case RunStatus::kCancelled: return "cancelled";
    case RunStatus::kNetdDied: return "killed: the network policy's helper died (not your code's fault)";
    default: return "exit code " + std::to_string(result.exit_code);
  }
}

}  // namespace

std::vector<llm::ToolSpec> AgentToolSpecs() {
  return {
      {"run_python",
       "Run Python code in a persistent session (variables and imports are kept between calls). "
       "numpy, pandas, matplotlib (Agg) and scipy are installed; the network is what the policy allows. The value "
       "of a last expression is returned; open matplotlib figures are saved as PNG files.",
       Schema({{"code", StringParam("the Python source to run")}}, {"code"})},
      {"run_shell", "Run a bash command in the sandbox's workspace (the working directory).",
       Schema({{"command", StringParam("the bash command line or script")}}, {"command"})},
      {"read_file", "Read a text file from the workspace (the first 64 KiB).",
       Schema({{"path", StringParam("path relative to the workspace")}}, {"path"})},
      {"write_file", "Write a text file in the workspace, creating its directories.",
       Schema({{"path", StringParam("path relative to the workspace")},
               {"content", StringParam("the whole new content")}},
              {"path", "content"})},
      {"list_files", "List the files under a workspace directory with their sizes.",
       Schema({{"path", StringParam("directory relative to the workspace; default \".\"")}}, {})},
  };
}

std::string SecondsText(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f s", seconds);
  return text;
}

std::string Bounded(const std::string& text, size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  size_t head = max_bytes / 2, tail = max_bytes - head;
  return text.substr(0, head) + "\n[... " + std::to_string(text.size() - head - tail) +
         " bytes cut; print less, or write to a file and read parts of it ...]\n" +
         text.substr(text.size() - tail);
}

std::string DescribeResult(const executor::CodeResult& result, size_t max_bytes) {
  if (result.rejected) return "[not run] " + result.notice;
  std::string text = "[" + Ending(result) + "]\n";
  if (!result.notice.empty()) text += "[note] " + result.notice + "\n";
  text += Bounded(result.output, max_bytes);
  if (!result.output.empty() && result.output.back() != '\n') text += "\n";
  if (result.output_truncated || result.stdout_truncated || result.stderr_truncated) {
    text += "[the sandbox also cut this output: it was over the output limit]\n";
  }
  if (result.value) text += "[value] " + Bounded(*result.value, max_bytes / 4) + "\n";
  if (!result.files_changed.empty()) {
    text += "[files changed]";
    for (size_t i = 0; i < result.files_changed.size() && i < 50; ++i) text += " " + result.files_changed[i];
    if (result.files_changed.size() > 50) text += " ... (" + std::to_string(result.files_changed.size()) + ")";
    text += "\n";
  }
  if (!result.network_blocked.empty()) {
    // Said plainly, so the model can tell a policy block from an outage and stop retrying.
    text += "[blocked by the sandbox's network policy, not an outage]";
    for (const std::string& blocked : result.network_blocked) text += " " + blocked;
    text += "\n";
  }
  if (!result.network_failed.empty()) {
    // Allowed by the policy, failed on the way: retrying later may work.
    text += "[allowed by the network policy but failed: not resolvable, unreachable or unverified]";
    for (const std::string& failed : result.network_failed) text += " " + failed;
    text += "\n";
  }
  if (!result.images.empty()) {
    text += "[figures saved]";
    for (const std::string& image : result.images) text += " " + image;
    text += "\n";
  }
  return text;
}

ToolRun ToolRunner::Execute(const std::string& what, const std::vector<executor::CodeBlock>& blocks) {
  std::string code;
  for (const auto& block : blocks) code += "[" + block.language + "]\n" + block.source;
  Decision decision = approver_.Approve(what, code);
  if (!decision.approved) {
    return {"[not run] the user refused to run this: " + decision.reason, false, true, "refused by the user"};
  }
  auto started = std::chrono::steady_clock::now();
  auto result = executor_.Execute(blocks);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (!result) {
    return {"[not run] the sandbox could not run it: " + result.error().message, false, true, "sandbox error", seconds};
  }
  bool failed = result->rejected || result->status != RunStatus::kExited || result->exit_code != 0;
  std::string ending = result->rejected ? "rejected" : Ending(*result);
  if (result->state_lost) ending += ", session restarted";
  std::optional<int> exit_code;
  if (!result->rejected && result->status == RunStatus::kExited) exit_code = result->exit_code;
  return {DescribeResult(*result, result_bytes_), !result->rejected, failed, ending, seconds, exit_code};
}

ToolRun ToolRunner::Run(const llm::ToolCall& call) {
  auto arguments = llm::ParseToolArguments(call);
  if (!arguments) return {"[error] " + arguments.error().message, false, true, "invalid call"};
  const json& args = *arguments;
  auto string_arg = [&](const char* key, const char* fallback) -> std::optional<std::string> {
    auto it = args.find(key);
    if (it == args.end()) return fallback ? std::optional<std::string>(fallback) : std::nullopt;
    if (!it->is_string()) return std::nullopt;
    return it->get<std::string>();
  };
  auto missing = [&](const char* key) {
    return ToolRun{"[error] " + call.name + ": argument \"" + key + "\" must be a string", false, true,
                   "invalid call"};
  };
  if (call.name == "run_python") {
    auto code = string_arg("code", nullptr);
    if (!code) return missing("code");
    return Execute("run Python", {{"python", *code}});
  }
  if (call.name == "run_shell") {
    auto command = string_arg("command", nullptr);
    if (!command) return missing("command");
    return Execute("run a shell command", {{"bash", *command}});
  }
  if (call.name == "read_file") {
    auto path = string_arg("path", nullptr);
    if (!path) return missing("path");
    ToolRun run = Execute("read " + *path, {{"python", ReadFileCode(*path)}});
    return run;
  }
  if (call.name == "write_file") {
    auto path = string_arg("path", nullptr);
    auto content = string_arg("content", nullptr);
    if (!path) return missing("path");
    if (!content) return missing("content");
    return Execute("write " + *path, {{"python", WriteFileCode(*path, *content)}});
  }
  if (call.name == "list_files") {
    auto path = string_arg("path", ".");
    if (!path) return missing("path");
    return Execute("list files in " + *path, {{"python", ListFilesCode(*path)}});
  }
  std::string known;
  for (const auto& spec : AgentToolSpecs()) known += (known.empty() ? "" : ", ") + spec.name;
  return {"[error] there is no tool \"" + call.name + "\"; the tools are " + known, false, true, "unknown tool"};
}

ToolRun ToolRunner::RunBlocks(const std::vector<executor::CodeBlock>& blocks) {
  return Execute("run " + std::to_string(blocks.size()) + " code block(s)", blocks);
}

}  // namespace sbx::agent
