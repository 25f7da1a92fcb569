// Copy-out of requested workspace paths: request checks, the fd-relative walk, safe writes.
#include "sandbox/workspace/copy_out.h"

#include <dirent.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <set>

#include "base/unique_fd.h"
#include "sandbox/fs/fs_beneath.h"

namespace sbx {
namespace {

bool IsPattern(const std::string& name) { return name.find_first_of("*?[") != std::string::npos; }

class Copier {
 public:
  Copier(int workspace_fd, int dest_fd, const CopyOutBudgets& budgets)
      : workspace_fd_(workspace_fd), dest_fd_(dest_fd), budgets_(budgets) {
    visits_left_ = budgets.max_visits;
  }

  // Copies one validated request; false once a budget has ended the whole copy.
  bool CopyRequest(const std::string& request, const std::vector<std::string>& components) {
    UniqueFd parent;
    if (components.size() == 1) {
      parent.reset(::fcntl(workspace_fd_, F_DUPFD_CLOEXEC, 3));
    } else {
      auto opened = OpenBeneath(workspace_fd_, JoinPath(components, components.size() - 1),
                                O_PATH | O_DIRECTORY);
      if (!opened) {
        const bool symlink = opened.error().err_no == ELOOP || opened.error().err_no == ENOTDIR;
        Record(request, 0, symlink ? CopyStatus::kSkippedSymlink : CopyStatus::kNotFound,
               opened.error().ToString());
        return true;
      }
      parent = std::move(*opened);
    }
    struct stat root {};
    if (::fstat(workspace_fd_, &root) != 0) return true;
    workspace_dev_ = root.st_dev;
    const std::string& last = components.back();
    const std::string prefix =
        components.size() == 1 ? "" : JoinPath(components, components.size() - 1) + "/";
    std::vector<std::string> names;
    if (IsPattern(last)) {
      names = Match(parent.get(), last, request);
      if (names.empty()) Record(request, 0, CopyStatus::kNotFound, "no entry matches the pattern");
    } else {
      names.push_back(last);
    }
    for (const std::string& name : names) {
      struct stat st {};
      if (::fstatat(parent.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
        Record(prefix + name, 0, CopyStatus::kNotFound, std::strerror(errno));
        continue;
      }
      if (!Visit(parent.get(), name, prefix + name, st, components.size())) return false;
    }
    return true;
  }

  CopyOutResult Take() { return std::move(result_); }

 private:
  std::vector<std::string> Match(int parent_fd, const std::string& pattern,
                                 const std::string& request) {
    std::vector<std::string> names;
    int list_fd = ::openat(parent_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR* dir = list_fd < 0 ? nullptr : ::fdopendir(list_fd);
    if (dir == nullptr) {
      if (list_fd >= 0) ::close(list_fd);
      return names;
    }
    while (struct dirent* entry = ::readdir(dir)) {
      if (visits_left_ == 0) break;
      --visits_left_;
      if (std::strcmp(entry->d_name, ".") == 0 || std::strcmp(entry->d_name, "..") == 0) continue;
      if (::fnmatch(pattern.c_str(), entry->d_name, FNM_PERIOD) == 0)
        names.emplace_back(entry->d_name);
    }
    ::closedir(dir);
    std::sort(names.begin(), names.end());
    if (names.size() > budgets_.max_glob_matches) {
      Record(request, 0, CopyStatus::kOverBudget,
             std::to_string(names.size()) + " matches; only the first " +
                 std::to_string(budgets_.max_glob_matches) + " are copied");
      names.resize(budgets_.max_glob_matches);
      result_.truncated = true;
    }
    return names;
  }

  // Handles one entry; false when a budget ends the whole copy.
  bool Visit(int parent_fd, const std::string& name, const std::string& path, const struct stat& st,
             size_t depth) {
    const auto size = static_cast<uint64_t>(st.st_size);
    if (depth > budgets_.max_depth) {
      Record(path, size, CopyStatus::kTooDeep, "deeper than " + std::to_string(budgets_.max_depth));
    } else if (!SplitRelativePath(path)) {
      Record(path, size, CopyStatus::kSkippedBadName, "name has control characters or is too long");
    } else if (st.st_dev != workspace_dev_) {
      Record(path, size, CopyStatus::kSkippedSpecial, "a mount point");
    } else if (S_ISLNK(st.st_mode)) {
      Record(path, size, CopyStatus::kSkippedSymlink, "symlinks are never followed");
    } else if (S_ISREG(st.st_mode)) {
      return CopyFile(parent_fd, name, path, st);
    } else if (S_ISDIR(st.st_mode)) {
      return CopyDirectory(parent_fd, name, path, depth);
    } else {
      Record(path, size, CopyStatus::kSkippedSpecial, "not a regular file");
    }
    return true;
  }

  bool CopyDirectory(int parent_fd, const std::string& name, const std::string& path,
                     size_t depth) {
    UniqueFd dir(
        ::openat(parent_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!dir) {
      Record(path, 0, CopyStatus::kNotFound, std::strerror(errno));
      return true;
    }
    bool keep_going = true;
    auto walked = WalkTree(
        dir.get(), path, std::min(visits_left_, SIZE_MAX - 1) + 1, [&](const WalkItem& item) {
          if (visits_left_ == 0) {
            Record(item.path, 0, CopyStatus::kOverBudget, "visit budget exhausted");
            result_.truncated = true;
            keep_going = false;
            return WalkAction::kStop;
          }
          --visits_left_;
          // Directories are handled here (WalkTree descends); everything else by Visit.
          if (S_ISDIR(item.st.st_mode) && !item.other_device && SplitRelativePath(item.path) &&
              depth + item.depth <= budgets_.max_depth) {
            return WalkAction::kContinue;
          }
          keep_going = Visit(item.parent_fd, item.name, item.path, item.st, depth + item.depth);
          return keep_going ? WalkAction::kSkip : WalkAction::kStop;
        });
    if (!walked) Record(path, 0, CopyStatus::kNotFound, walked.error().ToString());
    return keep_going;
  }

  bool CopyFile(int parent_fd, const std::string& name, const std::string& path,
                const struct stat& st) {
    const auto size = static_cast<uint64_t>(st.st_size);
    if (copied_.count(path) != 0) return true;  // requests overlap ("out" and "out/*.png")
    if (result_.files >= budgets_.max_files) {
      Record(path, size, CopyStatus::kOverBudget,
             "file budget of " + std::to_string(budgets_.max_files) + " reached");
      result_.truncated = true;
      return false;
    }
    if (size > budgets_.max_bytes - result_.bytes) {
      Record(path, size, CopyStatus::kOverBudget,
             std::to_string(size) + " bytes, " +
                 std::to_string(budgets_.max_bytes - result_.bytes) + " left in the budget");
      return true;
    }
    // O_NONBLOCK: were this a FIFO after all, open must not wait for a writer.
    UniqueFd in(::openat(parent_fd, name.c_str(),
                         O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
    struct stat now {};
    if (!in || ::fstat(in.get(), &now) != 0 || !S_ISREG(now.st_mode) || now.st_ino != st.st_ino ||
        now.st_size != st.st_size) {
      Record(path, size, CopyStatus::kSkippedSpecial, "changed while copying");
      return true;
    }
    if (auto written = WriteDestination(path, in.get(), size, NormalizedFileMode(st.st_mode));
        !written) {
      Record(path, size, CopyStatus::kDestinationError, written.error().ToString());
      return true;
    }
    result_.bytes += size;
    ++result_.files;
    copied_.insert(path);
    Record(path, size, CopyStatus::kCopied, "");
    return true;
  }

  Result<void> WriteDestination(const std::string& path, int in_fd, uint64_t size, mode_t mode) {
    for (const std::string& reserved : budgets_.reserved) {
      if (::fnmatch(reserved.c_str(), path.c_str(), FNM_PATHNAME) == 0) {
        return MakeError(ErrorCode::kInvalidInput,
                         "the destination " + EscapeForMessage(path) + " is the run's own record (" +
                             reserved + "), never replaced by an output; rename the output");
      }
    }
    SBX_ASSIGN_OR_RETURN(auto components, SplitRelativePath(path));
    SBX_ASSIGN_OR_RETURN(auto parent,
                         OpenParentBeneath(dest_fd_, components, true, std::nullopt, nullptr));
    std::string temp;
    UniqueFd out;
    for (int attempt = 0; attempt < 100 && !out; ++attempt) {
      temp = ".sbx-copy-" + std::to_string(::getpid()) + "-" + std::to_string(temp_counter_++);
      out.reset(::openat(parent.fd.get(), temp.c_str(),
                         O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
      if (!out && errno != EEXIST) return SysError(ErrorCode::kIo, "create " + temp);
    }
    if (!out) return MakeError(ErrorCode::kIo, "no free temporary name");
    Result<void> done = CopyRange(in_fd, 0, size, out.get());
    if (done && ::fchmod(out.get(), mode) != 0) done = SysError(ErrorCode::kIo, "fchmod");
    if (done &&
        ::renameat(parent.fd.get(), temp.c_str(), parent.fd.get(), parent.name.c_str()) != 0)
      done = SysError(ErrorCode::kIo, "rename over " + path);
    if (!done) (void)::unlinkat(parent.fd.get(), temp.c_str(), 0);
    return done;
  }

  void Record(const std::string& path, uint64_t size, CopyStatus status, std::string detail) {
    if (status != CopyStatus::kCopied && listed_skips_++ >= kMaxListedSkips) {
      ++result_.unlisted;
      return;
    }
    result_.entries.push_back(CopiedEntry{path, size, status, std::move(detail)});
  }

  int workspace_fd_;
  int dest_fd_;
  CopyOutBudgets budgets_;
  dev_t workspace_dev_ = 0;
  size_t visits_left_ = 0;
  uint64_t temp_counter_ = 0;
  size_t listed_skips_ = 0;
  std::set<std::string> copied_;
  CopyOutResult result_;
};

}  // namespace

const char* CopyStatusName(CopyStatus status) {
  switch (status) {
    case CopyStatus::kCopied:
      return "copied";
    case CopyStatus::kSkippedSymlink:
      return "skipped_symlink";
    case CopyStatus::kSkippedSpecial:
      return "skipped_special";
    case CopyStatus::kSkippedBadName:
      return "skipped_bad_name";
    case CopyStatus::kOverBudget:
      return "over_budget";
    case CopyStatus::kTooDeep:
      return "too_deep";
    case CopyStatus::kNotFound:
      return "not_found";
    case CopyStatus::kDestinationError:
      return "destination_error";
  }
  return "unknown";
}

Result<CopyOutResult> CopyOutAt(int workspace_fd, const std::vector<std::string>& requests,
                                int dest_fd, const CopyOutBudgets& budgets) {
  std::vector<std::vector<std::string>> parsed;
  for (size_t i = 0; i < requests.size(); ++i) {
    auto components = SplitRelativePath(requests[i]);
    if (!components) {
      return components.error().Context("copy-out request " + std::to_string(i) + " (\"" +
                                        EscapeForMessage(requests[i]) + "\")");
    }
    for (size_t c = 0; c + 1 < components->size(); ++c) {
      if (IsPattern((*components)[c])) {
        return InvalidInput("copy-out request " + std::to_string(i) + " (\"" +
                            EscapeForMessage(requests[i]) +
                            "\"): only the last component may be a pattern");
      }
    }
    parsed.push_back(std::move(*components));
  }
  Copier copier(workspace_fd, dest_fd, budgets);
  for (size_t i = 0; i < requests.size(); ++i) {
    if (!copier.CopyRequest(requests[i], parsed[i])) break;
  }
  return copier.Take();
}

Result<CopyOutResult> CopyOut(const std::string& workspace_dir,
                              const std::vector<std::string>& requests,
                              const std::string& host_dest_dir, const CopyOutBudgets& budgets) {
  UniqueFd workspace(::open(workspace_dir.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!workspace) return SysError(ErrorCode::kInvalidInput, "open workspace " + workspace_dir);
  UniqueFd dest(::open(host_dest_dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!dest) return SysError(ErrorCode::kInvalidInput, "open destination " + host_dest_dir);
  return CopyOutAt(workspace.get(), requests, dest.get(), budgets);
}

}  // namespace sbx
