// Raises a negative inherited oom_score_adj to 0.
#include "sandbox/isolation/oom_score.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace sbx {
namespace {

constexpr char kOomScoreAdj[] = "/proc/self/oom_score_adj";

// -1000..1000 and a newline, as the kernel prints it.
int ReadOomScoreAdj(int* value) {
  const int fd = ::open(kOomScoreAdj, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  char text[16];
  ssize_t got;
  do {
    got = ::read(fd, text, sizeof(text));
  } while (got < 0 && errno == EINTR);
  const int err = errno;
  ::close(fd);
  if (got <= 0) return got < 0 ? err : EIO;
  ssize_t i = 0;
  const bool negative = text[0] == '-';
  if (negative) ++i;
  if (i >= got || text[i] < '0' || text[i] > '9') return EIO;
  int magnitude = 0;
  for (; i < got && text[i] >= '0' && text[i] <= '9' && magnitude <= 1000; ++i)
    magnitude = magnitude * 10 + (text[i] - '0');
  *value = negative ? -magnitude : magnitude;
  return 0;
}

}  // namespace

int RaiseInheritedOomScoreInChild() {
  int inherited = 0;
  if (int err = ReadOomScoreAdj(&inherited)) return err;
  if (inherited >= 0) return 0;
  const int fd = ::open(kOomScoreAdj, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  ssize_t put;
  do {
    put = ::write(fd, "0", 1);
  } while (put < 0 && errno == EINTR);
  const int err = put == 1 ? 0 : (put < 0 ? errno : EIO);
  ::close(fd);
  return err;
}

}  // namespace sbx
