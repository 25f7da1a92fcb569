// Unit tests for the runner's preparations for secret injection (sandbox/net/network_trust.h):
// the sandbox's trust bundle, the placeholders, and the "tls" object sbx-netd receives.
#include "sandbox/net/network_trust.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <nlohmann/json.hpp>
#include <string>

#include "sandbox/policy/policy.h"
#include "src/netd/tls_ca.h"
#include "tests/unit/files_test_util.h"

namespace sbx::testing {
namespace {

constexpr char kSecret[] = "sk-unit-0123456789abcdef";

// An image root holding a bundle of one certificate, a CA file, and a policy around them.
class NetworkTrustTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto image_ca = netd::MintRunCa({"image.test"}, "image");
    ASSERT_TRUE(image_ca) << image_ca.error().ToString();
    image_bundle_ = image_ca->cert_pem;
    ASSERT_EQ(::system(("mkdir -p " + image_.path() + "/etc/ssl/certs").c_str()), 0);
    WriteFile(image_ / "etc/ssl/certs/ca-certificates.crt", image_bundle_);
    image_fd_ = ::open(image_.path().c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    auto corp = netd::MintRunCa({"corp.test"}, "corp");
    ASSERT_TRUE(corp);
    corp_pem_ = corp->cert_pem;
    WriteFile(files_ / "corp.pem", corp_pem_);
    ::setenv("SBX_TRUST_TEST_KEY", kSecret, 1);
  }
  void TearDown() override {
    ::close(image_fd_);
    ::unsetenv("SBX_TRUST_TEST_KEY");
  }

  NetworkAllowlist Allowlist(const std::string& network) {
    auto policy = ParsePolicyJson(R"({"network": {"mode": "allowlist", "allow": ["api.test"], )" +
                                  network + "}}");
    EXPECT_TRUE(policy) << policy.error().ToString();
    return policy ? policy->network_allowlist : NetworkAllowlist{};
  }
  std::string Inject(const std::string& source) {
    return R"("inject": [{"name": "api", "hosts": ["api.test"], "header": "Authorization",
                          "format": "Bearer {secret}", "secret_from": ")" +
           source + R"(", "sandbox_placeholder_env": "API_KEY"}])";
  }

  TempDir image_, files_;
  int image_fd_ = -1;
  std::string image_bundle_, corp_pem_;
};

TEST_F(NetworkTrustTest, NothingToDoWithoutInjectOrExtraCas) {
  auto trust = PrepareNetworkTrust(Allowlist(R"("deny": [])"), image_fd_);
  ASSERT_TRUE(trust) << trust.error().ToString();
  EXPECT_EQ(trust->sandbox_bundle(), "");
  EXPECT_TRUE(trust->sandbox_env().empty());
  EXPECT_EQ(trust->netd_tls_json(), "");
}

TEST_F(NetworkTrustTest, ExtraCasJoinTheImageBundle) {
  auto trust = PrepareNetworkTrust(
      Allowlist(R"("extra_ca_files": [")" + files_.path() + R"(/corp.pem"])"), image_fd_);
  ASSERT_TRUE(trust) << trust.error().ToString();
  EXPECT_EQ(trust->sandbox_bundle(), image_bundle_ + corp_pem_);
  EXPECT_EQ(trust->sandbox_env().at("SSL_CERT_FILE"), kSandboxCaBundlePath);
  EXPECT_EQ(trust->sandbox_env().at("PIP_CERT"), kSandboxCaBundlePath);
  EXPECT_EQ(trust->sandbox_env().at("NODE_EXTRA_CA_CERTS"), kSandboxCaBundlePath);
  EXPECT_EQ(trust->netd_ca_pems(), std::vector<std::string>{corp_pem_}) << "for sbx-netd to parse";
  EXPECT_EQ(trust->netd_tls_json(), "") << "no inject rule, no secrets for sbx-netd";
}

TEST_F(NetworkTrustTest, InjectSendsTheSecretToNetdOnlyAndTrustsTheCaNetdMinted) {
  auto allowlist = Allowlist(Inject("env:SBX_TRUST_TEST_KEY") + R"(, "upstream_ca_files": [")" +
                             files_.path() + R"(/corp.pem"])");
  auto trust = PrepareNetworkTrust(allowlist, image_fd_);
  ASSERT_TRUE(trust) << trust.error().ToString();
  auto tls = nlohmann::json::parse(trust->netd_tls_json(), nullptr, false);
  ASSERT_TRUE(tls.is_object()) << "valid JSON";
  EXPECT_EQ(tls["secrets"].size(), 1u);
  EXPECT_EQ(tls["secrets"][0]["value"], std::string("Bearer ") + kSecret);
  const std::string placeholder = tls["secrets"][0]["placeholder"];
  EXPECT_EQ(placeholder.size(), 7u + 32u);
  EXPECT_EQ(placeholder.rfind("sbx-ph-", 0), 0u);
  EXPECT_EQ(trust->sandbox_env().at("API_KEY"), placeholder);
  // The upstream CA goes to netd with the CA files (a memfd), not in the secrets' message.
  EXPECT_EQ(trust->netd_ca_pems(), std::vector<std::string>{corp_pem_});
  EXPECT_EQ(tls.size(), 1u) << tls.dump();
  EXPECT_FALSE(tls.contains("ca_key_pem")) << "the run CA's key never exists in the runner";
  // The sandbox trusts the image's CAs and, once netd answers, the run's CA; it holds no secret.
  EXPECT_EQ(trust->sandbox_bundle(), image_bundle_);
  trust->AddRunCa(corp_pem_);
  EXPECT_EQ(trust->sandbox_bundle(), image_bundle_ + corp_pem_);
  for (const auto& [name, value] : trust->sandbox_env()) {
    EXPECT_EQ(value.find(kSecret), std::string::npos) << name;
  }
}

TEST_F(NetworkTrustTest, SecretFromAFileLosesItsTrailingNewline) {
  WriteFile(files_ / "key", std::string(kSecret) + "\n", 0600);
  auto trust = PrepareNetworkTrust(Allowlist(Inject("file:" + files_.path() + "/key")), image_fd_);
  ASSERT_TRUE(trust) << trust.error().ToString();
  auto tls = nlohmann::json::parse(trust->netd_tls_json());
  EXPECT_EQ(tls["secrets"][0]["value"], std::string("Bearer ") + kSecret);
}

TEST_F(NetworkTrustTest, UnreadableSecretsRefuseTheRunWithoutShowingThem) {
  WriteFile(files_ / "two-lines", std::string(kSecret) + "\nX-Evil: 1\n", 0600);
  WriteFile(files_ / "empty", "", 0600);
  WriteFile(files_ / "latin1", std::string(kSecret) + "\xe9", 0600);
  ASSERT_EQ(::mkfifo((files_ / "fifo").c_str(), 0600), 0);
  struct Case {
    std::string source;
    std::string must_mention;
  };
  for (const Case& bad : std::vector<Case>{
           {"env:SBX_TRUST_TEST_UNSET", "network.inject[0].secret_from: SBX_TRUST_TEST_UNSET is "
                                        "not set (or empty) in sbx's environment"},
           {"file:" + files_.path() + "/missing", "network.inject[0].secret_from"},
           {"file:" + files_.path() + "/empty", "is empty"},
           {"file:" + files_.path() + "/two-lines", "the secret has a control or non-ASCII character"},
           {"file:" + files_.path() + "/latin1", "the secret has a control or non-ASCII character"},
           {"file:" + files_.path() + "/fifo", "is not a readable regular file"},
           {"file:" + files_.path() + "/missing", "is not a readable regular file"},
       }) {
    auto trust = PrepareNetworkTrust(Allowlist(Inject(bad.source)), image_fd_);
    ASSERT_FALSE(trust) << bad.source;
    EXPECT_EQ(trust.error().code == ErrorCode::kInvalidInput || trust.error().code == ErrorCode::kIo,
              true);
    EXPECT_NE(trust.error().message.find(bad.must_mention), std::string::npos)
        << trust.error().message;
    EXPECT_EQ(trust.error().ToString().find(kSecret), std::string::npos) << "echoed the secret";
  }
}

TEST_F(NetworkTrustTest, CaFilesMustHoldACertificate) {
  WriteFile(files_ / "not-pem", "hello\n");
  // A key is PEM, but not a certificate: the usual wrong file.
  WriteFile(files_ / "key.pem", "-----BEGIN PRIVATE KEY-----\nMIGHAgEA\n-----END PRIVATE KEY-----\n");
  for (const char* name : {"not-pem", "key.pem"}) {
    auto trust = PrepareNetworkTrust(
        Allowlist(R"("extra_ca_files": [")" + files_.path() + "/" + name + R"("])"), image_fd_);
    ASSERT_FALSE(trust) << name;
    EXPECT_NE(trust.error().message.find("network.extra_ca_files[0]: " + files_.path() + "/" +
                                         name + ": no PEM certificate in it"),
              std::string::npos)
        << trust.error().message;
  }
}

TEST_F(NetworkTrustTest, AnImageWithoutABundleIsRefused) {
  TempDir bare;
  int fd = ::open(bare.path().c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  auto trust = PrepareNetworkTrust(Allowlist(Inject("env:SBX_TRUST_TEST_KEY")), fd);
  ::close(fd);
  ASSERT_FALSE(trust);
  EXPECT_NE(trust.error().message.find("install ca-certificates in the image"), std::string::npos)
      << trust.error().message;
}

}  // namespace
}  // namespace sbx::testing
