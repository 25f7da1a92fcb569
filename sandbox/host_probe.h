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

// Single probes, also used by tests to decide whether to skip.
bool CanCreateUserNamespace();
bool CanMountOverlayInUserNamespace();
// The all-port capture's NAT rule (network_redirect.h) installs in a fresh network namespace.
bool CanRedirectAllPortsInNetworkNamespace();

}  // namespace sbx
