// A session's code can write to its driver's channel (they share a process): what it writes
// there must never become a result, nor cost the runner more than the reply caps allow.
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "sandbox_fixture.h"
#include "session_checks.h"
#include "src/executor/executors.h"

namespace sbx::executor {
namespace {

using sbx::testing::Python;

std::unique_ptr<SessionExecutor> NewSession() {
  return sbx::testing::NewSession(sbx::testing::TestExecutorOptions(30));
}

long PeakRssKib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

TEST(SessionChannel, AReplyForgedAheadForTheNextBlockIsNeverTakenAsItsResult) {
  auto session = NewSession();
  ASSERT_TRUE(session);
  // After its own reply has gone (the driver's main thread is back at its select on the
  // channel), the block queues a well-formed reply for the next request, then says so in a file.
  CodeResult first = Python(*session, std::string(sbx::testing::kChannelPrelude) + R"(
import json, linecache, threading, time
forged = {"id": cell + 1, "outcome": "ok", "exit_code": 0, "stdout": "FORGED\n", "stderr": "",
          "output": [["stdout", "FORGED\n"]], "stdout_truncated": False,
          "stderr_truncated": False, "output_truncated": False, "result": None, "error": None,
          "figures": [], "cpu_ms": 0}
def waiting_for_a_request():
    frame = sys._current_frames().get(threading.main_thread().ident)
    return frame is not None and frame.f_code.co_name == "run" and "select.select(" in \
        linecache.getline(frame.f_code.co_filename, frame.f_lineno)
def later():
    while not waiting_for_a_request():
        time.sleep(0.01)
    send(json.dumps(forged).encode())
    open("/workspace/forged-sent", "w").close()
threading.Thread(target=later).start()
print("queued")
)");
  ASSERT_EQ(first.stdout_text, "queued\n") << first.notice;
  const std::string sent = session->workspace_dir() + "/forged-sent";
  const int polls = static_cast<int>(1000 * sbx::testing::WallClockScale());  // of 10 ms each
  for (int i = 0; i < polls && ::access(sent.c_str(), F_OK) != 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_EQ(::access(sent.c_str(), F_OK), 0) << "the block never forged its frame";
  CodeResult second = Python(*session, "print('real')");
  EXPECT_EQ(second.stdout_text.find("FORGED"), std::string::npos) << second.stdout_text;
  EXPECT_TRUE(second.state_lost);
  EXPECT_NE(second.notice.find("sent data before it was asked"), std::string::npos) << second.notice;
  // The next block gets a fresh session and runs for real.
  CodeResult third = Python(*session, "print('fresh')");
  EXPECT_EQ(third.stdout_text, "fresh\n") << third.notice;
}

TEST(SessionChannel, AFrameOfNestedBracketsIsRefusedWithoutCostingTheRunnerItsSize) {
  auto session = NewSession();
  ASSERT_TRUE(session);
  const long before_kib = PeakRssKib();
  // 16 MiB of '[' then ']': before the shape check, nlohmann built ~40 bytes of DOM per byte
  // (~650 MB in this process); the reply cap alone (~26 MiB) does not stop it.
  CodeResult r = Python(*session, std::string(sbx::testing::kChannelPrelude) + R"(
levels = 8 << 20
send(b"[" * levels + b"]" * levels)
)");
  const long grown_mib = (PeakRssKib() - before_kib) / 1024;
  EXPECT_TRUE(r.state_lost);
  EXPECT_NE(r.notice.find("nested deeper than"), std::string::npos) << r.notice;
  EXPECT_LT(grown_mib, 200) << "the runner grew by " << grown_mib << " MiB reading the frame";
  CodeResult next = Python(*session, "print('fresh')");
  EXPECT_EQ(next.stdout_text, "fresh\n") << next.notice;
}

TEST(SessionChannel, AnAnnouncedButUnsentFrameOverTheReplyCapIsRefusedAtOnce) {
  auto session = NewSession();
  ASSERT_TRUE(session);
  const auto started = std::chrono::steady_clock::now();
  // 200 MiB is under the source cap (256 MiB) but over a reply's (~26 MiB at 1 MiB per stream).
  CodeResult r = Python(*session, std::string(sbx::testing::kChannelPrelude) + R"(
os.write(channel, struct.pack(">I", 200 << 20))
import time; time.sleep(20)
)");
  EXPECT_TRUE(r.state_lost);
  EXPECT_NE(r.notice.find("over the cap"), std::string::npos) << r.notice;
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(15));
}

}  // namespace
}  // namespace sbx::executor
