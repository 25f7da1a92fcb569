// What an environment variable's name may be: the policy's env, an inject rule's placeholder
// variable and its `env:NAME` secret source all take the same names.
#pragma once

#include <cctype>
#include <string_view>

namespace sbx {

// NAME matches [A-Za-z_][A-Za-z0-9_]*.
inline bool IsEnvName(std::string_view name) {
  bool name_ok =
      !name.empty() && (std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_');
  for (char c : name)
    name_ok = name_ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
  return name_ok;
}

}  // namespace sbx
