// What a run under an allowlist needs from the runner's side when its policy injects secrets or
// adds CAs (policies/SCHEMA.md, network-design §4.6), resolved before the sandbox exists:
//   - the run's CA (tls_ca.h), minted for the inject hosts only;
//   - the sandbox's trust bundle: the image's bundle, then extra_ca_files, then the run's CA,
//     bound read-only over the image's bundle, with the variables TLS clients read pointing
//     at it (pip, requests and Node do not all read the system bundle);
//   - each secret, read from sbx's environment or a file, and a random placeholder for the
//     sandbox's environment where the rule asks for one;
//   - the "tls" object of sbx-netd's first control message (network_helper_protocol.h).
// A secret that cannot be read, a CA file without a certificate, an image without a bundle:
// the run is refused (exit 125) with the field named, and nothing is started.
#pragma once

#include <map>
#include <string>

#include "sandbox/error.h"
#include "sandbox/network_rules.h"

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
  ~NetworkTrust();  // wipes the secrets and the CA key

  // "" : the sandbox keeps the image's bundle (no inject rule and no extra CA).
  const std::string& sandbox_bundle() const { return sandbox_bundle_; }
  // The CA-bundle variables and the placeholders, for the sandbox's environment.
  const std::map<std::string, std::string>& sandbox_env() const { return sandbox_env_; }
  // The "tls" object as JSON; "" without inject rules. It holds the secrets and the CA key.
  const std::string& netd_tls_json() const { return netd_tls_json_; }
  // Wipes the secrets and the CA key once sbx-netd has them: the runner needs them no longer.
  void ForgetNetdTlsJson();

 private:
  friend Result<NetworkTrust> PrepareNetworkTrust(const NetworkAllowlist&, int, const std::string&);
  std::string sandbox_bundle_;
  std::map<std::string, std::string> sandbox_env_;
  std::string netd_tls_json_;
};

// `image_fd` is the image's root directory (its bundle is read beneath it, no symlink
// followed). Does nothing (an empty NetworkTrust) without inject rules and extra CA files.
Result<NetworkTrust> PrepareNetworkTrust(const NetworkAllowlist& allowlist, int image_fd,
                                         const std::string& run_id);

}  // namespace sbx
