// The person in a team's loop, asked before an agent replies when its
// human_input_mode says so (AG2's get_human_input): the answer lets the agent
// reply itself, replaces its reply, or ends the conversation.
#pragma once

#include <cstdio>
#include <memory>
#include <string>

#include "base/error.h"

namespace sbx::agent {

struct HumanPrompt {
  std::string agent;    // who is about to reply
  bool executes_code;   // the executor: the question is whether to run `code`
  std::string message;  // the message it answers
  std::string code;     // the executor's blocks, as they would run; empty otherwise
};

struct HumanAnswer {
  enum Kind { kAuto, kReply, kExit };
  Kind kind = kAuto;
  std::string text;  // kReply: the person's words
};

class HumanInput {
 public:
  virtual ~HumanInput() = default;
  virtual HumanAnswer Ask(const HumanPrompt& prompt) = 0;
};

// Reads one answer per line. For the executor with code to run: Enter, y or yes
// runs it; n or no refuses it; other text refuses it with that reason.
// Otherwise Enter lets the agent reply and other text is the reply. "exit", or
// the end of input, ends the conversation. `in` and `out` must be terminals
// unless `allow_non_terminal` (tests): a run never waits on input nobody types.
Result<std::unique_ptr<HumanInput>> MakeTerminalHuman(FILE* in, FILE* out,
                                                      bool allow_non_terminal = false);

}  // namespace sbx::agent
