// Image variants end to end: `sbx image build --name sklearn --add python3-sklearn` (cached by
// its recipe id, so after the first build this is a lookup), `--image sklearn` in `sbx run`,
// and bad names and packages refused with nothing left behind.
#include <filesystem>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "sandbox/image.h"
#include "sandbox_fixture.h"

namespace sbx {
namespace {

using testing::RunOnHost;

// Builds the variant (or finds it cached: the same recipe id) once per test binary.
void EnsureSklearnVariant() {
  static bool built = false;
  if (built) return;
  auto run = RunOnHost({SBX_BINARY, "image", "build", "--name", "sklearn", "--add", "python3-sklearn"});
  ASSERT_EQ(run.exit_code, 0) << run.output;
  built = true;
}

std::set<std::string> CacheEntries() {
  std::set<std::string> names;
  auto cache_dir = ImageCacheDir();
  if (!cache_dir) return names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(*cache_dir, ec)) {
    names.insert(entry.path().filename().string());
  }
  return names;
}

TEST(ImageVariant, RunWithTheVariantImportsWhatTheDefaultLacks) {
  ASSERT_NO_FATAL_FAILURE(EnsureSklearnVariant());
  auto with = RunOnHost({SBX_BINARY, "run", "--image", "sklearn", "--", "python3", "-c",
                         "import sklearn; print('sklearn', sklearn.__version__)"});
  EXPECT_EQ(with.exit_code, 0) << with.output;
  EXPECT_NE(with.output.find("sklearn 1."), std::string::npos) << with.output;
  // The control: the default image does not have it.
  auto without = RunOnHost({SBX_BINARY, "run", "--image", "default", "--", "python3", "-c", "import sklearn"});
  EXPECT_EQ(without.exit_code, 1) << without.output;
  EXPECT_NE(without.output.find("No module named 'sklearn'"), std::string::npos) << without.output;

  auto listed = RunOnHost({SBX_BINARY, "image", "ls"});
  EXPECT_EQ(listed.exit_code, 0) << listed.output;
  EXPECT_TRUE(std::regex_search(listed.output, std::regex(" sklearn +.* python3-sklearn\n"))) << listed.output;
  auto path = RunOnHost({SBX_BINARY, "image", "path", "sklearn"});
  EXPECT_EQ(path.exit_code, 0) << path.output;
  EXPECT_EQ(path.output, *ResolveImageDir("sklearn") + "\n");
  EXPECT_NE(path.output, *ResolveImageDir("") + "\n") << "a variant never moves default";
  auto verified = RunOnHost({SBX_BINARY, "image", "verify", "sklearn"});
  EXPECT_EQ(verified.exit_code, 0) << verified.output;
}

TEST(ImageVariant, BadNamesAndPackagesGive125AndLeaveNothing) {
  ASSERT_NO_FATAL_FAILURE(EnsureSklearnVariant());
  const std::set<std::string> before = CacheEntries();
  struct Case {
    std::vector<std::string> args;
    std::vector<std::string> expect;
  };
  const std::vector<Case> cases = {
      {{"run", "--image", "no-such-variant", "--", "true"},
       {"--image", "no image named 'no-such-variant'", "sbx image build --name no-such-variant --add"}},
      {{"run", "--image", "Sklearn", "--", "true"}, {"--image", "1-32 of a-z", "./DIR"}},
      {{"image", "build", "--name", "cafe", "--add", "python3-sklearn"}, {"--name", "not all hex digits"}},
      {{"image", "build", "--name", "sklearn"}, {"--name sklearn needs --add PKG"}},
      {{"image", "build", "--add", "python3-sklearn"}, {"--add needs --name NAME"}},
      {{"image", "path", "no-such-variant"}, {"no image named 'no-such-variant'"}},
      // The mirror's answer is quoted; the half-built tree is gone and no pointer was made.
      {{"image", "build", "--name", "broken", "--add", "python3-no-such-package-sbx"},
       {"Unable to locate package python3-no-such-package-sbx", "check each --add package"}},
  };
  for (const Case& c : cases) {
    std::vector<std::string> argv = {SBX_BINARY};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    auto run = RunOnHost(argv);
    EXPECT_EQ(run.exit_code, 125) << c.args[1] << " " << c.args[2] << "\n" << run.output;
    for (const std::string& part : c.expect) {
      EXPECT_NE(run.output.find(part), std::string::npos) << part << "\n" << run.output;
    }
    EXPECT_EQ(CacheEntries(), before) << c.args[1] << " " << c.args[2] << " changed the image cache";
  }
}

}  // namespace
}  // namespace sbx
