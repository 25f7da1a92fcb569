// Finding sbx's other programs (sbx-netd, sbx-agent): the build and an install put them in the
// directory of the running executable, so they are found there and never through $PATH.
#pragma once

#include <string>

#include "base/error.h"

namespace sbx {

// <directory of the running executable>/<name>; an error naming that path (and `hint`, the
// fix) when no executable file is there.
Result<std::string> SiblingExecutable(const std::string& name, const std::string& hint);

}  // namespace sbx
