// Builds ApiErrors and their JSON bodies.
#include "src/server/api_error.h"

#include <nlohmann/json.hpp>

namespace sbx::server {

ApiError Invalid(std::string message) { return {400, "invalid", std::move(message)}; }
ApiError InvalidPath(std::string message) { return {400, "invalid_path", std::move(message)}; }
ApiError NotFound(std::string message) { return {404, "not_found", std::move(message)}; }
ApiError Conflict(std::string message) { return {409, "conflict", std::move(message)}; }
ApiError PermissionDenied(std::string message) {
  return {403, "permission_denied", std::move(message)};
}
ApiError Unavailable(std::string message) { return {503, "unavailable", std::move(message), 1}; }

ApiError FromError(const Error& error, const std::string& context) {
  std::string message = context + ": " + error.ToString();
  switch (error.code) {
    case ErrorCode::kInvalidInput:
      return Invalid(std::move(message));
    case ErrorCode::kUnavailable:
    case ErrorCode::kSetupFailed:
      return Unavailable(std::move(message));
    default:
      return {500, "internal", std::move(message)};
  }
}

std::string ApiErrorJson(const ApiError& error) {
  nlohmann::json body = {{"error", {{"code", error.code}, {"message", error.message}}}};
  // Messages quote what a client sent: replace invalid UTF-8 rather than fail to answer.
  return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace sbx::server
