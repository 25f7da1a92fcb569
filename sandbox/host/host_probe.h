// Probes of the host's kernel features, for `sbx doctor` and for tests that must skip honestly.
#pragma once

#include <string>
#include <vector>

namespace sbx {

struct FeatureProbe {
  std::string name;    // "user_namespaces", "seccomp", ...
  bool available = false;
  bool required = false;  // sbx run cannot work safely without it
  std::string detail;     // what was seen, or why it is missing and the fix
};

// Runs every probe. Each one that needs a namespace or a filter runs in a short-lived forked
// child, so the caller's own process is never changed.
std::vector<FeatureProbe> ProbeHost();

// How a step-by-step probe ended: failed_step 0 when every step worked, else the step that
// failed (-1: the probe itself could not run) and its errno.
struct ProbeStep {
  int failed_step = 0;
  int err = 0;
};
// "<step>: <strerror>" for a failed probe, "" for one that worked.
std::string DescribeProbeStep(const ProbeStep& outcome);
// The blocker and its fix for a failed probe (blocker_hints.h), or "".
std::string ProbeStepHint(const ProbeStep& outcome);

// The directory the overlay probe covers with its scratch tmpfs, as the launcher covers the
// image's parent: the image cache directory, or /tmp before there is one.
std::string ScratchDirectoryForProbes();
// A user and mount namespace, a tmpfs on `scratch_dir` (in that namespace only), an overlay.
ProbeStep ProbeOverlayInUserNamespace(const std::string& scratch_dir);
// A user, mount and pid namespace and a fresh procfs (refused under a masked /proc).
ProbeStep ProbeFreshProc();
// A user, mount and uts namespace and sethostname (refused by podman's and Docker's default
// seccomp profiles without CAP_SYS_ADMIN).
ProbeStep ProbeHostnameInUtsNamespace();

// Single probes, also used by tests to decide whether to skip.
bool CanCreateUserNamespace();
bool CanMountOverlayInUserNamespace();
// The all-port capture's NAT rule (network_redirect.h) installs in a fresh network namespace.
bool CanRedirectAllPortsInNetworkNamespace();

}  // namespace sbx
