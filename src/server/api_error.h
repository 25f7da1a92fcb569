// The error half of the server's API: an HTTP status, a stable code and a message that names
// the field and the fix, sent as {"error": {"code", "message"}} (docs/server-api.md).
#pragma once

#include <string>

#include "base/error.h"

namespace sbx::server {

struct ApiError {
  int status = 500;
  std::string code;     // "invalid", "not_found", ...: stable, for programs
  std::string message;  // for people: what was wrong and how to fix it
  int retry_after_seconds = 0;  // sent as Retry-After when > 0 (429, 503)
};

ApiError Invalid(std::string message);
ApiError InvalidPath(std::string message);
ApiError NotFound(std::string message);
ApiError Conflict(std::string message);
ApiError PermissionDenied(std::string message);
ApiError Unavailable(std::string message);
// An sbx Error met while serving: bad input the library refused is 400, a missing resource or
// kernel feature 503, anything else 500.
ApiError FromError(const Error& error, const std::string& context);

std::string ApiErrorJson(const ApiError& error);

}  // namespace sbx::server
