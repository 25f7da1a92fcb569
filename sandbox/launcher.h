// RunSandboxed(): the one entry point that runs a command in a fresh sandbox.
//
// The order, written once (launcher.cc follows it with the same numbers; child_main.cc and
// mounts.cc hold steps 6-20, and ChildStep lists their failures in this order: LaunchStepOf;
// the outer variant's steps follow, as O-numbers):
//  Parent
//   1. Validate the command (the policy is a ValidPolicy, checked once where it was made);
//      verify the image; open image and workspace as O_PATH fds (without a workspace, step 8
//      mounts a tmpfs there).
//   2. Compile (or reuse) the seccomp program; prepare capabilities, rlimits, mounts, env.
//   3. Create the run's cgroup (v2, else v1, else rlimits if the policy allows degrading; the
//      seccomp program's loss is decided with it: run_layers.h);
//      network allowlist: start sbx-netd with the run's audit log (allowlist_run.h).
//   4. clone3(CLONE_NEWUSER|NEWNS|NEWPID|NEWUTS|NEWIPC[|NEWNET]|PIDFD[|INTO_CGROUP]).
//   5. Write the id maps, send "ids mapped"; v1: move the child into its cgroups (this
//      overlaps with the child's steps 7-11); send "cgroup placed".
//  Child (pid 1 of the new pid namespace, capabilities only inside its user namespace)
//   6. umask 022; the inherited personality reduced to its execution domain; parent-death
//      signal; wait for "ids mapped"; re-open image and workspace; take the setup ids.
//   7. Private propagation; scratch tmpfs; image bound as the overlay's lower layer.
//   8. Overlay root; (zygote) the image and the sessions' library bound in; (allowlist)
//      resolv.conf and CA bundle; workspace bound at /workspace (or
//      a tmpfs of limits.tmp_size there).
//   9. /proc with masked entries; minimal /dev; /tmp tmpfs.
//  10. pivot_root and detach the old root (refused: move it over / and chroot).
//  11. Hostname "sandbox"; lo up in a fresh network namespace. Network allowlist: every
//      destination routed to lo, the capture sockets bound and sent to the runner, which
//      hands them to sbx-netd.
//  12. Wait for "cgroup placed"; unshare(CLONE_NEWCGROUP) so the run's cgroup is its root.
//      Nothing of the program runs before.
//  13. Block SIGCHLD/SIGTERM; drop bounding and ambient capabilities; setgroups(0) (root
//      mode); uid/gid 1000; clear all capability sets; no_new_privs; not dumpable. Spawn the
//      program (vfork: the init waits until its execve), which inherits all of it.
//  Program
//  14. setsid; stdin (/dev/null unless given), stdout and stderr pipes.
//  15. rlimits.
//  16. (Outer runs only: their init stays uid 0.) setgroups(0); uid/gid 1000; clear all
//      capability sets; no_new_privs.
//  17. chdir /workspace; mark every fd above 2 close-on-exec.
//  18. Install the seccomp filter (TSYNC), the last step.
//  19. execve the program (a failure is reported over the sync socket: 127 or 126).
//  Init
//  20. Keeps two fds, and waits (init.h). (A zygote's program keeps its namespace
//      capabilities: its init drops ids and capabilities only here.)
//  Parent
//  21. Supervise: drain both pipes concurrently with head+tail caps; on the timeout SIGTERM
//      to the init (SIGCONT+SIGTERM to all), then after a grace SIGKILL the init (which ends
//      the namespace) and cgroup.kill (v2).
//  22. Once the init reports the program's end (everything else reaped), the run is over: with
//      a cgroup, reap the init, read its usage and remove it; without one, a thread reaps the
//      init while the kernel tears its namespaces down, and the usage is the init's report.
//      Build the typed result.
//
// Isolation "outer" (policy.isolation; outer_run.h): the container runtime isolates (gVisor,
// Kata), so there are no namespaces, mounts or image; the same numbers where a step is shared:
//  Parent
//   O1. As 1, plus: network must be host (ValidatePolicy); sbx runs as root (CAP_SETUID,
//       CAP_SETGID, CAP_SETPCAP, CAP_KILL) and not as uid 1000; the kernel lists children in
//       /proc. No image is opened, no id maps computed.
//   2, 3 as above; then O3. the run's private area /tmp/sbx-outer-<pid>-XXXXXX, owned by
//       uid 1000: the program's TMPDIR, and its workspace when the run was given none.
//   O4. clone3 without namespace flags (PIDFD[|INTO_CGROUP]).
//   O5. "ids mapped" (no maps to write), v1 cgroup placement, "cgroup placed".
//  Child (the init: uid 0, the container's own namespaces)
//   O6. umask and personality as in 6; no parent-death signal (a killed init would orphan the
//       tree; the sync socket's hang-up tells it instead); wait for "ids mapped"; not dumpable;
//       the runner's strings hidden.
//   O7. PR_SET_CHILD_SUBREAPER: orphans of the program become its children.
//   O8. Wait for "cgroup placed".
//   O9. 13-19 as above, the init dropping only bounding and ambient capabilities before the
//       spawn (the program: setsid, stdio, rlimits, setgroups(0) and uid/gid 1000, no
//       capabilities, no_new_privs, fchdir to the workspace's fd, fds CLOEXEC, seccomp, execve).
//  O20. The init lowers its OOM score where it may, keeps uid 0 with CAP_KILL alone, not
//       dumpable, no_new_privs, its two fds; at the program's end, or on the parent's stop byte
//       or hang-up, it SIGKILLs every descendant (walking /proc) and reaps until none is left.
//  Parent
//  O21. As 21, but the grace ends with the stop byte on the sync socket (and cgroup.kill), never
//       a SIGKILL to the init before it has killed the tree.
//  O22. As 22; the private area is removed.
#pragma once

#include <string>
#include <vector>

#include "base/error.h"
#include "sandbox/cgroup/cgroup.h"
#include "sandbox/launch/run_result.h"
#include "sandbox/policy/policy.h"
#include "sandbox/workspace/workspace.h"

namespace sbx {

struct RunSpec {
  ValidPolicy policy;  // checked where it was made (ValidPolicy::Check); not checked here again
  std::vector<std::string> argv;
  // The read-only lower layer (unused by isolation "outer"); empty: policy.image, else the
  // default image.
  std::string image_dir;
  // Empty: /workspace is a tmpfs that ends with the run (outer: a directory in the run's
  // private area, removed with it). Outer runs need it writable by uid 1000.
  std::string workspace_dir;
  // A workspace the caller opened (OpenWorkspace) or created (CreateTemporaryWorkspace) and
  // keeps across runs, such as a session's; wins over workspace_dir; never removed here.
  const Workspace* held_workspace = nullptr;
  int stdin_fd = -1;           // -1: /dev/null
  bool pass_through_output = false;  // also forward output to fds 1 and 2 as it arrives
  CgroupOptions cgroup_options;
  double kill_grace_seconds = 0.5;  // between SIGTERM and SIGKILL at the timeout
  // When this fd becomes readable or hung up (an eventfd written, a pipe's write end closed)
  // the run is stopped as at the timeout and ends kCancelled. Lets a caller that runs
  // RunSandboxed on its own thread (a session) end it. Not owned; -1: none.
  int cancel_fd = -1;
  // DANGEROUS, for the warm pool's zygote only (src/executor/session_pool.h): the program
  // keeps its capabilities inside its own user namespace (it stays root there), no seccomp
  // filter is installed, and the image is also bound read-only at kZygoteImageDir so the
  // program can build further sandboxes from it, with the library at kZygoteSessionLibrary. Everything else is as for any run: user,
  // mount, pid, net, ipc, uts namespaces, the run's cgroup, no_new_privs, a clean
  // environment. The program must never run untrusted code itself; the zygote applies every
  // dropped layer to each session it forks. Needs root mode (sbx running as root).
  bool zygote_keeps_namespace_capabilities = false;
  // Network allowlist runs: where the audit log (JSON lines) goes ("" : a new file in $TMPDIR
  // named after the run; an existing file is refused) and which sbx-netd to start ("" : the
  // one next to this executable or the one this tree built).
  std::string network_log_path;
  std::string netd_binary;
};

// Where a zygote run (RunSpec::zygote_keeps_namespace_capabilities) sees the image, and the
// library whose C++ isolates each pooled session (sandbox/session_setup/session_setup.h). The
// launcher takes the library from next to the running executable (like sbx-netd), else from
// this build tree, and refuses a zygote run without it.
inline constexpr const char* kZygoteImageDir = "/.sbx-image";
inline constexpr const char* kZygoteSessionLibrary = "/.sbx-session-setup.so";
inline constexpr const char* kSessionLibraryName = "libsbx_session_setup.so";

// Runs spec.argv in a fresh sandbox and waits for it. An Error means sbx refused or could not
// set up the sandbox before the program ran (CLI exit 125); nothing is left behind then.
// A child-side setup failure is a RunResult with status kSetupFailed.
Result<RunResult> RunSandboxed(const RunSpec& spec);

}  // namespace sbx
