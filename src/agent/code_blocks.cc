// Fenced code blocks in a model's reply, and the TERMINATE word outside them.
#include "src/agent/code_blocks.h"

#include <sstream>

namespace sbx::agent {
namespace {

std::string LanguageFor(std::string tag) {
  while (!tag.empty() && (tag.back() == ' ' || tag.back() == '\r' || tag.back() == '\t')) tag.pop_back();
  size_t start = tag.find_first_not_of(" \t");
  tag = start == std::string::npos ? "" : tag.substr(start);
  for (char& c : tag) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (tag.empty() || tag == "python" || tag == "py" || tag == "python3") return "python";
  if (tag == "bash" || tag == "shell" || tag == "console") return "bash";
  if (tag == "sh") return "sh";
  return tag;
}

bool IsFence(const std::string& line) { return line.rfind("```", 0) == 0; }

}  // namespace

std::vector<executor::CodeBlock> ExtractCodeBlocks(const std::string& text) {
  std::vector<executor::CodeBlock> blocks;
  std::istringstream lines(text);
  std::string line;
  bool inside = false;
  executor::CodeBlock current;
  while (std::getline(lines, line)) {
    if (!inside && IsFence(line)) {
      inside = true;
      current = {LanguageFor(line.substr(3)), ""};
    } else if (inside && IsFence(line) && line.find_first_not_of("`\r \t") == std::string::npos) {
      inside = false;
      blocks.push_back(std::move(current));
    } else if (inside) {
      current.source += line + "\n";
    }
  }
  if (inside) blocks.push_back(std::move(current));
  return blocks;
}

bool SaysTerminate(const std::string& text) {
  std::istringstream lines(text);
  std::string line;
  bool inside = false;
  while (std::getline(lines, line)) {
    if (IsFence(line)) {
      inside = !inside;
      continue;
    }
    if (!inside && line.find("TERMINATE") != std::string::npos) return true;
  }
  return false;
}

}  // namespace sbx::agent
