// Unit tests for copy-out against hostile workspaces and hostile destination directories.
#include "sandbox/workspace/copy_out.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <string>

#include "sandbox/fs/fs_beneath.h"
#include "tests/unit/files_test_util.h"

namespace sbx {
namespace {

using testing::Exists;
using testing::ModeOf;
using testing::ReadFile;
using testing::TempDir;
using testing::WriteFile;

std::map<std::string, CopiedEntry> ByPath(const CopyOutResult& result) {
  std::map<std::string, CopiedEntry> by_path;
  for (const auto& entry : result.entries) by_path[entry.path] = entry;
  return by_path;
}

void MakeDir(const std::string& path) { ASSERT_EQ(::mkdir(path.c_str(), 0755), 0) << path; }

TEST(CopyOutTest, RejectsHostileRequestsBeforeCopyingAnything) {
  TempDir workspace, dest;
  WriteFile(workspace / "ok.txt", "ok");
  const std::string hostile[] = {"/etc/passwd", "../x",    "a/../../x",
                                 "a\nb",        "esc\x1b", "",
                                 "*/x",         "out/",    std::string("a\0b", 3)};
  for (const std::string& bad : hostile) {
    auto result = CopyOut(workspace.path(), {"ok.txt", bad}, dest.path());
    ASSERT_FALSE(result) << bad;
    EXPECT_NE(result.error().message.find("request 1"), std::string::npos)
        << result.error().message;
  }
  EXPECT_FALSE(Exists(dest / "ok.txt"));
}

class CopyOutHostileTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override { ForceOpenBeneathFallbackForTesting(GetParam()); }
  void TearDown() override { ForceOpenBeneathFallbackForTesting(false); }
};

TEST_P(CopyOutHostileTest, CopiesOnlyRegularFilesWithinBudget) {
  TempDir workspace, dest;
  WriteFile(workspace / "result.txt", "42\n", 0600);
  WriteFile(workspace / "tool", "#!/bin/sh\n", 06755);
  ASSERT_EQ(::symlink("/etc/shadow", (workspace / "shadow").c_str()), 0);
  ASSERT_EQ(::symlink("/etc", (workspace / "etc").c_str()), 0);
  ASSERT_EQ(::mkfifo((workspace / "fifo").c_str(), 0644), 0);
  testing::MakeSparseFile(workspace / "sparse", off_t{1} << 40);
  MakeDir(workspace / "out");
  WriteFile(workspace / "out/a.csv", "a,b\n");
  ASSERT_EQ(::symlink("/etc/passwd", (workspace / "out/passwd").c_str()), 0);
  MakeDir(workspace / "out/sub");
  WriteFile(workspace / "out/sub/b.txt", "b");
  ASSERT_EQ(::mkfifo((workspace / "out/sub/fifo").c_str(), 0644), 0);

  ::alarm(30);  // a FIFO opened for reading would block forever: fail loudly instead
  auto result =
      CopyOut(workspace.path(),
              {"result.txt", "tool", "shadow", "etc/passwd", "fifo", "sparse", "out", "missing"},
              dest.path());
  ::alarm(0);
  ASSERT_TRUE(result) << result.error().ToString();
  auto by_path = ByPath(*result);
  EXPECT_EQ(by_path["result.txt"].status, CopyStatus::kCopied);
  EXPECT_EQ(by_path["tool"].status, CopyStatus::kCopied);
  EXPECT_EQ(by_path["shadow"].status, CopyStatus::kSkippedSymlink);
  EXPECT_EQ(by_path["etc/passwd"].status, CopyStatus::kSkippedSymlink);
  EXPECT_EQ(by_path["fifo"].status, CopyStatus::kSkippedSpecial);
  EXPECT_EQ(by_path["sparse"].status, CopyStatus::kOverBudget);
  EXPECT_EQ(by_path["sparse"].size, uint64_t{1} << 40);
  EXPECT_EQ(by_path["out/a.csv"].status, CopyStatus::kCopied);
  EXPECT_EQ(by_path["out/passwd"].status, CopyStatus::kSkippedSymlink);
  EXPECT_EQ(by_path["out/sub/b.txt"].status, CopyStatus::kCopied);
  EXPECT_EQ(by_path["out/sub/fifo"].status, CopyStatus::kSkippedSpecial);
  EXPECT_EQ(by_path["missing"].status, CopyStatus::kNotFound);
  EXPECT_EQ(result->files, 4u);

  EXPECT_EQ(ReadFile(dest / "result.txt"), "42\n");
  EXPECT_EQ(ModeOf(dest / "result.txt") & 07777, 0644u);
  EXPECT_EQ(ModeOf(dest / "tool") & 07777, 0755u);  // setuid and setgid dropped
  EXPECT_EQ(ReadFile(dest / "out/sub/b.txt"), "b");
  for (const char* absent : {"shadow", "etc", "fifo", "sparse", "out/passwd", "out/sub/fifo"})
    EXPECT_FALSE(Exists(dest / absent)) << absent;
}

INSTANTIATE_TEST_SUITE_P(CopyOut, CopyOutHostileTest, ::testing::Bool());

TEST(CopyOutTest, ListsTheFirstSkippedEntriesAndCountsTheRest) {
  TempDir workspace, dest;
  MakeDir(workspace / "out");
  WriteFile(workspace / "out/real.txt", "data");
  const size_t links = kMaxListedSkips + 40;
  for (size_t i = 0; i < links; ++i) {
    ASSERT_EQ(::symlink("/etc/passwd", (workspace / ("out/l" + std::to_string(i))).c_str()), 0);
  }
  auto result = CopyOut(workspace.path(), {"out"}, dest.path());
  ASSERT_TRUE(result) << result.error().ToString();
  size_t copied = 0, listed_skips = 0;
  for (const auto& entry : result->entries) {
    (entry.status == CopyStatus::kCopied ? copied : listed_skips) += 1;
  }
  EXPECT_EQ(copied, 1u) << "copied entries are always listed";
  EXPECT_EQ(listed_skips, kMaxListedSkips);
  EXPECT_EQ(result->unlisted, 40u);
  EXPECT_EQ(ReadFile(dest / "out/real.txt"), "data");
}

TEST(CopyOutTest, ReportsBadNamesInsideDirectories) {
  TempDir workspace, dest;
  MakeDir(workspace / "out");
  WriteFile(workspace / "out/new\nline", "x");
  WriteFile(workspace / "out/esc\x1b[31m", "x");
  WriteFile(workspace / "out/fine", "x");
  auto result = CopyOut(workspace.path(), {"out"}, dest.path());
  ASSERT_TRUE(result);
  auto by_path = ByPath(*result);
  EXPECT_EQ(by_path["out/new\nline"].status, CopyStatus::kSkippedBadName);
  EXPECT_EQ(by_path["out/esc\x1b[31m"].status, CopyStatus::kSkippedBadName);
  EXPECT_EQ(by_path["out/fine"].status, CopyStatus::kCopied);
}

TEST(CopyOutTest, GlobOnTheLastComponentIsCapped) {
  TempDir workspace, dest;
  MakeDir(workspace / "output");
  for (int i = 0; i < 5; ++i)
    WriteFile(workspace / ("output/fig" + std::to_string(i) + ".png"), "png");
  WriteFile(workspace / "output/notes.txt", "txt");
  WriteFile(workspace / "output/.hidden.png", "hidden");
  CopyOutBudgets budgets;
  budgets.max_glob_matches = 3;
  auto result = CopyOut(workspace.path(), {"output/*.png", "output/*.gif"}, dest.path(), budgets);
  ASSERT_TRUE(result);
  EXPECT_EQ(result->files, 3u);
  EXPECT_TRUE(result->truncated);
  auto by_path = ByPath(*result);
  EXPECT_EQ(by_path["output/*.png"].status, CopyStatus::kOverBudget);
  EXPECT_EQ(by_path["output/*.gif"].status, CopyStatus::kNotFound);
  EXPECT_TRUE(Exists(dest / "output/fig0.png"));
  EXPECT_FALSE(Exists(dest / "output/fig4.png"));
  EXPECT_FALSE(Exists(dest / "output/notes.txt"));
  EXPECT_FALSE(Exists(dest / "output/.hidden.png"));
}

TEST(CopyOutTest, EnforcesByteFileAndDepthBudgets) {
  TempDir workspace, dest;
  MakeDir(workspace / "out");
  for (int i = 0; i < 5; ++i) WriteFile(workspace / ("out/f" + std::to_string(i)), "0123456789");
  CopyOutBudgets bytes;
  bytes.max_bytes = 25;
  auto by_bytes = CopyOut(workspace.path(), {"out"}, dest.path(), bytes);
  ASSERT_TRUE(by_bytes);
  EXPECT_EQ(by_bytes->files, 2u);
  EXPECT_EQ(by_bytes->bytes, 20u);
  EXPECT_EQ(ByPath(*by_bytes)["out/f4"].status, CopyStatus::kOverBudget);

  TempDir dest2;
  CopyOutBudgets files;
  files.max_files = 3;
  auto by_files = CopyOut(workspace.path(), {"out"}, dest2.path(), files);
  ASSERT_TRUE(by_files);
  EXPECT_EQ(by_files->files, 3u);
  EXPECT_TRUE(by_files->truncated);

  TempDir deep_ws, dest3;
  std::string path = deep_ws.path();
  for (int i = 0; i < 70; ++i) {
    path += "/d";
    MakeDir(path);
    WriteFile(path + "/f", "x");
  }
  auto deep = CopyOut(deep_ws.path(), {"d"}, dest3.path());
  ASSERT_TRUE(deep);
  EXPECT_EQ(deep->files, 63u);  // d/f is depth 2 ... the 63rd d/../f is depth 64
  bool saw_too_deep = false;
  for (const auto& entry : deep->entries) saw_too_deep |= entry.status == CopyStatus::kTooDeep;
  EXPECT_TRUE(saw_too_deep);
}

TEST(CopyOutTest, StopsAtTheFileBudgetInAHugeDirectory) {
  TempDir workspace, dest;
  MakeDir(workspace / "many");
  for (int i = 0; i < 10'050; ++i) WriteFile(workspace / ("many/" + std::to_string(i)), "");
  auto result = CopyOut(workspace.path(), {"many"}, dest.path());
  ASSERT_TRUE(result);
  EXPECT_EQ(result->files, 10'000u);
  EXPECT_TRUE(result->truncated);
  EXPECT_LE(result->entries.size(), 10'001u);
}

TEST(CopyOutTest, NeverWritesThroughSymlinksPlantedInTheDestination) {
  TempDir workspace, dest, elsewhere;
  WriteFile(workspace / "a.txt", "new");
  MakeDir(workspace / "out");
  WriteFile(workspace / "out/x", "x");
  WriteFile(elsewhere / "victim", "original");
  ASSERT_EQ(::symlink((elsewhere / "victim").c_str(), (dest / "a.txt").c_str()), 0);
  ASSERT_EQ(::symlink(elsewhere.path().c_str(), (dest / "out").c_str()), 0);
  auto result = CopyOut(workspace.path(), {"a.txt", "out"}, dest.path());
  ASSERT_TRUE(result);
  auto by_path = ByPath(*result);
  EXPECT_EQ(by_path["a.txt"].status, CopyStatus::kCopied);  // replaced the symlink itself
  EXPECT_EQ(by_path["out/x"].status, CopyStatus::kDestinationError);
  EXPECT_EQ(ReadFile(elsewhere / "victim"), "original");
  EXPECT_FALSE(Exists(elsewhere / "x"));
  EXPECT_TRUE(S_ISREG(ModeOf(dest / "a.txt")));
  EXPECT_EQ(ReadFile(dest / "a.txt"), "new");
}

TEST(CopyOutTest, ReservedDestinationsAreNeverReplaced) {
  TempDir workspace, dest;
  WriteFile(workspace / "transcript.jsonl", "forged\n");
  WriteFile(workspace / "network-1.jsonl", "forged\n");
  WriteFile(workspace / "report.md", "fine\n");
  MakeDir(workspace / "sub");
  WriteFile(workspace / "sub/network-1.jsonl", "fine\n");  // only the top-level name is reserved
  WriteFile(dest / "transcript.jsonl", "real\n");
  WriteFile(dest / "network-1.jsonl", "real\n");
  CopyOutBudgets budgets;
  budgets.reserved = {"transcript.jsonl", "network-*.jsonl"};
  auto result = CopyOut(workspace.path(), {"*", "sub"}, dest.path(), budgets);
  ASSERT_TRUE(result) << result.error().ToString();
  auto by_path = ByPath(*result);
  for (const char* record : {"transcript.jsonl", "network-1.jsonl"}) {
    EXPECT_EQ(by_path[record].status, CopyStatus::kDestinationError) << record;
    EXPECT_NE(by_path[record].detail.find("the run's own record"), std::string::npos) << by_path[record].detail;
    EXPECT_EQ(ReadFile(dest / record), "real\n") << record;
  }
  EXPECT_EQ(ReadFile(dest / "report.md"), "fine\n");
  EXPECT_EQ(ReadFile(dest / "sub/network-1.jsonl"), "fine\n");
  // Without the reservation the same copy replaces them (what the agent's out-dir suffered).
  auto unreserved = CopyOut(workspace.path(), {"transcript.jsonl"}, dest.path());
  ASSERT_TRUE(unreserved);
  EXPECT_EQ(ReadFile(dest / "transcript.jsonl"), "forged\n");
}

TEST(CopyOutTest, OverlappingRequestsCopyEachFileOnce) {
  TempDir workspace, dest;
  MakeDir(workspace / "out");
  WriteFile(workspace / "out/a.png", "png");
  auto result = CopyOut(workspace.path(), {"out", "out/*.png", "out/a.png"}, dest.path());
  ASSERT_TRUE(result);
  EXPECT_EQ(result->files, 1u);
  EXPECT_EQ(result->entries.size(), 1u);
}

TEST(CopyOutTest, SkipsSockets) {
  TempDir workspace, dest;
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::string path = workspace / "sock";
  ASSERT_LT(path.size(), sizeof(address.sun_path));
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  ::close(fd);
  auto result = CopyOut(workspace.path(), {"sock"}, dest.path());
  ASSERT_TRUE(result);
  EXPECT_EQ(ByPath(*result)["sock"].status, CopyStatus::kSkippedSpecial);
  EXPECT_FALSE(Exists(dest / "sock"));
}

}  // namespace
}  // namespace sbx
