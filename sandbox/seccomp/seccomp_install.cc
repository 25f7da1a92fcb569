// Installs a ready seccomp program in the calling process: no libseccomp here, so the launcher's
// child and the pooled sessions' library (sandbox/session_setup) share it.
#include "sandbox/seccomp/seccomp_filter.h"

#include <linux/seccomp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace sbx {

sock_fprog SeccompProgram::AsFprog() const {
  return sock_fprog{static_cast<unsigned short>(instructions.size()),
                    const_cast<sock_filter*>(instructions.data())};
}

int InstallSeccompInChild(const SeccompProgram& program) {
  if (program.instructions.empty()) return EINVAL;
  sock_fprog fprog = program.AsFprog();
  long rc = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &fprog);
  if (rc == 0) return 0;
  // With TSYNC a positive result is the id of a thread that could not be synchronized (it runs
  // another filter tree or is mid-exec); the filter was not installed anywhere.
  if (rc > 0) return EBUSY;
  return errno;
}

}  // namespace sbx
