#include "base/sibling_executable.h"

#include <limits.h>
#include <unistd.h>

namespace sbx {

Result<std::string> SiblingExecutable(const std::string& name, const std::string& hint) {
  char exe[PATH_MAX];
  const ssize_t size = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (size <= 0) return SysError(ErrorCode::kUnavailable, name + ": readlink(/proc/self/exe)");
  std::string path(exe, static_cast<size_t>(size));
  path.resize(path.rfind('/') + 1);
  path += name;
  if (access(path.c_str(), X_OK) != 0) {
    return SysError(ErrorCode::kUnavailable, name + ": " + path + " (" + hint + ")");
  }
  return path;
}

}  // namespace sbx
