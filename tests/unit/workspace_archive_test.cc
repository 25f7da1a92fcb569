// Unit tests for workspace archives: normalized round trips and hostile hand-made archives.
#include "sandbox/workspace/workspace_archive.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstring>
#include <string>

#include "sandbox/isolation/userns.h"
#include "tests/unit/files_test_util.h"

namespace sbx {
namespace {

using testing::Exists;
using testing::ModeOf;
using testing::ReadFile;
using testing::TempDir;
using testing::TestOwner;
using testing::WriteFile;

std::string RunAndCapture(const std::string& command) {
  std::string output;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return output;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) output.append(buffer, n);
  ::pclose(pipe);
  return output;
}

// A ustar header written by hand, independent of the code under test.
std::string RawHeader(const std::string& name, char type, size_t size, bool good_checksum = true) {
  std::array<char, 512> block{};
  std::memcpy(block.data(), name.data(), std::min<size_t>(name.size(), 100));
  std::snprintf(&block[100], 8, "%07o", 0644);
  std::snprintf(&block[108], 8, "%07o", 0);
  std::snprintf(&block[116], 8, "%07o", 0);
  std::snprintf(&block[124], 12, "%011zo", size);
  std::snprintf(&block[136], 12, "%011o", 0);
  block[156] = type;
  std::memcpy(&block[257], "ustar", 6);
  std::memcpy(&block[263], "00", 2);
  std::memset(&block[148], ' ', 8);
  unsigned sum = 0;
  for (char c : block) sum += static_cast<unsigned char>(c);
  std::snprintf(&block[148], 8, "%06o", good_checksum ? sum : sum + 1);
  return std::string(block.data(), block.size());
}

std::string Padded(const std::string& data) {
  return data + std::string((512 - data.size() % 512) % 512, '\0');
}

std::string RawArchive(const std::string& members) { return members + std::string(1024, '\0'); }

TEST(WorkspaceArchiveTest, RoundTripKeepsOnlyNormalizedFilesAndDirectories) {
  TempDir workspace, restored, dir;
  WriteFile(workspace / "main.py", "print('hi')\n", 0600);
  WriteFile(workspace / "run.sh", "#!/bin/sh\n", 04755);
  ASSERT_EQ(::mkdir((workspace / "out").c_str(), 0777), 0);
  ASSERT_EQ(::mkdir((workspace / "out/empty").c_str(), 0700), 0);
  const std::string long_name = "out/" + std::string(120, 'l') + "/" + std::string(90, 'm');
  ASSERT_EQ(::mkdir((workspace / ("out/" + std::string(120, 'l'))).c_str(), 0755), 0);
  WriteFile(workspace / long_name, std::string(1000, 'x'));
  ASSERT_EQ(::symlink("/etc/shadow", (workspace / "shadow").c_str()), 0);
  ASSERT_EQ(::mkfifo((workspace / "out/fifo").c_str(), 0644), 0);
  WriteFile(workspace / "bad\nname", "x");

  const std::string archive = dir / "ws.tar";
  auto report = PersistWorkspaceTar(workspace.path(), archive);
  ASSERT_TRUE(report) << report.error().ToString();
  EXPECT_EQ(report->files, 3u);
  EXPECT_EQ(report->skipped.size(), 3u);  // the symlink, the FIFO and the newline name

  // GNU tar reads it, and sees uid/gid 0, normalized modes and nothing but files and dirs.
  std::string listing = RunAndCapture("tar --numeric-owner -tvf " + archive);
  EXPECT_NE(listing.find("-rwxr-xr-x 0/0"), std::string::npos) << listing;
  EXPECT_NE(listing.find("-rw-r--r-- 0/0"), std::string::npos) << listing;
  EXPECT_NE(listing.find(std::string(90, 'm')), std::string::npos) << listing;
  EXPECT_EQ(listing.find("shadow"), std::string::npos) << listing;
  EXPECT_EQ(listing.find("rws"), std::string::npos) << listing;

  auto staged = RestoreWorkspaceTar(archive, restored.path(), TestOwner());
  ASSERT_TRUE(staged) << staged.error().ToString();
  EXPECT_EQ(ReadFile(restored / "main.py"), "print('hi')\n");
  EXPECT_EQ(ModeOf(restored / "main.py") & 07777, 0644u);
  EXPECT_EQ(ModeOf(restored / "run.sh") & 07777, 0755u);
  EXPECT_EQ(ModeOf(restored / "out") & 07777, 0755u);
  EXPECT_TRUE(S_ISDIR(ModeOf(restored / "out/empty")));
  EXPECT_EQ(ReadFile(restored / long_name), std::string(1000, 'x'));
  EXPECT_FALSE(Exists(restored / "shadow"));
  EXPECT_FALSE(Exists(restored / "out/fifo"));

  // The same tree gives the same bytes.
  const std::string again = dir / "again.tar";
  ASSERT_TRUE(PersistWorkspaceTar(workspace.path(), again));
  EXPECT_EQ(ReadFile(archive), ReadFile(again));
}

TEST(WorkspaceArchiveTest, PersistFailsOnASparseTerabyteAndRemovesTheArchive) {
  TempDir workspace, dir;
  testing::MakeSparseFile(workspace / "sparse", off_t{1} << 40);
  auto report = PersistWorkspaceTar(workspace.path(), dir / "ws.tar");
  ASSERT_FALSE(report);
  EXPECT_NE(report.error().message.find("budget"), std::string::npos) << report.error().message;
  EXPECT_FALSE(Exists(dir / "ws.tar"));
}

TEST(WorkspaceArchiveTest, PersistSkipsTreesDeeperThanTheBudget) {
  TempDir workspace, restored, dir;
  std::string path = workspace.path();
  for (int i = 0; i < 70; ++i) {
    path += "/d";
    ASSERT_EQ(::mkdir(path.c_str(), 0755), 0);
  }
  auto report = PersistWorkspaceTar(workspace.path(), dir / "ws.tar");
  ASSERT_TRUE(report) << report.error().ToString();
  EXPECT_EQ(report->directories, 64u);
  EXPECT_EQ(report->skipped.size(), 1u);
  ASSERT_TRUE(RestoreWorkspaceTar(dir / "ws.tar", restored.path(), TestOwner()));
}

TEST(WorkspaceArchiveTest, PersistListsTheFirstSkippedEntriesAndCountsTheRest) {
  TempDir workspace, dir;
  const size_t links = kMaxListedSkips + 25;
  for (size_t i = 0; i < links; ++i) {
    ASSERT_EQ(::symlink("/etc/passwd", (workspace / ("l" + std::to_string(i))).c_str()), 0);
  }
  auto report = PersistWorkspaceTar(workspace.path(), dir / "ws.tar");
  ASSERT_TRUE(report) << report.error().ToString();
  EXPECT_EQ(report->skipped.size(), kMaxListedSkips);
  EXPECT_EQ(report->skipped_unlisted, 25u);
}

TEST(WorkspaceArchiveTest, RestoreRejectsHostileArchivesBeforeExtracting) {
  const std::string ok = RawHeader("ok.txt", '0', 2) + Padded("ok");
  const std::pair<const char*, std::string> hostile[] = {
      {"absolute", RawHeader("/etc/passwd", '0', 1) + Padded("x")},
      {"dotdot", RawHeader("../x", '0', 1) + Padded("x")},
      {"nested dotdot", RawHeader("a/../../x", '0', 1) + Padded("x")},
      {"newline", RawHeader("a\nb", '0', 1) + Padded("x")},
      {"symlink", RawHeader("link", '2', 0)},
      {"hardlink", RawHeader("hard", '1', 0)},
      {"char device", RawHeader("dev", '3', 0)},
      {"fifo", RawHeader("fifo", '6', 0)},
      {"gnu long name", RawHeader("././@LongLink", 'L', 0)},
      {"duplicate", RawHeader("ok.txt", '0', 2) + Padded("ok")},
      {"file under a file", RawHeader("ok.txt/x", '0', 1) + Padded("x")},
      {"bad checksum", RawHeader("c", '0', 0, false)},
      {"truncated", RawHeader("t", '0', 4096) + Padded("x")},
  };
  for (const auto& [what, member] : hostile) {
    TempDir workspace, dir;
    const std::string archive = dir / "bad.tar";
    WriteFile(archive, what == std::string("truncated") ? ok + member : RawArchive(ok + member));
    auto restored = RestoreWorkspaceTar(archive, workspace.path(), TestOwner());
    EXPECT_FALSE(restored) << what;
    EXPECT_FALSE(Exists(workspace / "ok.txt")) << what;
    if (!restored) {
      EXPECT_EQ(restored.error().code, ErrorCode::kInvalidInput) << restored.error().ToString();
    }
  }
}

TEST(WorkspaceArchiveTest, RestoreNeverWritesThroughAPlantedSymlink) {
  TempDir workspace, elsewhere, dir;
  ASSERT_EQ(::symlink(elsewhere.path().c_str(), (workspace / "out").c_str()), 0);
  const std::string archive = dir / "a.tar";
  WriteFile(archive, RawArchive(RawHeader("first", '0', 1) + Padded("1") +
                                RawHeader("out/x", '0', 1) + Padded("x")));
  EXPECT_FALSE(RestoreWorkspaceTar(archive, workspace.path(), TestOwner()));
  EXPECT_FALSE(Exists(elsewhere / "x"));
  EXPECT_FALSE(Exists(workspace / "first"));
}

TEST(WorkspaceArchiveTest, RestoreRefusesAPipe) {
  TempDir workspace;
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  auto restored = RestoreWorkspaceTar(fds[0], workspace.path(), TestOwner());
  ::close(fds[0]);
  ::close(fds[1]);
  EXPECT_FALSE(restored);
}

}  // namespace
}  // namespace sbx
