// What blocks a sandbox step inside a container runtime, and the fix for podman, Docker and a
// Kubernetes pod: the one place that words those, for `sbx run`'s refusals and `sbx doctor`.
//
// Container runtimes deny exactly what a namespace sandbox needs: a seccomp profile may deny
// unshare/clone with namespace flags or mount, an LSM may deny mount, and masked /proc paths
// (files and directories the runtime mounts over) make the kernel refuse a fresh procfs
// ("mount too revealing"). Each function returns a sentence to append to an error; the empty
// string when it has nothing better to say than the errno.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "sandbox/launch/child_report.h"

namespace sbx {

// Mount points strictly below /proc in a /proc/self/mountinfo text, except the kernel's
// permanently empty directories (binfmt_misc), which never make a procfs "too revealing".
std::vector<std::string> ProcOvermounts(std::string_view mountinfo);

// unshare/clone with namespace flags failed with `err`.
std::string NamespaceDeniedHint(int err);
// A mount(2) inside the sandbox's own user namespace failed with `err`.
std::string MountDeniedHint(int err);
// A fresh procfs was refused with `err`; reads /proc/self/mountinfo to name the masked paths.
std::string FreshProcDeniedHint(int err);

// The hint for a child setup step that failed with `err`, or "".
std::string SetupFailureHint(ChildStep step, int err);

}  // namespace sbx
