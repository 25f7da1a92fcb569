// Range checks whose errors name the field and the range.
#include "base/range_check.h"

#include <cstdio>

#include "base/units.h"

namespace sbx {
namespace {

std::string Number(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", value);
  return text;
}

}  // namespace

Result<void> CheckSize(const char* field, uint64_t value, uint64_t min, uint64_t max,
                       const char* why_max) {
  if (value < min || value > max) {
    return InvalidInput(std::string(field) + ": " + FormatSize(value) + " is out of range; use " +
                        FormatSize(min) + " to " + FormatSize(max) + " (" + why_max + ")");
  }
  return Ok{};
}

Result<void> CheckCount(const char* field, uint64_t value, uint64_t min, uint64_t max) {
  if (value < min || value > max) {
    return InvalidInput(std::string(field) + ": " + std::to_string(value) +
                        " is out of range; use " + std::to_string(min) + " to " +
                        std::to_string(max));
  }
  return Ok{};
}

Result<void> CheckSeconds(const std::string& field, double value, double min, double max) {
  if (!(value >= min && value <= max)) {
    return InvalidInput(field + ": " + Number(value) + " s is out of range; use " + Number(min) +
                        " to " + Number(max) + " seconds");
  }
  return Ok{};
}

}  // namespace sbx
