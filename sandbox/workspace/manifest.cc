// Manifest validation, planning (host metadata only) and staging with undo on failure.
#include "sandbox/workspace/manifest.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <map>
#include <optional>
#include <utility>

#include "base/write_all.h"

namespace sbx {
namespace {

using Kind = ManifestEntry::Kind;

Error EntryError(size_t index, const std::string& destination, const std::string& message) {
  return InvalidInput("manifest entry " + std::to_string(index) + " (\"" +
                      EscapeForMessage(destination) + "\"): " + message);
}

bool IsDirectoryKind(Kind kind) { return kind == Kind::kHostDirectory || kind == Kind::kDirectory; }

// Which paths are files and which directories, to refuse a file that is also used as a
// directory ("a" as a file and "a/b") and two files at one path.
class Claims {
 public:
  Result<void> Claim(const std::vector<std::string>& components, bool is_dir, size_t entry) {
    for (size_t depth = 1; depth <= components.size(); ++depth) {
      const bool leaf = depth == components.size();
      const bool want_dir = !leaf || is_dir;
      auto [it, inserted] = paths_.emplace(JoinPath(components, depth), Claim_{want_dir, entry});
      if (inserted) continue;
      if (it->second.is_dir && want_dir) continue;
      return EntryError(entry, JoinPath(components, components.size()),
                        "\"" + it->first + "\" is also written by entry " +
                            std::to_string(it->second.entry) +
                            (it->second.is_dir || want_dir ? " as a directory" : "") +
                            "; give each file its own path");
    }
    return Ok{};
  }

 private:
  struct Claim_ {
    bool is_dir;
    size_t entry;
  };
  std::map<std::string, Claim_> paths_;
};

struct PlannedFile {
  size_t entry = 0;
  std::vector<std::string> destination;
  const ManifestEntry* source = nullptr;  // kBytes or kFileRange
  int source_fd = -1;                     // kHostFile: the opened file
  int root_fd = -1;                       // a file in a host directory: its root ...
  std::string host_relative;              // ... and its path beneath it
  uint64_t size = 0;
  mode_t mode = 0644;
};

struct Plan {
  std::vector<UniqueFd> open_sources;
  std::vector<std::vector<std::string>> directories;
  std::vector<PlannedFile> files;
  std::vector<std::string> skipped;
  uint64_t bytes = 0;
};

Result<void> PlanHostDirectory(size_t index, const ManifestEntry& entry,
                               const ManifestLimits& limits, Claims* claims, Plan* plan) {
  UniqueFd root(::open(entry.host_path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!root) {
    return SysError(ErrorCode::kInvalidInput, "open host directory " + entry.host_path)
        .Context("manifest entry " + std::to_string(index));
  }
  const int root_fd = root.get();
  plan->open_sources.push_back(std::move(root));
  std::optional<Error> failure;
  auto walked = WalkTree(root_fd, "", limits.max_files + 1, [&](const WalkItem& item) {
    const std::string destination = entry.destination + "/" + item.path;
    auto components = SplitRelativePath(destination);
    if (!components) {
      failure = EntryError(
          index, entry.destination,
          "host file " + entry.host_path + "/" + item.path + ": " + components.error().message);
      return WalkAction::kStop;
    }
    const char* skip_reason = nullptr;
    if (item.other_device) {
      skip_reason = "mount point";
    } else if (S_ISLNK(item.st.st_mode)) {
      skip_reason = "symlink";
    } else if (!S_ISDIR(item.st.st_mode) && !S_ISREG(item.st.st_mode)) {
      skip_reason = "not a regular file";
    }
    if (skip_reason != nullptr) {
      plan->skipped.push_back("entry " + std::to_string(index) + ": " + destination + " (" +
                              skip_reason + ", skipped)");
      return WalkAction::kSkip;
    }
    if (auto claimed = claims->Claim(*components, S_ISDIR(item.st.st_mode), index); !claimed) {
      failure = claimed.error();
      return WalkAction::kStop;
    }
    if (S_ISDIR(item.st.st_mode)) {
      plan->directories.push_back(*components);
    } else {
      PlannedFile file;
      file.entry = index;
      file.destination = *components;
      file.root_fd = root_fd;
      file.host_relative = item.path;
      file.size = static_cast<uint64_t>(item.st.st_size);
      file.mode = NormalizedFileMode(item.st.st_mode);
      plan->files.push_back(std::move(file));
    }
    return WalkAction::kContinue;
  });
  if (failure) return *failure;
  if (!walked) return walked.error().Context("manifest entry " + std::to_string(index));
  if (!*walked) {
    return EntryError(index, entry.destination,
                      "more than " + std::to_string(limits.max_files) +
                          " files in total; stage fewer files or raise the limit");
  }
  return Ok{};
}

// Reads every host source's metadata and decides every path; writes nothing.
Result<Plan> MakePlan(const Manifest& manifest, const ManifestLimits& limits) {
  Plan plan;
  Claims claims;
  const auto& entries = manifest.entries();
  for (size_t i = 0; i < entries.size(); ++i) {
    const ManifestEntry& entry = entries[i];
    auto components = SplitRelativePath(entry.destination);
    if (!components) return EntryError(i, entry.destination, components.error().message);
    SBX_TRY(claims.Claim(*components, IsDirectoryKind(entry.kind), i));
    if (entry.kind == Kind::kDirectory) {
      plan.directories.push_back(*components);
      continue;
    }
    if (entry.kind == Kind::kHostDirectory) {
      plan.directories.push_back(*components);
      SBX_TRY(PlanHostDirectory(i, entry, limits, &claims, &plan));
      continue;
    }
    PlannedFile file;
    file.entry = i;
    file.destination = *components;
    if (entry.kind == Kind::kHostFile) {
      UniqueFd source(
          ::open(entry.host_path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
      struct stat st {};
      if (!source || ::fstat(source.get(), &st) != 0) {
        return SysError(ErrorCode::kInvalidInput, "open host file " + entry.host_path)
            .Context("manifest entry " + std::to_string(i));
      }
      if (!S_ISREG(st.st_mode)) {
        return EntryError(i, entry.destination,
                          entry.host_path + " is not a regular file; use a host directory entry");
      }
      file.source_fd = source.get();
      file.size = static_cast<uint64_t>(st.st_size);
      file.mode = NormalizedFileMode(st.st_mode);
      plan.open_sources.push_back(std::move(source));
    } else {
      file.source = &entry;
      file.size = entry.kind == Kind::kBytes ? entry.bytes.size() : entry.length;
      file.mode = entry.executable ? 0755 : 0644;
    }
    plan.files.push_back(std::move(file));
  }
  if (plan.files.size() + plan.directories.size() > limits.max_files) {
    return InvalidInput("manifest expands to " +
                        std::to_string(plan.files.size() + plan.directories.size()) +
                        " files and directories; the limit is " + std::to_string(limits.max_files));
  }
  for (const PlannedFile& file : plan.files) {
    plan.bytes += file.size;
    if (plan.bytes > limits.max_total_bytes) {
      return EntryError(file.entry, entries[file.entry].destination,
                        "the manifest's files exceed the budget of " +
                            std::to_string(limits.max_total_bytes) + " bytes; stage less");
    }
  }
  return plan;
}

Result<void> WriteFileContents(const PlannedFile& file, int out_fd) {
  if (file.source != nullptr && file.source->kind == Kind::kBytes)
    return WriteAll(out_fd, file.source->bytes);
  if (file.source != nullptr)
    return CopyRange(file.source->source_fd, file.source->offset, file.size, out_fd);
  UniqueFd opened;
  int in_fd = file.source_fd;
  if (in_fd < 0) {
    SBX_ASSIGN_OR_RETURN(
        auto in, OpenBeneath(file.root_fd, file.host_relative, O_RDONLY | O_NONBLOCK | O_NOCTTY));
    opened = std::move(in);
    in_fd = opened.get();
  }
  struct stat st {};
  if (::fstat(in_fd, &st) != 0) return SysError(ErrorCode::kIo, "fstat");
  if (!S_ISREG(st.st_mode) || static_cast<uint64_t>(st.st_size) != file.size)
    return MakeError(ErrorCode::kIo, "host source changed while staging; retry");
  return CopyRange(in_fd, 0, file.size, out_fd);
}

// Removes what staging created, newest first (files before the directories holding them).
void Undo(int workspace_fd, const std::vector<std::string>& created) {
  for (auto it = created.rbegin(); it != created.rend(); ++it) {
    auto components = SplitRelativePath(*it);
    if (!components) continue;
    auto parent = OpenParentBeneath(workspace_fd, *components, false, std::nullopt, nullptr);
    if (!parent) continue;
    if (::unlinkat(parent->fd.get(), parent->name.c_str(), 0) != 0 && errno == EISDIR)
      (void)::unlinkat(parent->fd.get(), parent->name.c_str(), AT_REMOVEDIR);
  }
}

Result<void> Execute(int workspace_fd, const Plan& plan, const FileOwner& owner,
                     const Manifest& manifest, StageReport* report,
                     std::vector<std::string>* created) {
  for (const auto& directory : plan.directories) {
    // A trailing placeholder makes OpenParentBeneath create every component of `directory`.
    std::vector<std::string> with_placeholder = directory;
    with_placeholder.emplace_back();
    SBX_TRY(OpenParentBeneath(workspace_fd, with_placeholder, true, owner, created));
  }
  for (const PlannedFile& file : plan.files) {
    const std::string path = JoinPath(file.destination, file.destination.size());
    const std::string context =
        "manifest entry " + std::to_string(file.entry) + " (\"" + path + "\")";
    auto parent = OpenParentBeneath(workspace_fd, file.destination, true, owner, created);
    if (!parent) return parent.error().Context(context);
    UniqueFd out(::openat(parent->fd.get(), parent->name.c_str(),
                          O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!out && errno == EEXIST) {
      Error exists = EntryError(file.entry, manifest.entries()[file.entry].destination,
                                path + " already exists in the workspace; remove it or choose another path");
      exists.err_no = EEXIST;  // callers tell a conflict from a bad entry by it
      return exists;
    }
    if (!out) return SysError(ErrorCode::kIo, "create " + path).Context(context);
    created->push_back(path);
    SBX_TRY_CTX(WriteFileContents(file, out.get()), context);
    if (::fchmod(out.get(), file.mode) != 0) return SysError(ErrorCode::kIo, "fchmod " + path);
    if (::fchown(out.get(), owner.uid, owner.gid) != 0)
      return SysError(ErrorCode::kIo, "fchown " + path);
    report->bytes += file.size;
    ++report->files;
  }
  return Ok{};
}

}  // namespace

Manifest& Manifest::AddBytes(std::string destination, std::string bytes, bool executable) {
  ManifestEntry entry;
  entry.kind = Kind::kBytes;
  entry.destination = std::move(destination);
  entry.bytes = std::move(bytes);
  entry.executable = executable;
  entries_.push_back(std::move(entry));
  return *this;
}

Manifest& Manifest::AddHostFile(std::string destination, std::string host_path) {
  ManifestEntry entry;
  entry.kind = Kind::kHostFile;
  entry.destination = std::move(destination);
  entry.host_path = std::move(host_path);
  entries_.push_back(std::move(entry));
  return *this;
}

Manifest& Manifest::AddHostDirectory(std::string destination, std::string host_path) {
  AddHostFile(std::move(destination), std::move(host_path));
  entries_.back().kind = Kind::kHostDirectory;
  return *this;
}

Manifest& Manifest::AddDirectory(std::string destination) {
  ManifestEntry entry;
  entry.kind = Kind::kDirectory;
  entry.destination = std::move(destination);
  entries_.push_back(std::move(entry));
  return *this;
}

Manifest& Manifest::AddFileRange(std::string destination, int source_fd, uint64_t offset,
                                 uint64_t length, bool executable) {
  ManifestEntry entry;
  entry.kind = Kind::kFileRange;
  entry.destination = std::move(destination);
  entry.source_fd = source_fd;
  entry.offset = offset;
  entry.length = length;
  entry.executable = executable;
  entries_.push_back(std::move(entry));
  return *this;
}

Result<void> ValidateManifest(const Manifest& manifest, const ManifestLimits& limits) {
  const auto& entries = manifest.entries();
  if (entries.size() > limits.max_entries) {
    return InvalidInput("manifest has " + std::to_string(entries.size()) +
                        " entries; the limit is " + std::to_string(limits.max_entries) +
                        "; stage a directory instead of many files");
  }
  Claims claims;
  std::map<std::string, size_t> seen;
  uint64_t inline_bytes = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    const ManifestEntry& entry = entries[i];
    auto components = SplitRelativePath(entry.destination);
    if (!components) return EntryError(i, entry.destination, components.error().message);
    if (auto [it, inserted] = seen.emplace(entry.destination, i); !inserted) {
      return EntryError(
          i, entry.destination,
          "same destination as entry " + std::to_string(it->second) + "; remove one of them");
    }
    SBX_TRY(claims.Claim(*components, IsDirectoryKind(entry.kind), i));
    const bool from_host = entry.kind == Kind::kHostFile || entry.kind == Kind::kHostDirectory;
    if (from_host && (entry.host_path.empty() || entry.host_path[0] != '/'))
      return EntryError(i, entry.destination, "host path must be absolute");
    if (from_host && entry.host_path.find('\0') != std::string::npos)
      return EntryError(i, entry.destination, "host path contains NUL");
    if (entry.kind == Kind::kFileRange && entry.source_fd < 0)
      return EntryError(i, entry.destination, "no source file descriptor");
    inline_bytes += entry.kind == Kind::kBytes ? entry.bytes.size() : 0;
    if (inline_bytes > limits.max_total_bytes) {
      return EntryError(i, entry.destination,
                        "inline bytes exceed the budget of " +
                            std::to_string(limits.max_total_bytes) + " bytes; stage less");
    }
  }
  return Ok{};
}

Result<StageReport> StageManifestAt(int workspace_fd, const Manifest& manifest,
                                    const FileOwner& owner, const ManifestLimits& limits) {
  SBX_TRY(ValidateManifest(manifest, limits));
  SBX_ASSIGN_OR_RETURN(auto plan, MakePlan(manifest, limits));
  StageReport report;
  report.skipped = plan.skipped;
  std::vector<std::string> created;
  auto done = Execute(workspace_fd, plan, owner, manifest, &report, &created);
  if (!done) {
    Undo(workspace_fd, created);
    return done.error().Context("staging the manifest (nothing was left behind)");
  }
  report.directories = created.size() - report.files;
  return report;
}

Result<StageReport> StageManifest(const std::string& workspace_dir, const Manifest& manifest,
                                  const FileOwner& owner, const ManifestLimits& limits) {
  UniqueFd workspace(::open(workspace_dir.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!workspace) return SysError(ErrorCode::kInvalidInput, "open workspace " + workspace_dir);
  return StageManifestAt(workspace.get(), manifest, owner, limits);
}

}  // namespace sbx
