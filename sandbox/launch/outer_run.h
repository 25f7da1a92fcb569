// The parent's side of an outer-isolation run (Isolation::kOuter; launcher.h, steps O1-O3):
// who may run one, the run's private area on the container's file system, the program's
// environment, and what the result says enforced each layer.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "sandbox/cgroup/cgroup.h"
#include "sandbox/launch/run_result.h"
#include "sandbox/policy/policy.h"
#include "sandbox/workspace/workspace.h"

namespace sbx {

// The program runs as uid/gid 1000, an identity other than sbx's, so it can neither signal nor
// trace sbx or the run's init: that needs sbx to hold CAP_SETUID, CAP_SETGID, CAP_SETPCAP and
// CAP_KILL (root in the container) and to run as another uid. The init finds the program's tree
// through /proc/<pid>/task/<tid>/children, which the kernel must provide. An error names the
// field (isolation) and the fix.
Result<void> CheckOuterRunner();

// The Python session driver an outer session runs from the container's own root file system
// (`field` names it in errors, as --session-driver): a regular file that uid 1000 can read
// and that only root can replace: owned by root, not writable by group or other, and every
// ancestor directory the same (CheckAncestorsGuarded). A session's code runs as uid 1000 on
// that file system, so a driver it could write would run its code in the next session.
Result<void> CheckOuterSessionDriver(const std::string& path, const std::string& field);

// A fresh /tmp/sbx-outer-<pid>-XXXXXX (first removing those of runners that are gone), 0700
// and owned by uid/gid 1000, with tmp/ in it (the program's
// TMPDIR) and, when asked, workspace/ (the run's workspace when none was given). The destructor
// removes the whole tree, never following a symlink the program left there.
class OuterArea {
 public:
  static Result<OuterArea> Create(bool with_workspace);
  OuterArea(OuterArea&& other) noexcept;
  OuterArea& operator=(OuterArea&&) = delete;
  ~OuterArea();

  const std::string& tmp_dir() const { return tmp_dir_; }
  // Null unless Create was asked for one.
  const Workspace* workspace() const { return workspace_ ? &*workspace_ : nullptr; }
  // Hands the workspace to a caller that keeps it across runs (a session executor); the
  // destructor still removes it with the rest of the area.
  Workspace ReleaseWorkspace() { return std::move(*workspace_); }

 private:
  OuterArea() = default;
  std::string path_;
  std::string tmp_dir_;
  UniqueFd lock_;  // flock held while the area is in use
  std::optional<Workspace> workspace_;
};

// The built-in environment (environment.h) with HOME at the workspace, TMPDIR in the private
// area and matplotlib's cache there too; then the policy's entries, which win.
std::vector<std::string> OuterEnvironment(const std::map<std::string, std::string>& policy_env,
                                          const std::string& home, const std::string& tmp_dir);

}  // namespace sbx
