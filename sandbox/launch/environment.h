// The sandbox's environment: a fixed allowlist plus what the policy names. Nothing of the
// runner's own environment is read here, ever.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace sbx {

// PATH, HOME=/workspace, LANG=C.UTF-8, TMPDIR=/tmp, MPLBACKEND=Agg, PYTHONUNBUFFERED=1,
// MPLCONFIGDIR=/etc/matplotlib-cache (the image's pre-built font cache), USER/LOGNAME=sandbox;
// then `extra` (policy env and --env), which may override any of them. Sorted "K=V" strings.
std::vector<std::string> BuildSandboxEnvironment(const std::map<std::string, std::string>& extra);

}  // namespace sbx
