// Build-time generator: compiles the default seccomp filter with libseccomp and prints it as a
// C++ array (seccomp_prebuilt.inc) that the library embeds, so no run pays the compile.
#include <cstdio>

#include "sandbox/seccomp/gen/print_seccomp_array.h"

int main() {
  auto program = sbx::CompileSeccompProgramUncached(sbx::SeccompOptions{});
  if (!program) {
    std::fprintf(stderr, "seccomp_gen: %s\n", program.error().ToString().c_str());
    return 1;
  }
  sbx::PrintSeccompArray(**program, "kPrebuiltDefaultFilter",
                         "sandbox/seccomp/gen/seccomp_gen.cc from the rule table in seccomp_filter.cc");
  return 0;
}
