// Cancelling a session's execution: a cancel that comes before the execution starts still
// counts, and one that comes after it returned touches nothing later.
#include <fcntl.h>
#include <unistd.h>

#include <string>

#include <gtest/gtest.h>

#include "session_checks.h"
#include "src/executor/executors.h"

namespace sbx::executor {
namespace {

using sbx::testing::NewSession;
using sbx::testing::Python;

bool InWorkspace(const SessionExecutor& session, const std::string& name) {
  return ::faccessat(session.workspace_fd(), name.c_str(), F_OK, 0) == 0;
}

// Runs `source` as one Python block with `cancel` as its token.
CodeResult RunWith(SessionExecutor& session, const std::string& source, CancelToken& cancel) {
  auto result = session.ExecuteStreaming({{"python", source}}, {}, &cancel);
  EXPECT_TRUE(result) << result.error().ToString();
  return result ? *result : CodeResult{};
}

TEST(SessionCancel, ACancelBeforeTheExecutionStartsRunsNothing) {
  auto session = NewSession();
  ASSERT_TRUE(session);
  // Before the session's sandbox exists: none is started for it.
  CancelToken before_start;
  session->Cancel(before_start);
  CodeResult first = RunWith(*session, "open('ran-first', 'w').close()", before_start);
  EXPECT_EQ(first.status, RunStatus::kCancelled);
  EXPECT_EQ(first.blocks_run, 0u);
  EXPECT_NE(first.notice.find("nothing was run"), std::string::npos) << first.notice;
  EXPECT_FALSE(InWorkspace(*session, "ran-first"));
  // With a live session: nothing runs, and the session keeps its state.
  CodeResult kept = Python(*session, "x = 41");
  ASSERT_EQ(kept.status, RunStatus::kExited) << kept.notice;
  CancelToken cancelled;
  session->Cancel(cancelled);
  CodeResult second = RunWith(*session, "open('ran-second', 'w').close()\nx += 1", cancelled);
  EXPECT_EQ(second.status, RunStatus::kCancelled);
  EXPECT_FALSE(second.state_lost);
  EXPECT_FALSE(InWorkspace(*session, "ran-second"));
  CodeResult after = Python(*session, "print(x)");
  EXPECT_EQ(after.stdout_text, "41\n") << after.notice;
  EXPECT_FALSE(after.state_lost);
}

TEST(SessionCancel, ALateCancelLeavesTheNextExecutionAlone) {
  auto session = NewSession();
  ASSERT_TRUE(session);
  CancelToken finished;
  CodeResult first = RunWith(*session, "x = 41", finished);
  ASSERT_EQ(first.status, RunStatus::kExited) << first.notice;
  // The hang-up of a client whose answer is already on its way, then a cancel between
  // executions: neither is the next execution's.
  session->Cancel(finished);
  session->Cancel();
  CancelToken next;
  CodeResult second = RunWith(*session, "print(x + 1)", next);
  EXPECT_EQ(second.status, RunStatus::kExited) << second.notice;
  EXPECT_EQ(second.stdout_text, "42\n") << second.notice;
  EXPECT_FALSE(second.state_lost);
}

TEST(SessionCancel, ACancelWhileTheBlockRunsKillsTheSession) {
  auto session = NewSession();
  ASSERT_TRUE(session);
  ASSERT_EQ(Python(*session, "x = 41").status, RunStatus::kExited);
  CancelToken cancel;
  const std::string source =
      "import time\nprint('started', flush=True)\ntime.sleep(60)\nopen('ran', 'w').close()";
  const OutputSink cancel_once_started = [&](const OutputChunk& chunk) {
    if (chunk.text.find("started") != std::string::npos) session->Cancel(cancel);
  };
  auto result = session->ExecuteStreaming({{"python", source}}, cancel_once_started, &cancel);
  ASSERT_TRUE(result) << result.error().ToString();
  EXPECT_EQ(result->status, RunStatus::kCancelled);
  EXPECT_TRUE(result->state_lost);
  EXPECT_FALSE(InWorkspace(*session, "ran"));
  CodeResult next = Python(*session, "print('x' in globals())");
  EXPECT_EQ(next.stdout_text, "False\n");
  EXPECT_NE(next.notice.find("cancelled"), std::string::npos) << next.notice;
}

TEST(SessionCancel, CancelFromNowOnRefusesEveryLaterExecution) {
  auto session = NewSession();
  ASSERT_TRUE(session);
  ASSERT_EQ(Python(*session, "x = 41").status, RunStatus::kExited);
  session->CancelFromNowOn();
  for (const char* name : {"ran-first", "ran-second"}) {
    CodeResult refused = Python(*session, "open('" + std::string(name) + "', 'w').close()");
    EXPECT_EQ(refused.status, RunStatus::kCancelled);
    EXPECT_NE(refused.notice.find("nothing was run"), std::string::npos) << refused.notice;
    EXPECT_FALSE(InWorkspace(*session, name));
  }
}

}  // namespace
}  // namespace sbx::executor
