// What the secret-injection tests share (network_inject_test.cc, and the proxy_env tests'
// injection through CONNECT): a secret in a file, the policy that injects it, and the checks
// that it reached only the host.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/integration/network_fixture.h"
#include "tests/integration/sandbox_fixture.h"

namespace sbx::testing {

// Where the sandbox finds its trust bundle (with the run's CA under inject rules).
inline constexpr char kSandboxBundle[] = "/etc/ssl/certs/ca-certificates.crt";

// A secret no test could guess, in a 0600 file the policy points at (file:, so it never
// travels through a process's arguments or environment on its way to sbx).
class SecretFile {
 public:
  SecretFile();
  const std::string& value() const { return value_; }
  std::string source() const { return "file:" + path_; }

 private:
  ScratchDir dir_;
  std::string path_;
  std::string value_;
};

// Allowlist(allow) with one inject rule "api" for `host`: Authorization: Bearer <secret>, the
// placeholder in API_KEY, netd trusting `upstream_ca`.
nlohmann::json InjectPolicy(const std::vector<std::string>& allow, const std::string& host,
                            const SecretFile& secret, const std::string& upstream_ca);

// Nothing the sandbox or the caller can see holds the secret: the run's whole output and
// result, its audit log and every file left in its workspace.
void ExpectSecretNowhere(const SandboxedRun& run, const std::string& secret);

// The small internet's "request" events of one server.
std::vector<nlohmann::json> Requests(const std::vector<nlohmann::json>& events,
                                     const std::string& server);

}  // namespace sbx::testing
