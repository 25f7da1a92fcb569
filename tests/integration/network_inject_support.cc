// The secret-injection tests' shared pieces; see network_inject_support.h.
#include "tests/integration/network_inject_support.h"

#include <sys/random.h>
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

namespace sbx::testing {
namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

SecretFile::SecretFile() {
  unsigned char bytes[16];
  EXPECT_EQ(getrandom(bytes, sizeof(bytes), 0), static_cast<ssize_t>(sizeof(bytes)));
  char hex[3];
  value_ = "sk-test-";
  for (unsigned char byte : bytes) {
    std::snprintf(hex, sizeof(hex), "%02x", byte);
    value_ += hex;
  }
  path_ = dir_.path() + "/api-key";
  std::ofstream(path_) << value_ << "\n";
  ::chmod(path_.c_str(), 0600);
}

nlohmann::json InjectPolicy(const std::vector<std::string>& allow, const std::string& host,
                            const SecretFile& secret, const std::string& upstream_ca) {
  nlohmann::json policy = Allowlist(allow);
  policy["inject"] = {{{"name", "api"},
                       {"hosts", {host}},
                       {"header", "Authorization"},
                       {"format", "Bearer {secret}"},
                       {"secret_from", secret.source()},
                       {"sandbox_placeholder_env", "API_KEY"}}};
  policy["upstream_ca_files"] = {upstream_ca};
  return policy;
}

void ExpectSecretNowhere(const SandboxedRun& run, const std::string& secret) {
  EXPECT_EQ(run.diagnostics.find(secret), std::string::npos) << "in sbx's output or result";
  const std::string log_path = Str(run.result["network"], "log_path");
  ASSERT_FALSE(log_path.empty());
  EXPECT_EQ(ReadAll(log_path).find(secret), std::string::npos) << "in the audit log";
  for (const auto& entry : std::filesystem::recursive_directory_iterator(run.workspace->path())) {
    if (entry.is_regular_file()) {
      EXPECT_EQ(ReadAll(entry.path()).find(secret), std::string::npos) << entry.path();
    }
  }
}

std::vector<nlohmann::json> Requests(const std::vector<nlohmann::json>& events,
                                     const std::string& server) {
  std::vector<nlohmann::json> out;
  for (const auto& event : events) {
    if (Str(event, "kind") == "request" && Str(event, "server") == server) out.push_back(event);
  }
  return out;
}

}  // namespace sbx::testing
