// Human approval before code runs, as AutoGen's human_input_mode and the Agents SDK's
// needs_approval: `never` runs everything the model writes; `always` shows each execution on
// the terminal and asks. A refusal (with the person's reason) goes back to the model.
#pragma once

#include <cstdio>
#include <memory>
#include <string>

#include "base/error.h"

namespace sbx::agent {

enum class ApprovalMode { kNever, kAlways };

Result<ApprovalMode> ParseApprovalMode(const std::string& text);

struct Decision {
  bool approved = true;
  std::string reason;  // the person's words when refused
};

class Approver {
 public:
  virtual ~Approver() = default;
  // `what` names the tool ("run_python"); `code` is what would run.
  virtual Decision Approve(const std::string& what, const std::string& code) = 0;
};

// Whether both streams are terminals: asking a person needs one, never input nobody types.
bool OnTerminal(FILE* in, FILE* out);

// kNever: approves everything. kAlways: asks on `in`/`out`, which must be a terminal unless
// `allow_non_terminal` (tests); otherwise an error, never a run that hangs waiting for input.
Result<std::unique_ptr<Approver>> MakeApprover(ApprovalMode mode, FILE* in, FILE* out,
                                               bool allow_non_terminal = false);

}  // namespace sbx::agent
