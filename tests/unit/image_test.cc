// Unit tests for image verification on small fake trees and for the image cache layout.
#include "sandbox/image/image.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

namespace sbx {
namespace {

namespace fs = std::filesystem;

// A temp directory holding a tiny image: <dir>/<id>/{bin/tool, tmp (1777), workspace, marker}.
class FakeImage : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/sbx-image-test-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
    ASSERT_EQ(chmod(dir_.c_str(), 0755), 0);
    root_ = dir_ + "/0123456789ab";
    Mkdir("", 0755);
    Mkdir("/bin", 0755);
    Mkdir("/tmp", 01777);
    Mkdir("/workspace", 0755);
    Write("/bin/tool", "#!/bin/sh\n", 0755);
    Write("/.sbx-image.json", "{\"id\": \"0123456789ab\"}\n", 0644);
  }
  void TearDown() override { fs::remove_all(dir_); }

  void Mkdir(const std::string& rel, mode_t mode) {
    ASSERT_EQ(mkdir((root_ + rel).c_str(), 0700), 0) << rel;
    ASSERT_EQ(chmod((root_ + rel).c_str(), mode), 0) << rel;  // chmod: umask-independent
  }
  void Write(const std::string& rel, const std::string& text, mode_t mode) {
    std::ofstream(root_ + rel) << text;
    ASSERT_EQ(chmod((root_ + rel).c_str(), mode), 0) << rel;
  }
  static bool IsRoot() { return geteuid() == 0; }

  // Verifies the tree and returns the error message ("" when accepted).
  std::string Problem() {
    auto stats = VerifyImageTree(root_, DefaultVerifyOptions());
    return stats ? "" : stats.error().message;
  }

  std::string dir_;
  std::string root_;
};

TEST_F(FakeImage, CleanTreeIsAccepted) {
  auto stats = VerifyImageTree(root_, DefaultVerifyOptions());
  ASSERT_TRUE(stats) << stats.error().message;
  EXPECT_EQ(stats->entries, 6u);  // root, bin, bin/tool, tmp, workspace, marker
  EXPECT_TRUE(VerifyImageQuick(root_));
}

TEST_F(FakeImage, SetuidFileIsRejected) {
  ASSERT_EQ(chmod((root_ + "/bin/tool").c_str(), 04755), 0);
  std::string problem = Problem();
  EXPECT_NE(problem.find("/bin/tool is setuid (mode 4755)"), std::string::npos) << problem;
  EXPECT_NE(problem.find("chmod ug-s"), std::string::npos) << problem;
}

TEST_F(FakeImage, SetgidFileIsRejected) {
  ASSERT_EQ(chmod((root_ + "/bin/tool").c_str(), 02755), 0);
  EXPECT_NE(Problem().find("/bin/tool is setgid"), std::string::npos) << Problem();
}

TEST_F(FakeImage, WorldWritableDirIsRejectedButStickyTmpIsNot) {
  Mkdir("/var", 0777);
  std::string problem = Problem();
  EXPECT_NE(problem.find("/var is writable by group or other (mode 0777)"), std::string::npos)
      << problem;
  EXPECT_EQ(problem.find("more problems"), std::string::npos) << problem;  // not /tmp
}

TEST_F(FakeImage, GroupWritableFileIsRejected) {
  Write("/etc-file", "x", 0664);
  EXPECT_NE(Problem().find("/etc-file is writable by group"), std::string::npos) << Problem();
}

TEST_F(FakeImage, DeviceNodeIsRejected) {
  if (!IsRoot()) GTEST_SKIP() << "mknod of a character device needs root (CAP_MKNOD)";
  Mkdir("/dev", 0755);
  ASSERT_EQ(mknod((root_ + "/dev/null").c_str(), S_IFCHR | 0600, makedev(1, 3)), 0);
  std::string problem = Problem();
  EXPECT_NE(problem.find("/dev/null is a device node"), std::string::npos) << problem;
}

TEST_F(FakeImage, FifoIsRejected) {
  ASSERT_EQ(mkfifo((root_ + "/pipe").c_str(), 0600), 0);
  EXPECT_NE(Problem().find("/pipe is a fifo"), std::string::npos) << Problem();
}

TEST_F(FakeImage, SymlinksPointingOutsideAreNotFollowed) {
  // Outside the image: a setuid file and a world-writable directory with more inside.
  std::string outside = dir_ + "/outside";
  ASSERT_EQ(mkdir(outside.c_str(), 0700), 0);
  ASSERT_EQ(chmod(outside.c_str(), 0777), 0);
  std::ofstream(outside + "/suid") << "x";
  ASSERT_EQ(chmod((outside + "/suid").c_str(), 04755), 0);
  ASSERT_EQ(symlink(outside.c_str(), (root_ + "/bin/out-dir").c_str()), 0);
  ASSERT_EQ(symlink((outside + "/suid").c_str(), (root_ + "/bin/out-file").c_str()), 0);
  ASSERT_EQ(symlink("/", (root_ + "/bin/host-root").c_str()), 0);
  auto stats = VerifyImageTree(root_, DefaultVerifyOptions());
  ASSERT_TRUE(stats) << stats.error().message;
  EXPECT_EQ(stats->entries, 9u);
}

TEST_F(FakeImage, RootPassedAsSymlinkIsRefused) {
  std::string link = dir_ + "/link";
  ASSERT_EQ(symlink(root_.c_str(), link.c_str()), 0);
  auto stats = VerifyImageTree(link, DefaultVerifyOptions());
  ASSERT_FALSE(stats);
  EXPECT_NE(stats.error().message.find("symlinks are not followed"), std::string::npos);
}

TEST_F(FakeImage, FileOwnedByAnotherUidIsRejected) {
  if (!IsRoot()) GTEST_SKIP() << "chown to another uid needs root";
  ASSERT_EQ(lchown((root_ + "/bin/tool").c_str(), 1234, 1234), 0);
  std::string problem = Problem();
  EXPECT_NE(problem.find("/bin/tool is owned by uid 1234, expected 0"), std::string::npos)
      << problem;
}

TEST_F(FakeImage, SandboxUserMayOwnWorkspaceOnly) {
  if (!IsRoot()) GTEST_SKIP() << "chown to another uid needs root";
  ASSERT_EQ(chown((root_ + "/workspace").c_str(), 1000, 1000), 0);
  EXPECT_EQ(Problem(), "");
  ASSERT_EQ(chown((root_ + "/bin").c_str(), 1000, 1000), 0);
  EXPECT_NE(Problem().find("/bin is owned by uid 1000"), std::string::npos) << Problem();
}

TEST_F(FakeImage, ErrorCountsTheOtherProblems) {
  ASSERT_EQ(chmod((root_ + "/bin/tool").c_str(), 04777), 0);
  ASSERT_EQ(mkfifo((root_ + "/pipe").c_str(), 0600), 0);
  std::string problem = Problem();
  EXPECT_NE(problem.find("(and 1 more problems)"), std::string::npos) << problem;
  EXPECT_NE(problem.find("sbx image build --force"), std::string::npos) << problem;
}

TEST_F(FakeImage, QuickCheckNeedsAMatchingMarker) {
  ASSERT_EQ(unlink((root_ + "/.sbx-image.json").c_str()), 0);
  auto missing = VerifyImageQuick(root_);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find(".sbx-image.json"), std::string::npos);

  Write("/.sbx-image.json", "{\"id\": \"ffffffffffff\"}", 0644);
  auto wrong = VerifyImageQuick(root_);
  ASSERT_FALSE(wrong);
  EXPECT_NE(wrong.error().message.find("marker says id ffffffffffff"), std::string::npos);

  Write("/.sbx-image.json", "{\"id\": \"0123456789ab\"}", 0666);
  auto writable = VerifyImageQuick(root_);
  ASSERT_FALSE(writable);
  EXPECT_NE(writable.error().message.find("writable only by it"), std::string::npos);
}

// The marker as `sbx image build` writes it is read without a JSON parser; any other JSON
// naming the id passes too, and whatever is not a whole object naming it does not.
TEST_F(FakeImage, QuickCheckReadsTheMarkerInEitherForm) {
  Write("/.sbx-image.json", "{\"id\": \"0123456789ab\", \"recipe_id\": \"x\", \"created\": \"y\"}\n",
        0644);
  EXPECT_TRUE(VerifyImageQuick(root_));
  Write("/.sbx-image.json", "{\"created\": \"y\",\n  \"id\":\"0123456789ab\"}", 0644);
  EXPECT_TRUE(VerifyImageQuick(root_));

  for (const char* broken : {"{\"id\": \"0123456789ab\", \"recipe_id\": \"x",  // cut short
                             "{\"id\": \"0123456789ab\"",
                             "{\"id\": \"0123456789abc\"}",  // names another id
                             "[\"id\", \"0123456789ab\"]"}) {
    Write("/.sbx-image.json", broken, 0644);
    auto refused = VerifyImageQuick(root_);
    ASSERT_FALSE(refused) << broken;
    EXPECT_NE(refused.error().message.find("sbx image build --force"), std::string::npos)
        << refused.error().message;
  }
}

TEST_F(FakeImage, QuickCheckRejectsWritableRootAndParent) {
  ASSERT_EQ(chmod(root_.c_str(), 0775), 0);
  auto root = VerifyImageQuick(root_);
  ASSERT_FALSE(root);
  EXPECT_NE(root.error().message.find("root directory is writable by group"), std::string::npos)
      << root.error().message;

  ASSERT_EQ(chmod(root_.c_str(), 0755), 0);
  ASSERT_EQ(chmod(dir_.c_str(), 0777), 0);
  auto parent = VerifyImageQuick(root_);
  ASSERT_FALSE(parent);
  EXPECT_NE(parent.error().message.find("parent directory " + dir_), std::string::npos)
      << parent.error().message;
}

// A run's start resolves the image path once and checks it with VerifyCanonicalImageQuick:
// it must refuse what VerifyImageQuick refuses.
TEST_F(FakeImage, CanonicalQuickCheckRefusesWhatTheQuickCheckRefuses) {
  ASSERT_TRUE(VerifyCanonicalImageQuick(root_));
  Write("/.sbx-image.json", "{\"id\": \"ffffffffffff\"}", 0644);
  auto wrong = VerifyCanonicalImageQuick(root_);
  ASSERT_FALSE(wrong);
  EXPECT_NE(wrong.error().message.find("marker says id ffffffffffff"), std::string::npos);

  Write("/.sbx-image.json", "{\"id\": \"0123456789ab\"}", 0644);
  ASSERT_EQ(chmod(dir_.c_str(), 0777), 0);
  auto parent = VerifyCanonicalImageQuick(root_);
  ASSERT_FALSE(parent);
  EXPECT_NE(parent.error().message.find("parent directory " + dir_), std::string::npos)
      << parent.error().message;
}

TEST_F(FakeImage, CacheFindsListsAndRemovesImages) {
  auto missing = FindDefaultImageIn(dir_);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("run `sbx image build`"), std::string::npos);
  EXPECT_NE(missing.error().message.find("-v /var/cache/sbx/images:" + dir_ + ":ro"), std::string::npos)
      << missing.error().message;

  ASSERT_EQ(symlink("0123456789ab", (dir_ + "/default").c_str()), 0);
  std::ofstream(dir_ + "/0123456789ab.json") << R"({"id": "0123456789ab", "file_count": 6})";
  ASSERT_EQ(mkdir((dir_ + "/.build-half").c_str(), 0755), 0);  // an unfinished build
  auto found = FindDefaultImageIn(dir_);
  ASSERT_TRUE(found) << found.error().message;
  EXPECT_EQ(found->path, root_);
  EXPECT_EQ(found->file_count, 0u);  // the per-run lookup never parses metadata
  EXPECT_TRUE(found->is_default);
  EXPECT_EQ(FindImageIn(dir_, found->id)->file_count, 6u);

  auto images = ListImagesIn(dir_);
  ASSERT_TRUE(images);
  ASSERT_EQ(images->size(), 1u);
  EXPECT_EQ(FindImageIn(dir_, "0123")->id, "0123456789ab");
  EXPECT_FALSE(FindImageIn(dir_, "../etc"));

  ASSERT_TRUE(RemoveImageIn(dir_, "0123456789ab"));
  EXPECT_FALSE(fs::exists(root_));
  EXPECT_FALSE(fs::exists(dir_ + "/0123456789ab.json"));
  EXPECT_FALSE(fs::is_symlink(dir_ + "/default"));
  EXPECT_FALSE(FindDefaultImageIn(dir_));
}

TEST_F(FakeImage, NamedVariantsResolveListAndGoWithTheirImage) {
  ASSERT_EQ(symlink("0123456789ab", (dir_ + "/default").c_str()), 0);
  // A second image, the variant: its own tree, metadata with its added packages, a name.
  std::string variant = dir_ + "/abcdef012345";
  ASSERT_EQ(mkdir(variant.c_str(), 0755), 0);
  std::ofstream(dir_ + "/abcdef012345.json")
      << R"({"id": "abcdef012345", "added_packages": ["python3-sklearn", "python3-statsmodels"]})";
  ASSERT_EQ(symlink("abcdef012345", (dir_ + "/name-sklearn").c_str()), 0);
  ASSERT_EQ(symlink("abcdef012345", (dir_ + "/recipe-feedfeedfeed").c_str()), 0);

  EXPECT_EQ(*ResolveImageDirIn(dir_, ""), root_);
  EXPECT_EQ(*ResolveImageDirIn(dir_, "default"), root_);
  EXPECT_EQ(*ResolveImageDirIn(dir_, "sklearn"), variant);
  EXPECT_EQ(*ResolveImageDirIn(dir_, "./some/dir"), "./some/dir");  // a '/' makes it a directory
  auto unknown = ResolveImageDirIn(dir_, "statsmodels");
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code, ErrorCode::kInvalidInput);
  EXPECT_NE(unknown.error().message.find("no image named 'statsmodels'"), std::string::npos);
  EXPECT_NE(unknown.error().message.find("sbx image build --name statsmodels --add"), std::string::npos)
      << unknown.error().message;
  EXPECT_FALSE(ResolveImageDirIn(dir_, "Sklearn"));
  EXPECT_FALSE(ResolveImageDirIn(dir_, ".."));
  // An id as `sbx image ls` prints it, or a prefix naming one image, as docker takes one.
  EXPECT_EQ(*ResolveImageDirIn(dir_, "abcdef012345"), variant);
  EXPECT_EQ(*ResolveImageDirIn(dir_, "0123"), root_);
  auto missing = ResolveImageDirIn(dir_, "fff");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("no image fff"), std::string::npos)
      << missing.error().message;

  auto by_name = FindImageIn(dir_, "sklearn");
  ASSERT_TRUE(by_name) << by_name.error().message;
  EXPECT_EQ(by_name->id, "abcdef012345");
  EXPECT_EQ(FindImageIn(dir_, "default")->id, "0123456789ab");
  auto images = ListImagesIn(dir_);
  ASSERT_TRUE(images);
  ASSERT_EQ(images->size(), 2u);
  for (const ImageInfo& image : *images) {
    if (image.id == "abcdef012345") {
      EXPECT_EQ(image.names, std::vector<std::string>{"sklearn"});
      EXPECT_EQ(image.added_packages, (std::vector<std::string>{"python3-sklearn", "python3-statsmodels"}));
      EXPECT_FALSE(image.is_default);
    } else {
      EXPECT_TRUE(image.names.empty());
      EXPECT_TRUE(image.added_packages.empty());
      EXPECT_TRUE(image.is_default);
    }
  }

  // Removing the variant by name takes its pointers and leaves the default alone.
  ASSERT_TRUE(RemoveImageIn(dir_, "sklearn"));
  EXPECT_FALSE(fs::exists(variant));
  EXPECT_FALSE(fs::is_symlink(dir_ + "/name-sklearn"));
  EXPECT_FALSE(fs::is_symlink(dir_ + "/recipe-feedfeedfeed"));
  EXPECT_EQ(*ResolveImageDirIn(dir_, "default"), root_);
}

TEST(ImageName, LettersDigitsDashNeverAllHex) {
  for (const char* good : {"sklearn", "stats-2", "x", "default", "abcdefg"}) {
    EXPECT_TRUE(ValidateImageName(good)) << good;
  }
  for (const char* bad : {"", "beef", "0123", "2stats", "Sklearn", "a_b", "a/b", "..", "-x",
                          "abcdefghijklmnopqrstuvwxyz0123456"}) {
    auto valid = ValidateImageName(bad);
    ASSERT_FALSE(valid) << bad;
    EXPECT_NE(valid.error().message.find("1-32 of a-z, 0-9 and -"), std::string::npos) << bad;
  }
}

TEST(ImageCacheDir, RootUsesVarCache) {
  EXPECT_EQ(*ImageCacheDirFor(0, "/home/u/.xdg", "/root"), "/var/cache/sbx/images");
}

TEST(ImageCacheDir, UserUsesXdgCacheHomeThenHome) {
  EXPECT_EQ(*ImageCacheDirFor(1000, "/home/u/.xdg", "/home/u"), "/home/u/.xdg/sbx/images");
  EXPECT_EQ(*ImageCacheDirFor(1000, nullptr, "/home/u"), "/home/u/.cache/sbx/images");
  // The XDG spec says relative values are invalid and must be ignored.
  EXPECT_EQ(*ImageCacheDirFor(1000, "rel", "/home/u"), "/home/u/.cache/sbx/images");
  EXPECT_FALSE(ImageCacheDirFor(1000, nullptr, nullptr));
}

}  // namespace
}  // namespace sbx
