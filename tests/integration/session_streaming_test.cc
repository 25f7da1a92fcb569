// ExecuteStreaming: a block's output reaches the caller while the block runs, within the
// output budget, and frames the code forges on the driver's channel cannot stretch it.
#include <fcntl.h>
#include <unistd.h>

#include <functional>
#include <string>
#include <vector>

#include "sandbox_fixture.h"
#include "session_checks.h"
#include "src/executor/executors.h"
#include "src/executor/session_protocol.h"
#include "tests/integration/test_policy.h"

namespace sbx::executor {
namespace {

struct Received {
  std::string stdout_text;
  std::string stderr_text;
  int idle = 0;
  std::vector<OutputChunk> chunks;
};

Result<CodeResult> RunStreaming(SessionExecutor& session, const std::string& source, Received& received,
                                const std::function<void(const OutputChunk&)>& also = {}) {
  return session.ExecuteStreaming({{"python", source}}, [&](const OutputChunk& chunk) {
    received.chunks.push_back(chunk);
    if (chunk.stream == OutputChunk::Stream::kIdle) {
      ++received.idle;
    } else {
      (chunk.stream == OutputChunk::Stream::kStderr ? received.stderr_text : received.stdout_text) += chunk.text;
    }
    if (also) also(chunk);
  }, nullptr);
}

TEST(SessionStreaming, OutputReachesTheCallerWhileTheBlockStillRuns) {
  auto session = sbx::testing::NewSession(sbx::testing::TestExecutorOptions(60));
  ASSERT_TRUE(session);
  // The block prints, then waits for a file that only the sink creates on seeing that print:
  // without live output it waits out its own deadline and says so.
  const std::string go = session->workspace_dir() + "/go";
  Received received;
  auto result = RunStreaming(*session, R"(
import os, sys, time
print("first", flush=True)
deadline = time.monotonic() + 30
while not os.path.exists("/workspace/go") and time.monotonic() < deadline:
    time.sleep(0.01)
print("second" if os.path.exists("/workspace/go") else "never saw go")
sys.stderr.write("done\n")
)",
                             received, [&](const OutputChunk& chunk) {
                               if (chunk.text.find("first") != std::string::npos) {
                                 ::close(::open(go.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644));
                               }
                             });
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_EQ(result->stdout_text, "first\nsecond\n") << result->notice;
  EXPECT_EQ(received.stdout_text, result->stdout_text);
  EXPECT_EQ(received.stderr_text, "done\n");
  EXPECT_FALSE(result->state_lost);
}

TEST(SessionStreaming, ACharacterSplitAcrossWritesArrivesWhole) {
  auto session = sbx::testing::NewSession();
  ASSERT_TRUE(session);
  Received received;
  // Two writes with a pause between them, so the drain reads them apart: the first ends in
  // the middle of "é" (0xc3 0xa9), and a byte that is no UTF-8 at all becomes U+FFFD.
  auto result = RunStreaming(*session, R"(
import os, time
os.write(1, b"caf\xc3")
time.sleep(0.2)
os.write(1, b"\xa9 \xff\n")
)",
                             received);
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_EQ(received.stdout_text, "caf\u00e9 \ufffd\n");
  EXPECT_EQ(received.stdout_text, result->stdout_text);
}

TEST(SessionStreaming, StreamedOutputStopsAtTheBudgetAndTheResultKeepsHeadAndTail) {
  auto options = sbx::testing::TestExecutorOptions();
  options.policy = testing::Changed(options.policy, [](Policy& p) { p.limits.output_bytes = 4096; });
  auto session = sbx::testing::NewSession(std::move(options));
  ASSERT_TRUE(session);
  Received received;
  auto result = RunStreaming(*session, "print('x' * 100000)\nprint('END')", received);
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_EQ(received.stdout_text, std::string(4096, 'x'));
  EXPECT_TRUE(result->stdout_truncated);
  EXPECT_NE(result->stdout_text.find("END"), std::string::npos);
}

TEST(SessionStreaming, SilenceIsToldToTheSinkAsIdleChunks) {
  auto options = sbx::testing::TestExecutorOptions();
  options.stream_idle_seconds = 0.2;
  auto session = sbx::testing::NewSession(std::move(options));
  ASSERT_TRUE(session);
  Received received;
  auto result = RunStreaming(*session, "import time\ntime.sleep(1.5)\nprint('awake')", received);
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_GE(received.idle, 3) << "a 1.5 s silence with a 0.2 s idle interval";
  EXPECT_EQ(received.stdout_text, "awake\n");
  // Without a sink there is nothing to tell.
  CodeResult plain = sbx::testing::Python(*session, "import time\ntime.sleep(0.5)\nprint('ok')");
  EXPECT_EQ(plain.stdout_text, "ok\n");
}

TEST(SessionStreaming, ForgedOutputFramesBeyondTheBudgetLoseTheSession) {
  auto options = sbx::testing::TestExecutorOptions();
  options.policy = testing::Changed(options.policy, [](Policy& p) { p.limits.output_bytes = 4096; });
  auto session = sbx::testing::NewSession(std::move(options));
  ASSERT_TRUE(session);
  // Within the budget a forged frame is only more of the code's own output.
  Received within;
  auto small = RunStreaming(*session, std::string(sbx::testing::kChannelPrelude) + "output('forged but small\\n')", within);
  ASSERT_TRUE(small) << small.error().message;
  EXPECT_FALSE(small->state_lost) << small->notice;
  EXPECT_EQ(within.stdout_text, "forged but small\n");
  // Past it (the text of 4096 bytes is at most 3 * 4096 + 3), the frames were not the driver's.
  Received flood;
  auto big = RunStreaming(*session, std::string(sbx::testing::kChannelPrelude) + "for _ in range(20): output('y' * 1000)",
                          flood);
  ASSERT_TRUE(big) << big.error().message;
  EXPECT_TRUE(big->state_lost);
  EXPECT_NE(big->notice.find("more output than the stream's budget"), std::string::npos) << big->notice;
  EXPECT_LE(flood.stdout_text.size(), MaxStreamedTextBytes(4096));
  // An output frame for another request is refused the same way.
  Received other;
  auto wrong = RunStreaming(*session, std::string(sbx::testing::kChannelPrelude) + "output('x', id=cell + 1)", other);
  ASSERT_TRUE(wrong) << wrong.error().message;
  EXPECT_TRUE(wrong->state_lost);
  EXPECT_NE(wrong->notice.find("output for request"), std::string::npos) << wrong->notice;
  EXPECT_TRUE(other.stdout_text.empty());
}

TEST(SessionStreaming, WithoutASinkAnOutputFrameIsNoReply) {
  auto session = sbx::testing::NewSession();
  ASSERT_TRUE(session);
  CodeResult r = sbx::testing::Python(*session, std::string(sbx::testing::kChannelPrelude) + "output('sneaked')\nprint('real')");
  EXPECT_TRUE(r.state_lost);
  EXPECT_NE(r.notice.find("session driver reply"), std::string::npos) << r.notice;
}

}  // namespace
}  // namespace sbx::executor
