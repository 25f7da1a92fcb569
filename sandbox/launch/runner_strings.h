// The runner's command line and environment strings in the sandbox's init, which starts as a
// copy of the runner's memory: found in the parent, overwritten in the child.
//
// /proc/1/cmdline is readable by every process of the sandbox whatever the init's
// dumpability, and the runner's arguments carry policy and log paths and every
// `--env KEY=VALUE`; its environment strings (API keys) sit right after them. Usage:
//   1. parent: auto strings = FindRunnerStringsInParent();  (before clone)
//   2. child:  HideRunnerStringsInChild(*strings);   (no allocation: between clone and execve)
#pragma once

#include <cstddef>

#include "base/error.h"

namespace sbx {

struct RunnerStrings {
  char* args = nullptr;  // [args, args + args_size): what /proc/self/cmdline shows
  size_t args_size = 0;
  char* env = nullptr;  // [env, env + env_size): what /proc/self/environ shows
  size_t env_size = 0;
};

// Where the kernel says this process's argument and environment strings are (arg_start,
// arg_end, env_start, env_end of /proc/self/stat, fields 48-51). Read once per process.
Result<RunnerStrings> FindRunnerStringsInParent();

// The name the init shows in /proc/1/cmdline and /proc/1/comm.
inline constexpr char kInitName[] = "sbx-init";

// Zeroes both areas, writes kInitName at the start of the arguments (the rest stays NUL, so
// the kernel reads no further) and sets the thread's name. Only in the cloned child, which
// has its own copy of the memory: in the runner it would destroy its own argv.
void HideRunnerStringsInChild(const RunnerStrings& strings);

}  // namespace sbx
