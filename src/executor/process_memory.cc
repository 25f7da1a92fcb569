// Reads a process's private memory from /proc/PID/smaps_rollup.
#include "src/executor/process_memory.h"

#include <cstdlib>
#include <fstream>
#include <string>

namespace sbx::executor {

uint64_t PrivateMemoryBytes(pid_t pid) {
  std::ifstream rollup("/proc/" + std::to_string(pid) + "/smaps_rollup");
  std::string line;
  uint64_t kib = 0;
  while (std::getline(rollup, line)) {
    if (line.rfind("Private_Clean:", 0) == 0 || line.rfind("Private_Dirty:", 0) == 0) {
      kib += std::strtoull(line.c_str() + line.find(':') + 1, nullptr, 10);
    }
  }
  return kib * 1024;
}

}  // namespace sbx::executor
