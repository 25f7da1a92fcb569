// Finds the runner's argument and environment areas in /proc/self/stat; wipes them in a child.
#include "sandbox/launch/runner_strings.h"

#include <sys/prctl.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "base/small_file.h"

namespace sbx {
namespace {

Result<RunnerStrings> ReadRunnerStrings() {
  SBX_ASSIGN_OR_RETURN(auto stat, ReadSmallFile("/proc/self/stat"));
  // Field 2 (comm) may hold spaces and parentheses: count fields after its closing one.
  const size_t comm_end = stat.rfind(')');
  if (comm_end == std::string::npos) {
    return MakeError(ErrorCode::kSetupFailed, "/proc/self/stat: no ')' after the name");
  }
  unsigned long long values[4] = {};
  int field = 2;
  const char* at = stat.c_str() + comm_end + 1;
  while (*at != '\0' && field < 51) {
    char* end = nullptr;
    while (*at == ' ') ++at;
    const unsigned long long value = std::strtoull(at, &end, 10);
    if (end == at) {  // field 3 is the state letter
      while (*at != ' ' && *at != '\0') ++at;
    } else {
      at = end;
    }
    ++field;
    if (field >= 48) values[field - 48] = value;
  }
  if (field != 51 || values[0] == 0 || values[1] < values[0] || values[3] < values[2]) {
    return MakeError(ErrorCode::kSetupFailed,
                     "/proc/self/stat: no argument and environment addresses (fields 48-51; "
                     "Linux 3.5 or later shows them)");
  }
  RunnerStrings strings;
  strings.args = reinterpret_cast<char*>(static_cast<uintptr_t>(values[0]));
  strings.args_size = static_cast<size_t>(values[1] - values[0]);
  strings.env = reinterpret_cast<char*>(static_cast<uintptr_t>(values[2]));
  strings.env_size = static_cast<size_t>(values[3] - values[2]);
  return strings;
}

}  // namespace

Result<RunnerStrings> FindRunnerStringsInParent() {
  static const Result<RunnerStrings> strings = ReadRunnerStrings();
  return strings;
}

void HideRunnerStringsInChild(const RunnerStrings& strings) {
  if (strings.env_size > 0) std::memset(strings.env, 0, strings.env_size);
  if (strings.args_size > 0) {
    std::memset(strings.args, 0, strings.args_size);
    // The last byte stays NUL: a non-NUL one makes the kernel read on into the environment.
    std::memcpy(strings.args, kInitName, std::min(sizeof(kInitName), strings.args_size) - 1);
  }
  (void)::prctl(PR_SET_NAME, kInitName, 0, 0, 0);
}

}  // namespace sbx
