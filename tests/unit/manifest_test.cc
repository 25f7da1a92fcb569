// Unit tests for relative-path rules, OpenBeneath and manifest validation and staging.
#include "sandbox/workspace/manifest.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

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

std::string Nested(size_t depth) {
  std::string path = "d";
  for (size_t i = 1; i < depth; ++i) path += "/d";
  return path;
}

TEST(ManifestPathTest, RejectsHostilePaths) {
  const std::string bad[] = {"",
                             "/etc/passwd",
                             "../x",
                             "a/../../x",
                             "a/./b",
                             "a//b",
                             "a/",
                             ".",
                             std::string("a\0b", 3),
                             "new\nline",
                             "esc\x1b",
                             "del\x7f",
                             std::string(256, 'n'),
                             Nested(65),
                             std::string(2100, 'a') + "/" + std::string(2100, 'b')};
  for (const std::string& path : bad) EXPECT_FALSE(SplitRelativePath(path)) << path;
}

TEST(ManifestPathTest, AcceptsOrdinaryPaths) {
  EXPECT_EQ(SplitRelativePath("main.py")->size(), 1u);
  EXPECT_EQ(SplitRelativePath("output/figures/a b.png")->size(), 3u);
  EXPECT_EQ(SplitRelativePath(".hidden/..x/x..")->size(), 3u);
  EXPECT_EQ(SplitRelativePath(std::string(255, 'n'))->size(), 1u);
  EXPECT_EQ(SplitRelativePath(Nested(64))->size(), 64u);
  EXPECT_TRUE(SplitRelativePath("caf\xc3\xa9"));
}

TEST(ManifestPathTest, EscapesNamesForMessages) {
  EXPECT_EQ(EscapeForMessage("a\nb\x1b[31m\\c\x7f"), "a\\nb\\x1b[31m\\\\c\\x7f");
  EXPECT_EQ(EscapeForMessage("caf\xc3\xa9 ok"), "caf\xc3\xa9 ok");
  Manifest manifest;
  manifest.AddBytes("evil\nERROR: forged", "x");
  auto valid = ValidateManifest(manifest);
  ASSERT_FALSE(valid);
  EXPECT_EQ(valid.error().message.find('\n'), std::string::npos) << valid.error().message;
}

class ManifestOpenBeneathTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override { ForceOpenBeneathFallbackForTesting(GetParam()); }
  void TearDown() override { ForceOpenBeneathFallbackForTesting(false); }
};

TEST_P(ManifestOpenBeneathTest, RefusesSymlinksAnywhere) {
  TempDir dir;
  ASSERT_EQ(::mkdir((dir / "real").c_str(), 0755), 0);
  WriteFile(dir / "real/file", "ok");
  ASSERT_EQ(::symlink("/etc", (dir / "link_dir").c_str()), 0);
  ASSERT_EQ(::symlink("/etc/hostname", (dir / "real/link_file").c_str()), 0);
  UniqueFd root(::open(dir.path().c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  EXPECT_TRUE(OpenBeneath(root.get(), "real/file", O_RDONLY));
  EXPECT_FALSE(OpenBeneath(root.get(), "link_dir/hostname", O_RDONLY));
  EXPECT_FALSE(OpenBeneath(root.get(), "real/link_file", O_RDONLY));
  EXPECT_FALSE(OpenBeneath(root.get(), "../etc/hostname", O_RDONLY));
  EXPECT_FALSE(OpenBeneath(root.get(), "/etc/hostname", O_RDONLY));
}

INSTANTIATE_TEST_SUITE_P(Manifest, ManifestOpenBeneathTest, ::testing::Bool());

TEST(ManifestValidateTest, NamesTheEntryAndTheFix) {
  for (const char* bad : {"/etc/passwd", "../x", "a/../../x", "a\nb", "a//b"}) {
    Manifest manifest;
    manifest.AddBytes("ok.txt", "x").AddBytes(bad, "x");
    auto valid = ValidateManifest(manifest);
    ASSERT_FALSE(valid) << bad;
    EXPECT_NE(valid.error().message.find("manifest entry 1"), std::string::npos)
        << valid.error().message;
    EXPECT_EQ(valid.error().code, ErrorCode::kInvalidInput);
  }
}

TEST(ManifestValidateTest, RejectsDuplicatesAndFileDirectoryClashes) {
  Manifest duplicate;
  duplicate.AddBytes("a.txt", "1").AddBytes("a.txt", "2");
  auto error = ValidateManifest(duplicate);
  ASSERT_FALSE(error);
  EXPECT_NE(error.error().message.find("entry 0"), std::string::npos) << error.error().message;

  Manifest clash;
  clash.AddBytes("a", "file").AddBytes("a/b", "under a file");
  EXPECT_FALSE(ValidateManifest(clash));
  Manifest merged;
  merged.AddDirectory("out").AddBytes("out/x", "1").AddBytes("out/y", "2");
  EXPECT_TRUE(ValidateManifest(merged));
}

TEST(ManifestValidateTest, EnforcesEntryCountAndByteBudget) {
  Manifest many;
  for (int i = 0; i < 10'000; ++i) many.AddBytes("f" + std::to_string(i), "");
  EXPECT_TRUE(ValidateManifest(many));
  many.AddBytes("one-more", "");
  EXPECT_FALSE(ValidateManifest(many));

  ManifestLimits limits;
  limits.max_total_bytes = 10;
  Manifest big;
  big.AddBytes("a", "12345").AddBytes("b", "123456");
  auto error = ValidateManifest(big, limits);
  ASSERT_FALSE(error);
  EXPECT_NE(error.error().message.find("entry 1"), std::string::npos);

  Manifest relative;
  relative.AddHostFile("x", "etc/passwd");
  EXPECT_FALSE(ValidateManifest(relative));
}

TEST(ManifestStageTest, StagesBytesFilesAndDirectoriesWithNormalizedModes) {
  TempDir host, workspace;
  WriteFile(host / "tool.sh", "#!/bin/sh\n", 04777);
  ASSERT_EQ(::mkdir((host / "lib").c_str(), 0700), 0);
  ASSERT_EQ(::mkdir((host / "lib/pkg").c_str(), 0700), 0);
  WriteFile(host / "lib/pkg/mod.py", "x = 1\n", 0600);
  ASSERT_EQ(::symlink("/etc/shadow", (host / "lib/shadow").c_str()), 0);
  ASSERT_EQ(::mkfifo((host / "lib/fifo").c_str(), 0644), 0);

  Manifest manifest;
  manifest.AddBytes("main.py", "print(1)\n")
      .AddBytes("bin/run", "#!/bin/sh\n", true)
      .AddHostFile("tools/tool.sh", host / "tool.sh")
      .AddHostDirectory("src/lib", host / "lib")
      .AddDirectory("output");
  auto report = StageManifest(workspace.path(), manifest, TestOwner());
  ASSERT_TRUE(report) << report.error().ToString();
  EXPECT_EQ(report->files, 4u);
  EXPECT_EQ(report->skipped.size(), 2u);  // the symlink and the FIFO
  EXPECT_EQ(ReadFile(workspace / "main.py"), "print(1)\n");
  EXPECT_EQ(ReadFile(workspace / "src/lib/pkg/mod.py"), "x = 1\n");
  EXPECT_FALSE(Exists(workspace / "src/lib/shadow"));
  EXPECT_FALSE(Exists(workspace / "src/lib/fifo"));
  EXPECT_EQ(ModeOf(workspace / "main.py") & 07777, 0644u);
  EXPECT_EQ(ModeOf(workspace / "bin/run") & 07777, 0755u);
  EXPECT_EQ(ModeOf(workspace / "tools/tool.sh") & 07777, 0755u);  // setuid dropped
  EXPECT_EQ(ModeOf(workspace / "src/lib/pkg/mod.py") & 07777, 0644u);
  EXPECT_EQ(ModeOf(workspace / "src/lib/pkg") & 07777, 0755u);
  EXPECT_TRUE(S_ISDIR(ModeOf(workspace / "output")));
  struct stat st {};
  ASSERT_EQ(::lstat((workspace / "src/lib/pkg/mod.py").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, TestOwner().uid);
  EXPECT_EQ(st.st_gid, TestOwner().gid);
}

TEST(ManifestStageTest, NeverWritesThroughAPlantedSymlinkAndLeavesNothingBehind) {
  TempDir workspace, elsewhere;
  ASSERT_EQ(::symlink(elsewhere.path().c_str(), (workspace / "out").c_str()), 0);
  WriteFile(elsewhere / "victim", "original");
  ASSERT_EQ(::symlink((elsewhere / "victim").c_str(), (workspace / "victim").c_str()), 0);

  Manifest through_dir;
  through_dir.AddBytes("a/first.txt", "1").AddBytes("out/x", "attack");
  auto staged = StageManifest(workspace.path(), through_dir, TestOwner());
  ASSERT_FALSE(staged);
  EXPECT_FALSE(Exists(elsewhere / "x"));
  EXPECT_FALSE(Exists(workspace / "a"));  // undone

  Manifest through_file;
  through_file.AddBytes("victim", "attack");
  ASSERT_FALSE(StageManifest(workspace.path(), through_file, TestOwner()));
  EXPECT_EQ(ReadFile(elsewhere / "victim"), "original");
}

TEST(ManifestStageTest, RejectsHostTreesThatBreakTheRulesBeforeWriting) {
  TempDir host, workspace;
  ASSERT_EQ(::mkdir((host / "bad").c_str(), 0755), 0);
  WriteFile(host / "bad/new\nline.txt", "x");
  Manifest newline;
  newline.AddBytes("first", "1").AddHostDirectory("in", host / "bad");
  auto error = StageManifest(workspace.path(), newline, TestOwner());
  ASSERT_FALSE(error);
  EXPECT_NE(error.error().message.find("manifest entry 1"), std::string::npos);
  EXPECT_FALSE(Exists(workspace / "first"));

  std::string deep_path = host / "deep";
  for (int i = 0; i <= 70; ++i, deep_path += "/d") ASSERT_EQ(::mkdir(deep_path.c_str(), 0755), 0);
  Manifest deep;
  deep.AddHostDirectory("deep", host / "deep");
  EXPECT_FALSE(StageManifest(workspace.path(), deep, TestOwner()));
  EXPECT_FALSE(Exists(workspace / "deep"));
}

TEST(ManifestStageTest, ChecksHostSizesAgainstTheBudgetBeforeReading) {
  TempDir host, workspace;
  testing::MakeSparseFile(host / "huge", off_t{1} << 40);
  Manifest manifest;
  manifest.AddHostFile("huge", host / "huge");
  auto error = StageManifest(workspace.path(), manifest, TestOwner());
  ASSERT_FALSE(error);
  EXPECT_NE(error.error().message.find("budget"), std::string::npos) << error.error().message;
  EXPECT_FALSE(Exists(workspace / "huge"));
}

TEST(ManifestStageTest, CapsFilesExpandedFromHostDirectories) {
  TempDir host, workspace;
  for (int i = 0; i < 50; ++i) WriteFile(host / ("f" + std::to_string(i)), "x");
  ManifestLimits limits;
  limits.max_files = 20;
  Manifest manifest;
  manifest.AddHostDirectory("in", host.path());
  EXPECT_FALSE(StageManifest(workspace.path(), manifest, TestOwner(), limits));
  EXPECT_FALSE(Exists(workspace / "in"));
}

TEST(ManifestStageTest, RefusesToOverwriteAnExistingFile) {
  TempDir workspace;
  WriteFile(workspace / "main.py", "mine");
  Manifest manifest;
  manifest.AddBytes("main.py", "theirs");
  auto error = StageManifest(workspace.path(), manifest, TestOwner());
  ASSERT_FALSE(error);
  EXPECT_NE(error.error().message.find("already exists"), std::string::npos);
  EXPECT_EQ(ReadFile(workspace / "main.py"), "mine");
}

}  // namespace
}  // namespace sbx
