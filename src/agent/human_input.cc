// The terminal's person: the prompt shown before an agent's reply and how
// answers are read.
#include "src/agent/human_input.h"

#include "src/agent/approval.h"

namespace sbx::agent {
namespace {

class TerminalHuman final : public HumanInput {
 public:
  TerminalHuman(FILE* in, FILE* out) : in_(in), out_(out) {}

  HumanAnswer Ask(const HumanPrompt& prompt) override {
    const bool runs_code = prompt.executes_code && !prompt.code.empty();
    if (runs_code) {
      std::fprintf(out_,
                   "\n--- %s would run this ---\n%s\n--- run it? Enter or "
                   "[y]es runs it, [n]o or a "
                   "reason refuses it (sent back), exit ends the chat: ",
                   prompt.agent.c_str(), prompt.code.c_str());
    } else {
      std::fprintf(out_,
                   "\n--- %s is to answer ---\n%s\n--- Enter lets %s reply, "
                   "text is sent as its "
                   "reply, exit ends the chat: ",
                   prompt.agent.c_str(), prompt.message.c_str(), prompt.agent.c_str());
    }
    std::fflush(out_);
    char line[4096];
    if (std::fgets(line, sizeof line, in_) == nullptr) return {HumanAnswer::kExit, ""};
    std::string answer(line);
    while (!answer.empty() && (answer.back() == '\n' || answer.back() == '\r')) answer.pop_back();
    if (answer == "exit") return {HumanAnswer::kExit, ""};
    if (answer.empty()) return {HumanAnswer::kAuto, ""};
    if (runs_code) {
      if (answer == "y" || answer == "Y" || answer == "yes") return {HumanAnswer::kAuto, ""};
      if (answer == "n" || answer == "N" || answer == "no") return {HumanAnswer::kReply, "refused"};
    }
    return {HumanAnswer::kReply, answer};
  }

 private:
  FILE* in_;
  FILE* out_;
};

}  // namespace

Result<std::unique_ptr<HumanInput>> MakeTerminalHuman(FILE* in, FILE* out,
                                                      bool allow_non_terminal) {
  if (!allow_non_terminal && !OnTerminal(in, out)) {
    return InvalidInput(
        "human_input_mode ALWAYS or TERMINATE asks a person, "
        "but stdin/stderr is not a terminal; "
        "run interactively, or set human_input_mode to NEVER");
  }
  return std::unique_ptr<HumanInput>(new TerminalHuman(in, out));
}

}  // namespace sbx::agent
