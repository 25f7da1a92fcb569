// Unit tests for the runner's textual PEM certificate check (sandbox/net/pem_text.h).
#include "sandbox/net/pem_text.h"

#include <gtest/gtest.h>

#include <string>

namespace sbx {
namespace {

constexpr char kCert[] =
    "-----BEGIN CERTIFICATE-----\n"
    "MIIBszCCAVmgAwIBAgIUY2VydGlmaWNhdGUtYm9keQ==\n"
    "-----END CERTIFICATE-----\n";

TEST(HasPemCertificate, FindsAWellFormedBlock) {
  EXPECT_TRUE(HasPemCertificate(kCert));
  EXPECT_TRUE(HasPemCertificate(std::string("# Corp root\nsubject=CN=corp\n") + kCert));
  EXPECT_TRUE(HasPemCertificate(
      "-----BEGIN CERTIFICATE-----\r\nMIIB\r\nszCC\r\n-----END CERTIFICATE-----\r\n"));
  // No newline after the END marker (the file's last line).
  EXPECT_TRUE(HasPemCertificate("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----"));
  // A bad block first, a good one after it.
  EXPECT_TRUE(HasPemCertificate(std::string("-----BEGIN CERTIFICATE-----\n-----END "
                                            "CERTIFICATE-----\n") +
                                kCert));
}

TEST(HasPemCertificate, RefusesWhatIsNoCertificate) {
  EXPECT_FALSE(HasPemCertificate(""));
  EXPECT_FALSE(HasPemCertificate("hello\n"));
  EXPECT_FALSE(HasPemCertificate("-----BEGIN PRIVATE KEY-----\nMIGH\n-----END PRIVATE KEY-----\n"));
  EXPECT_FALSE(HasPemCertificate("-----BEGIN CERTIFICATE-----\nMIIB\n"));  // no END
  EXPECT_FALSE(HasPemCertificate("-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n"));
  EXPECT_FALSE(HasPemCertificate("-----BEGIN CERTIFICATE-----\nMII B\n-----END CERTIFICATE-----\n"));
  EXPECT_FALSE(HasPemCertificate("-----BEGIN CERTIFICATE-----\nMI=IB\n-----END CERTIFICATE-----\n"));
  EXPECT_FALSE(HasPemCertificate("x-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"));
  EXPECT_FALSE(HasPemCertificate(std::string("\x30\x82\x01\xb3\x30\x82", 6)));  // DER
}

}  // namespace
}  // namespace sbx
