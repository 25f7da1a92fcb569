// Range checks of a configured number (a policy's limits, an allowlist's limits): the error names
// the field, the value and the range to use instead.
#pragma once

#include <cstdint>
#include <string>

#include "base/error.h"

namespace sbx {

// "<field>: 4M is out of range; use 8M to 2G (<why_max>)".
Result<void> CheckSize(const char* field, uint64_t value, uint64_t min, uint64_t max,
                       const char* why_max);
// "<field>: 3 is out of range; use 4 to 65536".
Result<void> CheckCount(const char* field, uint64_t value, uint64_t min, uint64_t max);
// "<field>: 0.05 s is out of range; use 0.1 to 300 seconds"; NaN is out of every range.
Result<void> CheckSeconds(const std::string& field, double value, double min, double max);

}  // namespace sbx
