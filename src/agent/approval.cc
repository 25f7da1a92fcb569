// Approvers: the autonomous one and the one that asks a person on the terminal.
#include "src/agent/approval.h"

#include <unistd.h>

namespace sbx::agent {
namespace {

class AlwaysApprove final : public Approver {
 public:
  Decision Approve(const std::string&, const std::string&) override { return {}; }
};

class AskOnTerminal final : public Approver {
 public:
  AskOnTerminal(FILE* in, FILE* out) : in_(in), out_(out) {}

  Decision Approve(const std::string& what, const std::string& code) override {
    std::fprintf(out_, "\n--- the agent wants to %s ---\n%s\n--- run it? [y]es / [n]o, or type a reason to refuse: ",
                 what.c_str(), code.c_str());
    std::fflush(out_);
    char line[4096];
    if (std::fgets(line, sizeof line, in_) == nullptr) return {false, "no answer (end of input)"};
    std::string answer(line);
    while (!answer.empty() && (answer.back() == '\n' || answer.back() == '\r')) answer.pop_back();
    if (answer == "y" || answer == "Y" || answer == "yes") return {};
    if (answer == "n" || answer == "N" || answer == "no" || answer.empty()) return {false, "refused"};
    return {false, answer};
  }

 private:
  FILE* in_;
  FILE* out_;
};

}  // namespace

bool OnTerminal(FILE* in, FILE* out) { return ::isatty(::fileno(in)) != 0 && ::isatty(::fileno(out)) != 0; }

Result<ApprovalMode> ParseApprovalMode(const std::string& text) {
  if (text == "never") return ApprovalMode::kNever;
  if (text == "always") return ApprovalMode::kAlways;
  return InvalidInput("\"" + text + "\" is not an approval mode; use never or always");
}

Result<std::unique_ptr<Approver>> MakeApprover(ApprovalMode mode, FILE* in, FILE* out,
                                               bool allow_non_terminal) {
  if (mode == ApprovalMode::kNever) return std::unique_ptr<Approver>(new AlwaysApprove());
  if (!allow_non_terminal && !OnTerminal(in, out)) {
    return InvalidInput(
        "approval \"always\" asks before each execution, but stdin/stdout is not a terminal; run "
        "interactively, or pass --approve never");
  }
  return std::unique_ptr<Approver>(new AskOnTerminal(in, out));
}

}  // namespace sbx::agent
