// The per-run certificate authority that secret injection needs (docs/network.md, TLS termination):
// sbx-netd mints it when the run starts and sends only the certificate to the runner (for the
// sandbox's trust bundle), so the key never leaves netd; netd then mints one leaf per inject host
// that the sandbox's TLS clients accept. The CA's X.509 name constraints permit only the inject
// hosts, so a leaked CA certificate or key cannot vouch for any other name. EC P-256, valid from an
// hour ago for a day (clock skew between host and sandbox does not matter: they share the kernel's
// clock).
#pragma once

#include <string>
#include <vector>

#include "base/error.h"

namespace sbx::netd {

struct PemCertificateAndKey {
  std::string cert_pem;
  std::string key_pem;  // PKCS#8, unencrypted; callers wipe it (WipeString) when done
};

// CN "sbx run CA <run_id>", basicConstraints critical CA:TRUE pathlen:0, keyUsage critical
// keyCertSign+cRLSign, nameConstraints critical permitted DNS:<host> for each of `hosts`
// (exact names, normalized, at least one) with every IPv4 and IPv6 address excluded, a random
// 128-bit serial, SHA-256 signature.
Result<PemCertificateAndKey> MintRunCa(const std::vector<std::string>& hosts,
                                       const std::string& run_id);

// A server certificate for `host` signed by `ca`: CN and subjectAltName DNS:<host>,
// basicConstraints CA:FALSE, keyUsage digitalSignature, extendedKeyUsage serverAuth, a fresh
// P-256 key, a random serial, the CA's validity window at most.
Result<PemCertificateAndKey> MintLeaf(const PemCertificateAndKey& ca, const std::string& host);

}  // namespace sbx::netd
