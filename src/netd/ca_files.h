// The X.509 check of the CA files a policy names (network.extra_ca_files, upstream_ca_files).
// The runner reads them and checks only that each has a PEM certificate block (it links no
// X.509 parser); sbx-netd, which links OpenSSL anyway, parses every block before it answers
// "ready", so a damaged file still refuses the run before its program starts.
#pragma once

#include <string>
#include <vector>

#include "base/error.h"

namespace sbx::netd {

// pems[i] is the text of paths[i]; `field` is the policy's name for the list
// ("network.extra_ca_files"). Every "-----BEGIN CERTIFICATE-----" block must parse as X.509
// and there must be at least one; the error names "<field>[i]: <path>" and the block.
Result<void> CheckCaFiles(const std::string& field, const std::vector<std::string>& pems,
                          const std::vector<std::string>& paths);

}  // namespace sbx::netd
