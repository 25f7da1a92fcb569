/* The pooled sessions' isolation as a small C library (libsbx_session_setup.so): the zygote
 * (rootfs/zygote.py) loads it with ctypes and calls it in each session it forks, so a pooled
 * session is isolated by the same C++ as a cold sandbox (sandbox/fs/mounts.h for the root,
 * /proc masks and /dev; sandbox/isolation for lo, rlimits, capabilities and ids;
 * sandbox/seccomp for the filter's install). The launcher binds it read-only into the zygote's
 * sandbox at kZygoteSessionLibrary (sandbox/launcher.h).
 *
 * It needs nothing but glibc at run time (libstdc++ and libgcc are linked in, its symbols other
 * than these are local), and runs against the image's glibc: a test checks that the symbol
 * versions it asks for are all in the image's libc (tests/integration).
 *
 * Usage, in the zygote (single-threaded: nothing here is called while another thread runs):
 *   1. `sbx_zygote_unshare_pid()`, `sbx_zygote_fork(ranges, count)`; in the parent
 *      `sbx_zygote_setns_pid(own_pid_ns_fd)`.
 *   2. In the session child, after its hello byte:
 *      `sbx_session_enter(name, workspace_fd, rootfs_size, tmp_size, step, sizeof step)`:
 *      parent-death signal; the workspace name checked; new mount, net, ipc and uts
 *      namespaces; the mount tree of a cold sandbox (scratch tmpfs over the zygote's /tmp,
 *      overlay of the image at kZygoteImageDir, /usr bound read-only, the workspace
 *      /workspace/<name> re-opened without symlinks and checked by device and inode against
 *      `workspace_fd`, /proc with the masks, /dev, /tmp) and pivot_root; hostname; lo up.
 *   3. After the host's "cgroup placed" byte:
 *      `sbx_session_lock_down(channel, rlimits, pairs, last_cap, bpf, bpf_size, step, size)`:
 *      a cgroup namespace; rlimits; chdir /workspace; bounding and ambient sets dropped, no
 *      groups, uid and gid 1000, every capability set empty, no_new_privs; stdin, stdout,
 *      stderr on /dev/null and every fd but `channel` closed; the seccomp program (the host's,
 *      compiled by libseccomp) installed with TSYNC, last.
 * Each returns 0, or an errno with `step` holding the name of the step that failed (truncated
 * to `step_size`, always terminated); the session must then report it and exit.
 */
#pragma once

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

int sbx_zygote_unshare_pid(void);
int sbx_zygote_setns_pid(int pid_namespace_fd);
/* The pre-fault's learning fork (zygote_prefault.py): its own mount namespace with a private
 * tmpfs of `tmpfs_options` over `dir`, so what it writes there never reaches the zygote's. */
int sbx_private_tmpfs(const char* dir, const char* tmpfs_options);

int sbx_session_enter(const char* workspace_name, int workspace_fd, unsigned long long rootfs_size_bytes,
                      unsigned long long tmp_size_bytes, char* step, size_t step_size);
/* `rlimits`: `rlimit_pairs` pairs of {resource, value} (soft and hard), as RlimitPlan holds. */
int sbx_session_lock_down(int channel, const unsigned long long* rlimits, size_t rlimit_pairs, int last_cap,
                          const void* seccomp_program, size_t seccomp_bytes, char* step, size_t step_size);
/* The pre-fault (zygote_prefault.py), in each session while it is prepared: copies the zygote
 * pages of `range_count` {address, length} pairs in `ranges` now, as a write would
 * (MADV_POPULATE_WRITE, Linux 5.14); a range that no longer maps is skipped. */
void sbx_prefault(const unsigned long long* ranges, size_t range_count);
/* fork(), and in the child sbx_prefault(ranges, range_count) before it returns: the zygote
 * calls it as os.fork calls fork() (PyOS_BeforeFork, and after it PyOS_AfterFork_Child or
 * _Parent, with the GIL held throughout), so the pages CPython's after-fork callbacks and a
 * session's set-up write are copied in one batch instead of a fault each. Returns the child's
 * pid in the parent, 0 in the child, -errno if there is no child. */
int sbx_zygote_fork(const unsigned long long* ranges, size_t range_count);

#ifdef __cplusplus
}
#endif
