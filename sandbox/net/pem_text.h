// A textual check that a file holds a PEM certificate, for the CA files a policy names
// (network.extra_ca_files, upstream_ca_files). The runner links no X.509 parser (libcrypto
// stays out of sbx: its relocations cost every run's start-up); this check catches the usual
// mistakes (a DER file, a key, a path to the wrong file) with the field named, and sbx-netd
// parses every certificate before the run starts (src/netd/ca_files.h).
#pragma once

#include <string_view>

namespace sbx {

// True when `text` has at least one block "-----BEGIN CERTIFICATE-----", then lines of base64
// (at least one character, '=' padding at the end only), then "-----END CERTIFICATE-----",
// each marker on a line of its own (CR LF line ends accepted).
bool HasPemCertificate(std::string_view text);

}  // namespace sbx
