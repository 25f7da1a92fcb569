// Build-time generator: compiles sbx-netd's seccomp filter with libseccomp and prints it as a
// C++ array (netd_seccomp_prebuilt.inc) that netd embeds, so no netd start pays the compile.
#include <cstdio>

#include "sandbox/seccomp/gen/print_seccomp_array.h"
#include "src/netd/netd_seccomp.h"

int main() {
  auto program = sbx::netd::CompileNetdSeccompProgramUncached();
  if (!program) {
    std::fprintf(stderr, "netd_seccomp_gen: %s\n", program.error().ToString().c_str());
    return 1;
  }
  sbx::PrintSeccompArray(**program, "kPrebuiltNetdFilter",
                         "src/netd/gen/netd_seccomp_gen.cc from the tables in netd_seccomp.cc");
  return 0;
}
