// The audit log's SHA-256, which the run's result reports (network.log_sha256) so a reader can
// tell the log it holds is the one the run left. sbx-netd computes it when it stops, after its
// last record: it writes the log and links libcrypto, the runner does neither.
#pragma once

#include <string>

namespace sbx::netd {

// Lowercase hex SHA-256 of everything in `fd` from offset 0 (read with pread, so the fd must
// be open for reading; its offset is not used); "" if it cannot be read.
std::string LogSha256(int fd);

}  // namespace sbx::netd
