// JSON-lines transcripts, flushed per event.
#include "src/agent/transcript.h"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>

namespace sbx::agent {

Transcript::~Transcript() {
  if (file_ != nullptr) std::fclose(file_);
}

Result<void> Transcript::Open(Transcript& transcript, const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    return SysError(ErrorCode::kInvalidInput, "transcript: open(" + path + ") (it must not exist yet)");
  }
  transcript.file_ = ::fdopen(fd, "w");
  if (transcript.file_ == nullptr) {
    ::close(fd);
    return SysError(ErrorCode::kIo, "transcript: fdopen");
  }
  return {};
}

void Transcript::Add(const std::string& event, nlohmann::json fields) {
  if (file_ == nullptr) return;
  fields["event"] = event;
  fields["time_ms"] = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  std::string line = fields.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  if (std::fwrite(line.data(), 1, line.size(), file_) != line.size() || std::fflush(file_) != 0) {
    std::fclose(file_);
    file_ = nullptr;
  }
}

}  // namespace sbx::agent
