// The messages of the session driver's protocol (rootfs/session_driver.py documents the wire
// form): building requests, and parsing the driver's replies strictly. A reply comes from a
// process that runs untrusted code, so a reply that is not exactly the documented shape is an
// Error naming the field, and the caller treats the session as lost.
#pragma once

#include <cstdint>
#include <string>

#include "base/error.h"
#include "src/executor/code_executor.h"

namespace sbx::executor {

struct ExecRequest {
  int id = 0;
  std::string language;
  double timeout_seconds = 60;
  uint64_t output_bytes = 1 << 20;  // per stream; the driver keeps head and tail
  std::string figures_dir = "output/figures";
  bool stream = false;  // the driver sends "output" frames as the block writes, before the reply
};

std::string ExecRequestJson(const ExecRequest& request);
std::string CloseRequestJson();

// Checks the driver's first frame: {"op": "ready", ...}.
Result<void> ParseReady(const std::string& json);

// The largest reply a driver that keeps to `output_bytes` per stream can send: both streams,
// their interleaving (within twice the budget), a value repr, an error message and a
// traceback (64 KiB each, cut by the driver), all JSON-escaped (at most 6 bytes per byte),
// and room for the rest. A session whose reply is larger is lost, whatever it announces.
size_t MaxReplyBytes(uint64_t output_bytes);

// A reply nests at most this deep and holds at most this many JSON values (the driver merges
// its interleaved chunks and keeps at most 65,536 of them): the DOM a reply builds in the
// runner stays near the reply's own size, never the ~40x a frame of nested brackets costs.
inline constexpr int kMaxReplyDepth = 8;
inline constexpr size_t kMaxReplyValues = size_t{1} << 18;
inline constexpr size_t kMaxReplyFigures = 1024;

// Fills `result` (output, value, error, exit code, figures, cpu time) from a reply to request
// `expected_id`. Figures must be `figures_dir`/cell-<expected_id>-<n>.png, as the driver names
// them (no other name, so no control character, reaches a result or the model).
Result<void> ParseExecReply(const std::string& json, int expected_id,
                            const std::string& figures_dir, CodeResult& result);

// The text of one streamed stream in output frames is at most this much of a budget of
// `output_bytes` raw bytes: each byte that is not UTF-8 becomes U+FFFD (3 bytes), and a
// character cut at the budget's end one more. Past it the frames were forged by the code.
inline uint64_t MaxStreamedTextBytes(uint64_t output_bytes) { return 3 * output_bytes + 3; }

// A frame that answers a streaming request: either an "output" frame, filling `chunk`
// (false returned), or the reply, filling `result` as ParseExecReply does (true returned).
// An output frame must be exactly {"op": "output", "id", "stream": "stdout"|"stderr", "text"}.
Result<bool> ParseStreamingFrame(const std::string& json, int expected_id,
                                 const std::string& figures_dir, OutputChunk& chunk,
                                 CodeResult& result);

}  // namespace sbx::executor
