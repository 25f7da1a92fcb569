// The team file (`sbx agent --team FILE`): JSON read as strictly as a policy.
// Unknown or duplicate keys, wrong types and broken team rules (ValidateTeam)
// are errors that name the field and the fix, before anything runs. The format
// is in docs/teams.md.
#pragma once

#include <string>

#include "base/error.h"
#include "src/agent/team.h"

namespace sbx::agent {

// `base_dir` resolves relative scripted_model paths (the file's own directory).
Result<TeamSpec> ParseTeam(const std::string& text, const std::string& base_dir);
Result<TeamSpec> LoadTeamFile(const std::string& path);

}  // namespace sbx::agent
