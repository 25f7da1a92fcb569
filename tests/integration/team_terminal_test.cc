// `sbx agent --team` with an ALWAYS executor, driven through a real terminal (a
// pty): the person refuses a block and it never runs; the same block approved
// runs.
#include <poll.h>
#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>

#include "sandbox_fixture.h"

namespace sbx::agent {
namespace {

using sbx::testing::ScratchDir;

struct TerminalRun {
  int exit_code = -1;
  std::string screen;  // everything the terminal showed
};

// Runs argv on a pty; each time the screen shows `prompt` again, types the next
// answer.
TerminalRun RunOnTerminal(const std::vector<std::string>& argv, const std::string& prompt,
                          const std::vector<std::string>& answers) {
  TerminalRun run;
  int master = -1;
  pid_t pid = ::forkpty(&master, nullptr, nullptr, nullptr);
  if (pid == 0) {
    std::vector<char*> args;
    for (const auto& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  EXPECT_GT(pid, 0);
  if (pid <= 0) return run;
  size_t answered = 0, seen = 0;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd fd = {master, POLLIN, 0};
    if (::poll(&fd, 1, 200) > 0) {
      char buffer[4096];
      ssize_t n = ::read(master, buffer, sizeof buffer);
      if (n <= 0) break;  // EIO: the child closed the terminal
      run.screen.append(buffer, static_cast<size_t>(n));
    }
    size_t at = run.screen.find(prompt, seen);
    if (at != std::string::npos && answered < answers.size()) {
      seen = at + prompt.size();
      const std::string& line = answers[answered++];
      EXPECT_EQ(::write(master, line.data(), line.size()), static_cast<ssize_t>(line.size()));
    }
  }
  int status = 0;
  EXPECT_EQ(::waitpid(pid, &status, 0), pid);
  ::close(master);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return run;
}

TEST(TeamTerminal, AlwaysAsksOnTheTerminalAndRunsOnlyWhatIsApproved) {
  ScratchDir host;
  std::ofstream(host.path() + "/coder.json") << R"({"label": "probe writer", "replies": [
      {"content": "```bash\necho ran > probe.txt\n```"}, {"content": "Understood. TERMINATE"}]})";
  std::ofstream(host.path() + "/team.json") << R"({"pattern": "two_agent", "agents": [
      {"name": "coder", "scripted_model": "coder.json"},
      {"name": "executor", "executes_code": true, "human_input_mode": "ALWAYS"}]})";
  auto agent = [&](const std::string& out, const std::vector<std::string>& answers) {
    return RunOnTerminal(
        {SBX_BINARY, "agent", "--team", host.path() + "/team.json", "--task", "Leave a mark.",
         "--expect", "probe.txt", "--out-dir", host.path() + "/" + out},
        "exit ends the chat: ", answers);
  };
  // Refused, then Enter on TERMINATE: the block never ran, so the probe file is
  // missing (3).
  TerminalRun refused = agent("refused", {"not on my machine\n", "\n"});
  EXPECT_EQ(refused.exit_code, 3) << refused.screen;
  EXPECT_NE(refused.screen.find("echo ran > probe.txt"), std::string::npos) << refused.screen;
  EXPECT_NE(refused.screen.find("refused by the user"), std::string::npos) << refused.screen;
  EXPECT_NE(refused.screen.find("expected output missing: probe.txt"), std::string::npos)
      << refused.screen;
  EXPECT_NE(::access((host.path() + "/refused/probe.txt").c_str(), F_OK), 0);
  // The control: the same block approved runs and the probe file comes back.
  TerminalRun approved = agent("approved", {"y\n", "\n"});
  EXPECT_EQ(approved.exit_code, 0) << approved.screen;
  EXPECT_EQ(sbx::testing::ReadHostFile(host.path() + "/approved/probe.txt"), "ran\n")
      << approved.screen;
}

}  // namespace
}  // namespace sbx::agent
