// The JSON forms of what the server returns: an execution's CodeResult (figures inlined as
// base64 PNG, read beneath the workspace) and a session's description.
#pragma once

#include <nlohmann/json.hpp>

#include "src/executor/code_executor.h"
#include "src/server/session_registry.h"

namespace sbx::server {

// Figures above this many bytes in total are listed by path only.
inline constexpr size_t kMaxInlineFigureBytes = 16u << 20;

nlohmann::json CodeResultJson(const executor::CodeResult& result, int workspace_fd);
nlohmann::json SessionJson(const ServerSession& session);

}  // namespace sbx::server
