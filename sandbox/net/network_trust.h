// What a run under an allowlist needs from the runner's side when its policy injects secrets or
// adds CAs (policies/SCHEMA.md; docs/network.md, TLS termination), resolved before the sandbox
// exists:
//   - the sandbox's trust bundle: the image's bundle, then extra_ca_files, then the run's CA,
//     bound read-only over the image's bundle, with the variables TLS clients read pointing
//     at it (pip, requests and Node do not all read the system bundle). sbx-netd mints the
//     run's CA and sends its certificate before "ready" (AddRunCa): the key never exists here;
//   - each secret, read from sbx's environment or a file, and a random placeholder for the
//     sandbox's environment where the rule asks for one;
//   - the CA files' texts (sent to sbx-netd in a memfd) and the "tls" object of its first
//     control message (netd_protocol.h); netd parses the certificates (the runner links no X.509
//     parser and checks only that each file has a PEM certificate block, pem_text.h).
// A secret that cannot be read, a CA file without a certificate, an image without a bundle:
// the run is refused (exit 125) with the field named, and nothing is started.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "base/error.h"
#include "netpolicy/network_rules.h"

namespace sbx {

// Where the image keeps its bundle (Debian's ca-certificates) and where the sandbox finds ours.
inline constexpr char kSandboxCaBundlePath[] = "/etc/ssl/certs/ca-certificates.crt";

class NetworkTrust {
 public:
  NetworkTrust() = default;
  NetworkTrust(NetworkTrust&& other) noexcept;
  NetworkTrust& operator=(NetworkTrust&& other) noexcept;
  NetworkTrust(const NetworkTrust&) = delete;
  NetworkTrust& operator=(const NetworkTrust&) = delete;
  ~NetworkTrust();  // wipes the secrets

  // "" : the sandbox keeps the image's bundle (no inject rule and no extra CA).
  const std::string& sandbox_bundle() const { return sandbox_bundle_; }
  // The CA-bundle variables and the placeholders, for the sandbox's environment.
  const std::map<std::string, std::string>& sandbox_env() const { return sandbox_env_; }
  // The texts of network.extra_ca_files, then (with inject rules) of upstream_ca_files, in
  // the policy's order, each at most kNetdMaxCaFileBytes + 1 (a final newline is added): for
  // sbx-netd, which parses them all and trusts the upstream ones.
  const std::vector<std::string>& netd_ca_pems() const { return netd_ca_pems_; }
  // The "tls" object as JSON ({"secrets":[...]}); "" without inject rules. It holds the
  // secrets.
  const std::string& netd_tls_json() const { return netd_tls_json_; }
  // Wipes the secrets once sbx-netd has them: the runner needs them no longer.
  void ForgetNetdTlsJson();
  // Appends the run CA's certificate (from sbx-netd's "ready") to the sandbox's bundle.
  void AddRunCa(const std::string& cert_pem);

 private:
  friend Result<NetworkTrust> PrepareNetworkTrust(const NetworkAllowlist&, int);
  std::string sandbox_bundle_;
  std::map<std::string, std::string> sandbox_env_;
  std::vector<std::string> netd_ca_pems_;
  std::string netd_tls_json_;
};

// `image_fd` is the image's root directory (its bundle is read beneath it, no symlink
// followed). Does nothing (an empty NetworkTrust) without inject rules and extra CA files.
Result<NetworkTrust> PrepareNetworkTrust(const NetworkAllowlist& allowlist, int image_fd);

}  // namespace sbx
