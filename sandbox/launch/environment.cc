// Builds the sandbox environment from the allowlist and the policy's entries.
#include "sandbox/launch/environment.h"

namespace sbx {

std::vector<std::string> BuildSandboxEnvironment(const std::map<std::string, std::string>& extra) {
  std::map<std::string, std::string> env = {
      {"PATH", "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"},
      {"HOME", "/workspace"},
      {"LANG", "C.UTF-8"},
      {"TMPDIR", "/tmp"},
      {"MPLBACKEND", "Agg"},
      {"MPLCONFIGDIR", "/etc/matplotlib-cache"},
      {"PYTHONUNBUFFERED", "1"},
      {"USER", "sandbox"},
      {"LOGNAME", "sandbox"},
  };
  for (const auto& [name, value] : extra) env[name] = value;
  std::vector<std::string> out;
  out.reserve(env.size());
  for (const auto& [name, value] : env) out.push_back(name + "=" + value);
  return out;
}

}  // namespace sbx
