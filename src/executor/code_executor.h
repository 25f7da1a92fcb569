// The executor interface: what the agent loop (or any C++ program linking sbx) calls to run
// code, and the result it gets back.
//
// Usage:
//   auto executor = SessionExecutor::Create(options);        // or SandboxExecutor, LocalExecutor
//   auto result = (*executor)->Execute({{"python", "import pandas as pd\nx = 1"},
//                                       {"bash", "ls -l"}});
//   // result->exit_code, result->output, result->files_changed, result->images ...
//
// Execute runs the blocks in order and stops after the first that fails (as AutoGen's
// executors do). Every block is checked first: an unknown language is an error result and
// nothing is run. An Error (not a result) means sbx itself could not run anything: the image
// is missing, the policy is invalid, the session could not be started.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "sandbox/launch/run_result.h"

namespace sbx::executor {

struct CodeBlock {
  std::string language;  // "python", "bash" or "sh"
  std::string source;    // any bytes: it reaches the interpreter as a file, never argv
};

// A Python exception that ended a block.
struct CodeError {
  std::string type;       // "ZeroDivisionError"
  std::string message;
  std::string traceback;  // as python3 prints it, without the driver's frames
};

struct CodeResult {
  // How the last block run ended, in the sandbox's terms: kExited (see exit_code),
  // kTimedOut, kOomKilled, kPidsLimit, kSignaled, kSeccompViolation, kCancelled.
  RunStatus status = RunStatus::kExited;
  int exit_code = 0;  // 0 ok; 1 a Python exception; the shell's code; 124 timed out
  std::string output;  // stdout and stderr interleaved in the order they were written
  std::string stdout_text;
  std::string stderr_text;
  bool stdout_truncated = false;  // head and tail kept, the middle cut with a marker
  bool stderr_truncated = false;
  bool output_truncated = false;
  std::optional<std::string> value;  // repr() of a trailing Python expression
  std::optional<CodeError> error;
  uint64_t wall_ms = 0;
  uint64_t cpu_ms = 0;
  uint64_t peak_memory_bytes = 0;  // of the sandbox (a session: its high-water mark so far)
  size_t blocks_run = 0;
  std::vector<std::string> files_changed;  // workspace paths created or modified, sorted
  std::vector<std::string> images;         // figures saved by the blocks (workspace paths)
  // The session's variables and imports were lost: it was killed (timeout beyond the grace,
  // out of memory, a crash) and the next execution starts a fresh one. `notice` says why.
  bool state_lost = false;
  std::string notice;  // for people and models: why state was lost, what was rejected
  bool rejected = false;  // nothing ran: a block was refused (unknown language)
  // Network allowlist: what the policy refused during this execution ("name (reason)"), what
  // it allowed but failed (the name did not resolve, the upstream was unreachable or failed
  // verification), how many decisions of each kind the audit log recorded during it
  // (DNS queries and connections; denied counts failures too), and the session's audit log.
  std::vector<std::string> network_blocked;
  std::vector<std::string> network_failed;
  uint64_t network_allowed = 0;
  uint64_t network_denied = 0;
  std::string network_log_path;
  std::string network_mode = "none";  // "none", "host" (LocalExecutor always) or "allowlist"
  // Known once the sandbox has ended, so its log is complete: after every SandboxExecutor call,
  // and after a SessionExecutor execution that lost its session (a live session's log is still
  // being written; SessionExecutor::EndedNetworks() has them once it ends). Which TCP ports
  // were captured ("all": the nf_tables redirect; "listed+audit": a listener per port) and the
  // SHA-256 of the log as sbx-netd wrote it (compare with `sha256sum` of the file).
  std::string network_coverage;
  std::string network_log_sha256;
};

// A piece of a block's output as it is written, for callers that show output live. The
// pieces of one stream, joined, are the head of that stream's text in the result (at most
// `output_bytes` of it): the result stays the complete record.
struct OutputChunk {
  enum class Stream {
    kStdout,
    kStderr,
    // Nothing written for a while (ExecutorOptions::stream_idle_seconds): the block still runs
    // (a caller streaming over a network sends a keepalive, so proxies keep the connection).
    // `text` is empty.
    kIdle,
  };
  Stream stream = Stream::kStdout;
  std::string text;  // valid UTF-8 (bytes that are not UTF-8 become U+FFFD)
};
// Called on the thread that runs Execute, in the order the output was drained.
using OutputSink = std::function<void(const OutputChunk&)>;

class CodeExecutor {
 public:
  virtual ~CodeExecutor() = default;
  virtual Result<CodeResult> Execute(const std::vector<CodeBlock>& blocks) = 0;
  // A short name for logs and transcripts: "sandbox", "session", "local (NO ISOLATION)".
  virtual std::string Name() const = 0;
};

// Checks the languages of every block; the error names the block and the fix.
Result<void> ValidateBlocks(const std::vector<CodeBlock>& blocks);

}  // namespace sbx::executor
