// Reduces the inherited personality to the execution domain.
#include "sandbox/isolation/personality.h"

#include <sys/personality.h>

#include <cerrno>

namespace sbx {

int UseTheSandboxPersonalityInChild() {
  constexpr unsigned long kQuery = 0xffffffff;
  const int current = ::personality(kQuery);
  if (current < 0) return errno;
  const unsigned long inherited = static_cast<unsigned int>(current);
  const unsigned long domain = (inherited & PER_MASK) == PER_LINUX32 ? PER_LINUX32 : PER_LINUX;
  const unsigned long kept = domain | (inherited & UNAME26);
  if (kept == inherited) return 0;
  return ::personality(kept) < 0 ? errno : 0;
}

}  // namespace sbx
