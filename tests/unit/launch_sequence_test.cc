// The launch sequence is written once (sandbox/launcher.h) and everything else follows it: the
// ChildStep values are in its order, and the step numbers in the code that runs it count up.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "sandbox/launch/child_report.h"

namespace sbx {
namespace {

std::string Source(const std::string& path) {
  std::ifstream in(std::string(SBX_SOURCE_TREE) + "/" + path);
  EXPECT_TRUE(in) << path;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The numbers of "// N." and "// N-M." comments in `text`, in order (each range by its ends).
std::vector<int> StepComments(const std::string& text) {
  std::vector<int> numbers;
  static const std::regex kStep(R"(//\s+(\d+)(?:-(\d+))?\.\s)");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), kStep); it != std::sregex_iterator(); ++it) {
    numbers.push_back(std::stoi((*it)[1]));
    if ((*it)[2].matched) numbers.push_back(std::stoi((*it)[2]));
  }
  return numbers;
}

TEST(LaunchSequence, ChildStepsAreInTheSequencesOrder) {
  int previous = 0;
  for (uint32_t value = 1; value <= static_cast<uint32_t>(kLastChildStep); ++value) {
    const auto step = static_cast<ChildStep>(value);
    const int launch_step = LaunchStepOf(step);
    EXPECT_GE(launch_step, 6) << ChildStepName(step);
    EXPECT_LE(launch_step, 19) << ChildStepName(step);
    EXPECT_GE(launch_step, previous) << ChildStepName(step) << " comes before step " << previous;
    EXPECT_STRNE(ChildStepName(step), "unknown step") << value;
    previous = launch_step;
  }
}

TEST(LaunchSequence, LauncherHListsEachStepOnceInOrder) {
  const std::string header = Source("sandbox/launcher.h");
  const std::string sequence = header.substr(0, header.find("#pragma once"));
  std::vector<int> listed;
  static const std::regex kItem(R"(\n//\s+(\d+)\.\s)");
  for (auto it = std::sregex_iterator(sequence.begin(), sequence.end(), kItem); it != std::sregex_iterator(); ++it) {
    listed.push_back(std::stoi((*it)[1]));
  }
  std::vector<int> expected;
  for (int n = 1; n <= 22; ++n) expected.push_back(n);
  EXPECT_EQ(listed, expected);
}

// The code that runs the sequence numbers its steps as launcher.h does, counting up.
TEST(LaunchSequence, TheCodeCountsUpThroughTheSequence) {
  const std::string child = Source("sandbox/launch/child_main.cc");
  const std::string launcher = Source("sandbox/launcher.cc");
  for (const auto& [name, body] :
       {std::pair{"SandboxChildMain", child.substr(child.find("void SandboxChildMain("))},
        std::pair{"RunSandboxed", launcher.substr(launcher.find("Result<RunResult> RunSandboxed("))}}) {
    const std::vector<int> numbers = StepComments(body);
    ASSERT_FALSE(numbers.empty()) << name;
    for (size_t i = 1; i < numbers.size(); ++i) {
      EXPECT_LE(numbers[i - 1], numbers[i]) << name << ": step " << numbers[i] << " after " << numbers[i - 1];
    }
    EXPECT_LE(numbers.back(), 22) << name;
  }
  EXPECT_EQ(StepComments(child.substr(child.find("void SandboxChildMain("))).front(), 6);
  EXPECT_EQ(StepComments(launcher.substr(launcher.find("Result<RunResult> RunSandboxed("))).front(), 1);
}

}  // namespace
}  // namespace sbx
