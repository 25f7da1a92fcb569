// Image variants end to end: `sbx image build --name sklearn --add python3-sklearn` (cached by
// its recipe id, so after the first build this is a lookup), `--image sklearn` in `sbx run`,
// a team file and ExecutorOptions, and bad names and packages refused with nothing left behind.
// The round robin of AG2's group-chat example (planner, coder, executor on the iris data set)
// runs here because it needs the variant.
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "sandbox/image/image.h"
#include "sandbox_fixture.h"
#include "src/executor/executors.h"
#include "tests/integration/test_policy.h"

namespace sbx {
namespace {

using nlohmann::json;
using testing::RunOnHost;
using testing::ScratchDir;

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

// A policy names its image; --image (and the executor's image options) win over it.
TEST(ImageVariant, ThePolicyNamesTheImageAndTheFlagWins) {
  ASSERT_NO_FATAL_FAILURE(EnsureSklearnVariant());
  ScratchDir host;
  const std::string policy = host.path() + "/sklearn.json";
  std::ofstream(policy) << R"({"image": "sklearn"})";
  const std::vector<std::string> import = {"--", "python3", "-c", "import sklearn; print('imported')"};
  auto Run = [&](std::vector<std::string> args) {
    std::vector<std::string> argv = {SBX_BINARY, "run", "--policy", policy};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.insert(argv.end(), import.begin(), import.end());
    return RunOnHost(argv);
  };
  auto from_policy = Run({});
  EXPECT_EQ(from_policy.exit_code, 0) << from_policy.output;
  EXPECT_EQ(from_policy.output, "imported\n");
  auto flag_wins = Run({"--image", "default"});
  EXPECT_EQ(flag_wins.exit_code, 1) << flag_wins.output;
  EXPECT_NE(flag_wins.output.find("No module named 'sklearn'"), std::string::npos) << flag_wins.output;

  auto Import = [](executor::ExecutorOptions options) -> std::string {
    options.policy = testing::Changed(options.policy, [](Policy& p) { p.image = "sklearn"; });
    auto session = executor::SessionExecutor::Create(std::move(options));
    if (!session) return session.error().ToString();
    auto result = (*session)->Execute({{"python", "import sklearn; print('imported')"}});
    if (!result) return result.error().ToString();
    return result->output;
  };
  EXPECT_EQ(Import({}), "imported\n");
  executor::ExecutorOptions named_default;
  named_default.image = "default";
  EXPECT_NE(Import(named_default).find("No module named 'sklearn'"), std::string::npos);
}

TEST(ImageVariant, BadNamesAndPackagesGive125AndLeaveNothing) {
  ASSERT_NO_FATAL_FAILURE(EnsureSklearnVariant());
  const std::set<std::string> before = CacheEntries();
  testing::ScratchDir host;
  const std::string script = host.path() + "/model.json";
  std::ofstream(script) << R"({"replies": [{"content": "TERMINATE"}]})";
  auto policy_file = [&](const std::string& image) {
    const std::string path = host.path() + "/image-" + std::to_string(std::hash<std::string>{}(image)) + ".json";
    std::ofstream(path) << json{{"image", image}}.dump();
    return path;
  };
  struct Case {
    std::vector<std::string> args;
    std::vector<std::string> expect;
  };
  const std::vector<Case> cases = {
      {{"run", "--image", "no-such-variant", "--", "true"},
       {"--image", "no image named 'no-such-variant'", "sbx image build --name no-such-variant --add"}},
      {{"run", "--image", "Sklearn", "--", "true"}, {"--image", "1-32 of a-z", "./DIR"}},
      {{"agent", "--image", "no-such-variant", "--scripted-model", script, "--task", "x", "--out-dir",
        host.path() + "/never"},
       {"--image", "no image named 'no-such-variant'"}},
      {{"serve", "--image", "no-such-variant", "--listen", "unix:/nonexistent/sbx-never.sock"},
       {"--image", "no image named 'no-such-variant'"}},
      {{"run", "--policy", policy_file("no-such-variant"), "--", "true"},
       {"the policy's image", "no image named 'no-such-variant'"}},
      {{"run", "--policy", policy_file("./rootfs"), "--", "true"}, {"image: image name './rootfs'", "1-32 of a-z"}},
      {{"agent", "--policy", policy_file("no-such-variant"), "--scripted-model", script, "--task", "x",
        "--out-dir", host.path() + "/never"},
       {"the policy's image", "no image named 'no-such-variant'"}},
      {{"serve", "--policy", policy_file("no-such-variant"), "--listen", "unix:/nonexistent/sbx-never.sock"},
       {"the policy's image", "no image named 'no-such-variant'"}},
      {{"run", "--policy", policy_file("sklearn"), "--isolation", "outer", "--network", "host", "--", "true"},
       {"image: isolation \"outer\"", "drop image"}},
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
  // The C++ API: a bad or unknown name, or a name and a directory at once.
  for (const auto& [image, image_dir, expect] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"no-such-variant", "", "no image named 'no-such-variant'"},
           {"Sklearn", "", "1-32 of a-z"},
           {"sklearn", *ResolveImageDir("sklearn"), "not both"}}) {
    executor::ExecutorOptions options;
    options.image = image;
    options.image_dir = image_dir;
    auto session = executor::SessionExecutor::Create(std::move(options));
    ASSERT_FALSE(session) << image;
    EXPECT_EQ(session.error().code, ErrorCode::kInvalidInput) << session.error().ToString();
    EXPECT_NE(session.error().message.find(expect), std::string::npos) << session.error().ToString();
  }
}

// AG2's group chat: a planner, a coder and an executor take turns on the iris task. The coder's
// code really trains a model in the sklearn variant, prints its accuracy and saves it.
constexpr char kIrisCode[] =
    "```python\n"
    "import joblib\n"
    "from sklearn.datasets import load_iris\n"
    "from sklearn.linear_model import LogisticRegression\n"
    "from sklearn.metrics import accuracy_score\n"
    "from sklearn.model_selection import train_test_split\n"
    "X, y = load_iris(return_X_y=True)\n"
    "X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, random_state=42, stratify=y)\n"
    "model = LogisticRegression(max_iter=500).fit(X_train, y_train)\n"
    "print(f'accuracy {accuracy_score(y_test, model.predict(X_test)):.3f}')\n"
    "saved = joblib.dump(model, 'iris_model.joblib')\n"
    "```\n";

std::string Script(const std::string& label, const std::vector<std::string>& replies) {
  json script = {{"label", label}, {"replies", json::array()}};
  for (const auto& reply : replies) script["replies"].push_back({{"content", reply}});
  return script.dump();
}

TEST(ImageVariant, IrisRoundRobinTrainsSavesAndReportsAModel) {
  ASSERT_NO_FATAL_FAILURE(EnsureSklearnVariant());
  ScratchDir host;
  std::ofstream(host.path() + "/planner.json") << Script(
      "planner", {"Plan: 1. load the iris data set; 2. train a classifier on a stratified split; "
                  "3. print its test accuracy; 4. save it as iris_model.joblib.",
                  "The model is trained and saved. TERMINATE"});
  std::ofstream(host.path() + "/coder.json")
      << Script("coder", {std::string("Training a logistic regression.\n") + kIrisCode});
  std::ofstream(host.path() + "/team.json") << R"({
    "pattern": "round_robin", "initial_agent": "planner", "max_rounds": 12, "image": "sklearn",
    "agents": [
      {"name": "planner", "description": "plans", "scripted_model": "planner.json"},
      {"name": "coder", "description": "writes Python", "scripted_model": "coder.json"},
      {"name": "executor", "description": "runs code", "executes_code": true}]})";
  const std::string out = host.path() + "/out";
  auto run = RunOnHost({SBX_BINARY, "agent", "--team", host.path() + "/team.json", "--task",
                        "Analyze the iris dataset and create a classification model", "--expect",
                        "iris_model.joblib", "--out-dir", out});
  EXPECT_EQ(run.exit_code, 0) << run.output;

  std::vector<std::string> speakers;
  std::string executor_reply;
  std::ifstream log(out + "/transcript.jsonl");
  for (std::string line; std::getline(log, line);) {
    json event = json::parse(line);
    if (event["event"] != "message") continue;
    speakers.push_back(event["speaker"].get<std::string>());
    if (event["speaker"] == "executor") executor_reply = event["content"].get<std::string>();
  }
  EXPECT_EQ(speakers, (std::vector<std::string>{"user", "planner", "coder", "executor", "planner"})) << run.output;
  EXPECT_EQ(executor_reply.rfind("exitcode: 0 (execution succeeded)", 0), 0u) << executor_reply;
  std::smatch accuracy;
  ASSERT_TRUE(std::regex_search(executor_reply, accuracy, std::regex(R"(accuracy ([01]\.\d+))"))) << executor_reply;
  EXPECT_GE(std::stod(accuracy[1]), 0.9) << executor_reply;

  // The saved model loads and predicts, in a second sandbox (a pickle is code: never unpickled
  // on the host), through the C++ API's image name.
  const std::string model = out + "/iris_model.joblib";
  ASSERT_EQ(::access(model.c_str(), R_OK), 0) << run.output;
  executor::ExecutorOptions options;
  options.image = "sklearn";
  options.manifest.AddHostFile("iris_model.joblib", model);
  auto session = executor::SessionExecutor::Create(std::move(options));
  ASSERT_TRUE(session) << session.error().ToString();
  auto predicted = (*session)->Execute(
      {{"python",
        "import joblib\n"
        "from sklearn.datasets import load_iris\n"
        "model = joblib.load('iris_model.joblib')\n"
        "X, y = load_iris(return_X_y=True)\n"
        "print('classes', model.predict([[5.1, 3.5, 1.4, 0.2], [6.7, 3.0, 5.2, 2.3]]).tolist())\n"
        "print('all', round((model.predict(X) == y).mean(), 3))\n"}});
  ASSERT_TRUE(predicted) << predicted.error().ToString();
  EXPECT_EQ(predicted->exit_code, 0) << predicted->output;
  EXPECT_NE(predicted->output.find("classes [0, 2]"), std::string::npos) << predicted->output;
  std::smatch all;
  ASSERT_TRUE(std::regex_search(predicted->output, all, std::regex(R"(all ([01]\.\d+))"))) << predicted->output;
  EXPECT_GE(std::stod(all[1]), 0.9) << predicted->output;
}

}  // namespace
}  // namespace sbx
