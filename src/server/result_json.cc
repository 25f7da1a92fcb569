// CodeResultJson and SessionJson.
#include "src/server/result_json.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/beast/core/detail/base64.hpp>

#include "sandbox/fs/fs_beneath.h"
#include "sandbox/launch/run_result.h"

namespace sbx::server {
namespace {

std::string Base64(const std::string& bytes) {
  namespace base64 = boost::beast::detail::base64;
  std::string encoded(base64::encoded_size(bytes.size()), '\0');
  encoded.resize(base64::encode(encoded.data(), bytes.data(), bytes.size()));
  return encoded;
}

// The figure's bytes, or nothing if it is not a regular file beneath the workspace within
// `budget` (which it then shrinks).
std::optional<std::string> ReadFigure(int workspace_fd, const std::string& path, size_t& budget) {
  auto fd = OpenBeneath(workspace_fd, path, O_RDONLY);
  if (!fd) return std::nullopt;
  struct stat st {};
  if (::fstat(fd->get(), &st) != 0 || !S_ISREG(st.st_mode) || static_cast<size_t>(st.st_size) > budget) {
    return std::nullopt;
  }
  std::string bytes(static_cast<size_t>(st.st_size), '\0');
  size_t got = 0;
  while (got < bytes.size()) {
    ssize_t n = ::read(fd->get(), bytes.data() + got, bytes.size() - got);
    if (n <= 0) return std::nullopt;
    got += static_cast<size_t>(n);
  }
  budget -= got;
  return bytes;
}

}  // namespace

nlohmann::json CodeResultJson(const executor::CodeResult& result, int workspace_fd) {
  using nlohmann::json;
  json error = nullptr;
  if (result.error) {
    error = {{"type", result.error->type},
             {"message", result.error->message},
             {"traceback", result.error->traceback}};
  }
  json images = json::array();
  size_t budget = kMaxInlineFigureBytes;
  for (const std::string& path : result.images) {
    json image = {{"path", path}, {"png_base64", nullptr}};
    if (auto bytes = ReadFigure(workspace_fd, path, budget)) image["png_base64"] = Base64(*bytes);
    images.push_back(std::move(image));
  }
  return {
      {"status", RunStatusName(result.status)},
      {"exit_code", result.exit_code},
      {"output", result.output},
      {"stdout", result.stdout_text},
      {"stderr", result.stderr_text},
      {"stdout_truncated", result.stdout_truncated},
      {"stderr_truncated", result.stderr_truncated},
      {"output_truncated", result.output_truncated},
      {"value", result.value ? json(*result.value) : json(nullptr)},
      {"error", error},
      {"wall_ms", result.wall_ms},
      {"cpu_ms", result.cpu_ms},
      {"peak_memory_bytes", result.peak_memory_bytes},
      {"blocks_run", result.blocks_run},
      {"files_changed", result.files_changed},
      {"images", images},
      {"state_lost", result.state_lost},
      {"notice", result.notice},
      {"rejected", result.rejected},
      {"network",
       {{"mode", result.network_mode},
        {"blocked", result.network_blocked},
        {"failed", result.network_failed},
        {"allowed", result.network_allowed},
        {"denied", result.network_denied}}},
  };
}

nlohmann::json SessionJson(const ServerSession& session) {
  return {{"id", session.id},
          {"created", session.created},
          {"last_used", session.last_used()},
          {"executions", session.executions()},
          {"busy", session.busy()},
          {"requests", session.requests()},
          {"pooled", session.pooled},
          {"idle_timeout", session.idle_timeout_seconds},
          {"network", session.network},
          {"image", session.image.empty() ? nlohmann::json(nullptr) : nlohmann::json(session.image)}};
}

}  // namespace sbx::server
