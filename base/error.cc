// Formatting and constructors for sbx::Error.
#include "base/error.h"

#include <cstring>

namespace sbx {

std::string Error::ToString() const { return message; }

Error MakeError(ErrorCode code, std::string message) { return Error{code, 0, std::move(message)}; }

Error SysError(ErrorCode code, const std::string& what, int err_no) {
  return Error{code, err_no, what + ": " + std::strerror(err_no)};
}

Error InvalidInput(std::string message) {
  return Error{ErrorCode::kInvalidInput, 0, std::move(message)};
}

}  // namespace sbx
