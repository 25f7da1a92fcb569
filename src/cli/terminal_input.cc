// A pipe fed from the caller's terminal, for the program's stdin.
#include "src/cli/terminal_input.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <string_view>
#include <thread>

#include "base/write_all.h"

namespace sbx::cli {
namespace {

// Copies until the terminal's end of file (Ctrl-D on an empty line) or until the program's end
// is gone (EPIPE: SIGPIPE is ignored by `sbx run`), then closes the pipe so the program sees
// end of file. A line read after the program ended is lost with it, as under a pipe.
void Relay(int terminal_fd, UniqueFd pipe_in) {
  char buffer[4096];
  for (;;) {
    const ssize_t got = ::read(terminal_fd, buffer, sizeof(buffer));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return;
    if (!WriteAll(pipe_in.get(), std::string_view(buffer, static_cast<size_t>(got)))) return;
  }
}

}  // namespace

Result<UniqueFd> InputFromTerminal(int terminal_fd) {
  int ends[2];
  if (::pipe2(ends, O_CLOEXEC) != 0) return SysError(ErrorCode::kSetupFailed, "pipe2 for --stdin -");
  UniqueFd pipe_out(ends[0]), pipe_in(ends[1]);
  std::thread(Relay, terminal_fd, std::move(pipe_in)).detach();
  return pipe_out;
}

}  // namespace sbx::cli
