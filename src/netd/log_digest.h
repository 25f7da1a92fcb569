// The audit log's SHA-256, which the run's result reports (network.log_sha256) so a reader can
// tell the log it holds is the one the run left. The audit log writer (audit_log.h) feeds it
// every byte it writes, as it writes them: the digest is ready at stop without reading the log
// back, however long it grew (the runner waits only seconds for the summary). sbx-netd computes
// it because it writes the log and links libcrypto; the runner does neither.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace sbx::netd {

// A running SHA-256: Update() in order, then HexDigest() (which does not end the stream).
class LogDigest {
 public:
  LogDigest();
  ~LogDigest();
  LogDigest(const LogDigest&) = delete;
  LogDigest& operator=(const LogDigest&) = delete;

  void Update(const char* data, size_t size);
  // Lowercase hex SHA-256 of every byte given so far; "" if libcrypto failed at any point.
  std::string HexDigest() const;
  // How many bytes were given.
  uint64_t size() const { return size_; }

 private:
  struct State;  // libcrypto's SHA256_CTX, kept out of this header
  std::unique_ptr<State> state_;
  uint64_t size_ = 0;
  bool failed_ = false;
};

}  // namespace sbx::netd
