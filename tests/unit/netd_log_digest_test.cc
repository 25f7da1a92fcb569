// Unit tests for the audit log's running SHA-256 (src/netd/log_digest.h) and the digest the
// audit log reports at stop (AuditLog::Sha256Hex).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "base/unique_fd.h"
#include "src/netd/audit_log.h"
#include "src/netd/log_digest.h"
#include "tests/unit/files_test_util.h"

namespace sbx::netd {
namespace {

constexpr char kEmptySha256[] = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

// What coreutils says, so the digest is checked against a second implementation.
std::string Sha256sumOf(const std::string& path) {
  FILE* pipe = popen(("/usr/bin/sha256sum " + path).c_str(), "r");
  if (pipe == nullptr) return "popen failed";
  char hex[65] = "";
  const size_t got = std::fread(hex, 1, 64, pipe);
  pclose(pipe);
  return std::string(hex, got);
}

TEST(LogDigest, KnownAnswers) {
  LogDigest empty;
  EXPECT_EQ(empty.HexDigest(), kEmptySha256);
  LogDigest abc;
  abc.Update("abc", 3);
  EXPECT_EQ(abc.HexDigest(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(abc.size(), 3u);
}

TEST(LogDigest, PiecesHashAsTheWholeAndTheStreamGoesOnAfterADigest) {
  // 200 KiB of 'x', given in uneven pieces, with a digest taken midway.
  const std::string piece(7 * 1024 + 13, 'x');
  const size_t total = 200 * 1024;
  LogDigest digest;
  size_t given = 0;
  while (given < total) {
    const size_t size = std::min(piece.size(), total - given);
    digest.Update(piece.data(), size);
    given += size;
    if (given > total / 2 && given - size <= total / 2) {
      EXPECT_EQ(digest.HexDigest().size(), 64u);
    }
  }
  EXPECT_EQ(digest.size(), total);
  EXPECT_EQ(digest.HexDigest(), "5d4abf60daba0b11555b6da942dd4f40d5f99ee617e14ba4ba686b47d75a5049");
  EXPECT_EQ(digest.HexDigest(), digest.HexDigest());
}

// The runner's log: new, write-only, append-only (allowlist_run.cc).
UniqueFd CreateLikeTheRunner(const std::string& path) {
  return UniqueFd(open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0600));
}

TEST(AuditLogDigest, IsTheSha256OfTheFileWithoutReadingIt) {
  sbx::testing::TempDir dir;
  const std::string path = dir.path() + "/network.jsonl";
  UniqueFd fd = CreateLikeTheRunner(path);
  ASSERT_TRUE(fd);
  AuditLog log(fd.get(), "r7f3a");
  EXPECT_EQ(log.Sha256Hex(), kEmptySha256);
  // Enough records for the file to outgrow any single buffer.
  for (int i = 0; i < 3000; ++i) {
    log.LogDns({"host" + std::to_string(i) + ".example.com", "A", i % 2 == 0, "allow[0]", "no_rule",
                "198.18.0.1"});
  }
  ConnAuditRecord conn;
  conn.dst = "198.18.4.17:443";
  conn.name = std::string("caf\xc3\xa9.example.com");
  conn.name_src = "fakeip";
  log.LogConn(conn);
  const std::string reported = log.Sha256Hex();
  EXPECT_EQ(reported.size(), 64u);
  EXPECT_EQ(reported, Sha256sumOf(path));
  EXPECT_GT(sbx::testing::ReadFile(path).size(), 100u * 1024);
}

TEST(AuditLogDigest, IsEmptyWhenTheFileIsNotWhatTheLogWrote) {
  sbx::testing::TempDir dir;
  const std::string path = dir.path() + "/network.jsonl";
  UniqueFd fd = CreateLikeTheRunner(path);
  ASSERT_TRUE(fd);
  AuditLog log(fd.get(), "run");
  log.LogDns({"a.example.com", "A", true, "allow[0]", "", "198.18.0.1"});
  ASSERT_EQ(log.Sha256Hex(), Sha256sumOf(path));
  // Another writer: the digest would no longer be the file's, so none is reported.
  ASSERT_EQ(write(fd.get(), "forged\n", 7), 7);
  EXPECT_EQ(log.Sha256Hex(), "");
  EXPECT_EQ(AuditLog(-1, "run").Sha256Hex(), "");
}

}  // namespace
}  // namespace sbx::netd
