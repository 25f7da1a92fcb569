// Mount namespace contents: the overlay root, /workspace, /proc, /dev, /tmp, then pivot_root.
//
// Usage:
//   1. Parent: `auto plan = PrepareMountsInParent(image, workspace, limits, extras);` formats
//      every path and option string up front (the child must not allocate).
//   2. Child, in its new user+mount namespace, still holding its namespace capabilities:
//      `ApplyMountsInChild(plan, &step)` returns 0 or an errno, with `step` naming what
//      failed. Afterwards the process's root is the overlay and the host's tree is detached.
//
// Layout built in the child (every mount nosuid,nodev; the image is never written):
//   The directory holding the image (the one host directory sure to exist wherever sbx can
//   run: a minimal container may have no /tmp) is covered, in this namespace only, by a
//   private scratch tmpfs (limits.rootfs_size) that holds the overlay's upper and work
//   directories; image and workspace are bound in from fds opened before that.
//   /            overlay: image (read-only lower) + scratch upper
//   /usr         the image's /usr bound read-only (no overlayfs on Python's lookups)
//   /workspace   the workspace directory, bound from its fd, read-write; without one (a run
//                that keeps nothing), a tmpfs of limits.tmp_size owned by the sandbox user
//   /proc        a fresh proc for the new pid namespace; kcore, keys, timer_list, sysrq-trigger
//                and friends covered by /dev/null; sys, bus, fs, irq read-only
//   /dev         tmpfs with null, zero, full, random, urandom, tty bound from the host; a new
//                devpts instance; shm tmpfs; the usual fd/stdin/stdout/stderr links
//   /tmp         tmpfs of limits.tmp_size, mode 1777
//   no /sys
#pragma once

#include <string>
#include <vector>

#include "sandbox/launch/child_report.h"
#include "sandbox/policy/policy.h"

namespace sbx {

// What the sandbox's root gets beyond the image's own files, decided by the run before its
// mounts are planned (the network allowlist's files, the zygote's view of the image).
struct RootExtras {
  // Non-empty (a zygote run): the image is also bound read-only, nosuid, nodev at this path
  // of the new root, so the zygote's sessions can use it as their own overlay's lower layer.
  std::string expose_image_at;
  // Non-empty (a zygote run): the pooled sessions' library (sandbox/session_setup), re-opened
  // in the child like the image, checked against library_fd, and bound read-only (nosuid,
  // nodev; executable: it is mapped) at this path of the new root.
  std::string expose_library_at;
  std::string library_path;
  int library_fd = -1;
  // Non-empty (network allowlist): written to the scratch and bound read-only over the
  // image's /etc/resolv.conf, which must be a regular file there.
  std::string resolv_conf;
  // Non-empty (inject rules or extra CAs): the same, over the image's CA bundle
  // (kSandboxCaBundlePath in network_trust.h), which must be a regular file there.
  std::string ca_bundle;
};

struct MountPlan {
  // Canonical paths, re-opened in the child (a bind mount's source must belong to the
  // child's own mount namespace) without following any symlink, and checked against the
  // parent's fds by device and inode, so a path swapped in between is refused.
  std::string image_path;
  std::string workspace_path;
  int image_fd = -1;
  int workspace_fd = -1;           // -1: /workspace is a tmpfs (workspace_tmpfs_options)
  std::string workspace_tmpfs_options;
  std::string scratch_dir;       // covered by the scratch tmpfs: the image's parent directory
  std::string scratch_options;   // tmpfs options for the scratch (upper) layer
  std::string overlay_options;
  std::string tmp_options;
  std::string shm_options;
  RootExtras extras;
};

// workspace_fd -1 (and an empty path): the run's /workspace is a tmpfs that dies with it.
// The plan is complete when made: `extras` are part of it.
MountPlan PrepareMountsInParent(const std::string& image_path, int image_fd,
                                const std::string& workspace_path, int workspace_fd,
                                const Limits& limits, RootExtras extras = {});

// Puts the scratch tmpfs (and with it the overlay's upper, work and lower directories) over
// `dir` instead of the image's parent: a pooled session's plan, made in the zygote, whose image
// sits at "/" + kZygoteImageDir, covers the zygote's /tmp.
void MoveScratchTo(const std::string& dir, MountPlan* plan);

// The image and workspace re-opened in the child's mount namespace.
struct MountSources {
  int image_fd = -1;
  int workspace_fd = -1;
  int library_fd = -1;
};

// Returns 0 or an errno (ESTALE: a path no longer names what the parent opened); sets
// *failed_step. Called before the child switches to uid 1000, while its host credentials still let it
// traverse private directories on the way (a workspace under /root, say).
int OpenMountSourcesInChild(const MountPlan& plan, MountSources* sources, ChildStep* failed_step);

// Returns 0 or an errno; sets *failed_step. Async-signal-safe (no allocation). The root is
// entered with pivot_root; where the kernel refuses that call (an initramfs root, a container's
// seccomp profile) but allows the rest, the way runc's --no-pivot does: the new root is moved
// over "/" and chrooted into, and *root_moved is set. The old root then stays mounted beneath
// it, reachable by no path (the sandbox keeps no CAP_SYS_CHROOT to climb out of the chroot),
// though its mount points still show in /proc/self/mountinfo.
int ApplyMountsInChild(const MountPlan& plan, const MountSources& sources, ChildStep* failed_step,
                       bool* root_moved);

}  // namespace sbx
