// Parsing of sizes ("512M", "2G", bytes) and durations (seconds, fractions allowed).
#pragma once

#include <cstdint>
#include <string>

#include "base/error.h"

namespace sbx {

// Parses "123", "512K", "512M", "2G", "1T" (binary units, optional trailing "B" or "iB").
// Rejects negatives, fractions, overflow, empty strings and unknown suffixes.
Result<uint64_t> ParseSize(const std::string& text);

// Parses a non-negative decimal number of seconds ("60", "0.5"); rejects NaN, inf, hex.
Result<double> ParseSeconds(const std::string& text);

// Formats bytes with the largest exact binary unit ("512M"), for messages and --json.
std::string FormatSize(uint64_t bytes);

}  // namespace sbx
