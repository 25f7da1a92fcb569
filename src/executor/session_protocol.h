// The messages of the session driver's protocol (rootfs/session_driver.py documents the wire
// form): building requests, and parsing the driver's replies strictly. A reply comes from a
// process that runs untrusted code, so a reply that is not exactly the documented shape is an
// Error naming the field, and the caller treats the session as lost.
#pragma once

#include <cstdint>
#include <string>

#include "sandbox/error.h"
#include "src/executor/code_executor.h"

namespace sbx::executor {

struct ExecRequest {
  int id = 0;
  std::string language;
  double timeout_seconds = 60;
  uint64_t output_bytes = 1 << 20;  // per stream; the driver keeps head and tail
  std::string figures_dir = "output/figures";
};

std::string ExecRequestJson(const ExecRequest& request);
std::string CloseRequestJson();

// Checks the driver's first frame: {"op": "ready", ...}.
Result<void> ParseReady(const std::string& json);

// Fills `result` (output, value, error, exit code, figures, cpu time) from a reply to request
// `expected_id`. Figure paths must be relative workspace paths under `figures_dir`.
Result<void> ParseExecReply(const std::string& json, int expected_id,
                            const std::string& figures_dir, CodeResult& result);

}  // namespace sbx::executor
