// What the executor benchmarks (sbx_pool_bench, sbx_growth_bench) share.
#pragma once

#include <spawn.h>
#include <sys/types.h>

#include <cstdio>
#include <string>
#include <vector>

#include "sandbox/image/image.h"
#include "sandbox/launch/environment.h"
#include "src/executor/code_executor.h"

namespace sbx::bench {

// True when `result` ran and exited 0; otherwise says why on stderr.
inline bool ExecutionOk(const Result<executor::CodeResult>& result) {
  if (!result) {
    std::fprintf(stderr, "error: %s\n", result.error().ToString().c_str());
    return false;
  }
  if (result->exit_code != 0) {
    std::fprintf(stderr, "failed (exit %d): %s\n", result->exit_code, result->output.substr(0, 2000).c_str());
    return false;
  }
  return true;
}

// `image` as given, or the default image's directory when empty; "" (and why on stderr) when
// there is none.
inline std::string ImageOrDefault(const std::string& image) {
  if (!image.empty()) return image;
  auto found = FindDefaultImage();
  if (!found) {
    std::fprintf(stderr, "image: %s\n", found.error().ToString().c_str());
    return "";
  }
  return found->path;
}

// Starts the image's python3 running `code`, only chrooted (uid 1000, the sandbox's environment;
// no namespaces, no limits): the floor the benchmarks compare sbx with. Each fd other than -1
// becomes the child's stdin, stdout or stderr. Returns the pid, or -1.
inline pid_t SpawnImagePython(const std::string& image, const std::string& code, int stdin_fd = -1,
                              int stdout_fd = -1, int stderr_fd = -1) {
  static std::vector<std::string> environment = BuildSandboxEnvironment({});
  static std::vector<char*> envp = [] {
    std::vector<char*> pointers;
    for (std::string& entry : environment) pointers.push_back(entry.data());
    pointers.push_back(nullptr);
    return pointers;
  }();
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  const int targets[] = {0, 1, 2};
  const int fds[] = {stdin_fd, stdout_fd, stderr_fd};
  for (int i = 0; i < 3; ++i) {
    if (fds[i] >= 0) posix_spawn_file_actions_adddup2(&actions, fds[i], targets[i]);
  }
  const char* args[] = {"chroot", "--userspec=1000:1000", image.c_str(), "/usr/bin/python3", "-c", code.c_str(),
                        nullptr};
  pid_t pid = -1;
  if (posix_spawnp(&pid, "chroot", &actions, nullptr, const_cast<char**>(args), envp.data()) != 0) pid = -1;
  posix_spawn_file_actions_destroy(&actions);
  return pid;
}

}  // namespace sbx::bench
