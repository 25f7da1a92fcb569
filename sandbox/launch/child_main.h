// What the sandbox child does between clone() and execve(), in the order the launcher
// documents (steps 6-20). Everything it needs is prepared by the parent in a ChildPlan,
// because the child must not allocate: the parent may be multi-threaded.
#pragma once

#include <string>
#include <vector>

#include "sandbox/fs/mounts.h"
#include "sandbox/isolation/capabilities.h"
#include "sandbox/isolation/rlimits.h"
#include "sandbox/launch/runner_strings.h"
#include "sandbox/net/network_capture.h"
#include "sandbox/seccomp/seccomp_filter.h"

namespace sbx {

struct ChildPlan {
  int sync_fd = -1;  // the child's end of the SOCK_SEQPACKET sync socket (CLOEXEC)
  // The runner's end, inherited through clone(). The child closes it first, so that EOF or
  // a hang-up on sync_fd means the runner is gone.
  int parent_sync_fd = -1;
  int stdin_fd = -1;
  int stdout_fd = -1;
  int stderr_fd = -1;
  bool root_mode = false;      // setgroups(0) is allowed and needed to shed root's groups
  RunnerStrings runner_strings;  // overwritten first: the init must not show the runner's argv
  bool set_up_loopback = true;  // a fresh network namespace
  CapturePlan capture;          // network allowlist: routes and capture sockets (after lo)
  // RunSpec::zygote_keeps_namespace_capabilities: the program keeps root and its capabilities
  // inside the user namespace and gets no seccomp filter (no_new_privs still holds).
  bool keep_namespace_capabilities = false;
  // Isolation::kOuter: no namespaces and no mounts (`mounts` unused); the program enters the
  // workspace through this O_PATH fd (fchdir) and the init stays uid 0 with CAP_KILL alone to
  // kill the program's tree (RunOuterInitInChild). -1: a namespaced run (chdir /workspace).
  bool outer = false;
  int workspace_fd = -1;
  MountPlan mounts;
  RlimitPlan rlimits;
  CapabilityPlan capabilities;
  const SeccompProgram* seccomp = nullptr;  // null only when the policy allows losing it
  // The program: candidate absolute paths tried in order (PATH search done in the parent),
  // its argv and envp (null-terminated, pointing into the *_storage vectors).
  std::vector<std::string> exec_candidates;
  std::vector<std::string> argv_storage;
  std::vector<std::string> env_storage;
  std::vector<char*> argv;
  std::vector<char*> envp;

  // Fills argv/envp from the storage vectors; call once the storage is final.
  void Seal();
};

// Entry point of the cloned child. Never returns: it becomes the sandbox's init, and its
// fork becomes the program.
[[noreturn]] void SandboxChildMain(const ChildPlan& plan);
// The same for an outer-isolation run (plan.outer): steps O6-O8 and 13-20 of launcher.h.
[[noreturn]] void OuterChildMain(const ChildPlan& plan);

}  // namespace sbx
