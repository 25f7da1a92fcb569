// Workspace snapshots: new and modified files are listed; symlinks are never followed.
#include "src/executor/workspace_changes.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "base/unique_fd.h"
#include "files_test_util.h"

namespace sbx::executor {
namespace {

TEST(WorkspaceChanges, ListsNewAndModifiedFilesButNotSymlinkTargets) {
  sbx::testing::TempDir dir;
  std::ofstream(dir.path() + "/same.txt") << "same";
  std::ofstream(dir.path() + "/edit.txt") << "v1";
  UniqueFd fd(::open(dir.path().c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  WorkspaceSnapshot before = SnapshotWorkspace(fd.get());
  std::ofstream(dir.path() + "/edit.txt") << "version two";
  ASSERT_EQ(::mkdir((dir.path() + "/sub").c_str(), 0755), 0);
  std::ofstream(dir.path() + "/sub/new.txt") << "n";
  ASSERT_EQ(::symlink("/etc", (dir.path() + "/etc-link").c_str()), 0);
  WorkspaceSnapshot after = SnapshotWorkspace(fd.get());
  EXPECT_EQ(ChangedFiles(before, after), (std::vector<std::string>{"edit.txt", "sub/new.txt"}));
  for (const auto& [path, stamp] : after) EXPECT_EQ(path.find("etc-link"), std::string::npos) << path;
}

}  // namespace
}  // namespace sbx::executor
