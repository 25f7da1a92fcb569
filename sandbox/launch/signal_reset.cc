// Why not simply signal(sig, SIG_DFL) for all 64: that is 62 system calls on the launch's
// critical path, where one read of the status tells the few a runner changed (sbx run: SIGPIPE;
// a library user: its own handlers).
#include "sandbox/launch/signal_reset.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

namespace sbx {
namespace {

// The 16 hex digits after "<key>\t" at the start of a line of `status`.
bool ReadMask(std::string_view status, std::string_view key, uint64_t* mask) {
  size_t at = 0;
  while (true) {
    at = status.find(key, at);
    if (at == std::string_view::npos) return false;
    if (at == 0 || status[at - 1] == '\n') break;
    at += key.size();
  }
  std::string_view digits = status.substr(at + key.size());
  if (digits.size() < 16 || (digits.size() > 16 && digits[16] != '\n')) return false;
  uint64_t value = 0;
  for (size_t i = 0; i < 16; ++i) {
    const char c = digits[i];
    int nibble = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (nibble < 0) return false;
    value = (value << 4) | static_cast<uint64_t>(nibble);
  }
  *mask = value;
  return true;
}

}  // namespace

bool ParseSignalDispositions(std::string_view status, SignalDispositions* out) {
  SignalDispositions parsed;
  if (!ReadMask(status, "SigIgn:\t", &parsed.ignored) || !ReadMask(status, "SigCgt:\t", &parsed.caught))
    return false;
  *out = parsed;
  return true;
}

void ResetSignalDispositionsInChild() {
  // On the stack: nothing here may allocate. The status is about 1.5 KiB.
  char buffer[8192];
  size_t size = 0;
  bool read_all = false;
  const int fd = ::open("/proc/self/status", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    while (size < sizeof(buffer)) {
      const ssize_t got = ::read(fd, buffer + size, sizeof(buffer) - size);
      if (got < 0) break;
      if (got == 0) {
        read_all = true;
        break;
      }
      size += static_cast<size_t>(got);
    }
    ::close(fd);
  }
  SignalDispositions dispositions;
  uint64_t reset = ~uint64_t{0};  // every signal, unless the status says which
  if (read_all && ParseSignalDispositions(std::string_view(buffer, size), &dispositions))
    reset = dispositions.ignored | dispositions.caught | (uint64_t{1} << (SIGCHLD - 1));
  for (int sig = 1; sig < NSIG && sig <= 64; ++sig) {
    if (reset & (uint64_t{1} << (sig - 1))) ::signal(sig, SIG_DFL);
  }
}

}  // namespace sbx
