// Reading and writing a live workspace's files and archives for the server.
#include "src/server/workspace_files.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "base/unique_fd.h"
#include "base/write_all.h"
#include "sandbox/isolation/userns.h"
#include "sandbox/workspace/workspace_archive.h"

namespace sbx::server {
namespace {

FileOutcome Problem(FileProblem problem, std::string message) { return {problem, std::move(message)}; }

FileOutcome FromOpenError(const Error& error, const std::string& path) {
  switch (error.err_no) {
    case ENOENT:
    case ELOOP:    // a symlink: not served, as if absent
    case ENOTDIR:
    case EXDEV:
      return Problem(FileProblem::kNotFound, "no regular file " + EscapeForMessage(path) +
                                                 " in the workspace (symlinks are never followed)");
    default:
      return Problem(FileProblem::kOther, error.ToString());
  }
}

bool ReadAll(int fd, std::string& bytes) {
  char buffer[1 << 16];
  while (true) {
    ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) return true;
    bytes.append(buffer, static_cast<size_t>(n));
  }
}

}  // namespace

FileOutcome ReadWorkspaceFile(int workspace_fd, const std::string& path, uint64_t max_bytes,
                              std::string& bytes) {
  if (auto valid = SplitRelativePath(path); !valid) {
    return Problem(FileProblem::kInvalidPath, "path " + EscapeForMessage(path) + ": " + valid.error().message);
  }
  auto fd = OpenBeneath(workspace_fd, path, O_RDONLY | O_NONBLOCK);
  if (!fd) return FromOpenError(fd.error(), path);
  struct stat st {};
  if (::fstat(fd->get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return Problem(FileProblem::kNotFound, EscapeForMessage(path) + " is not a regular file");
  }
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    return Problem(FileProblem::kTooLarge, EscapeForMessage(path) + " is over " + std::to_string(max_bytes) +
                                               " bytes; fetch the workspace archive instead");
  }
  bytes.clear();
  if (!ReadAll(fd->get(), bytes) || bytes.size() > max_bytes) {
    return Problem(FileProblem::kOther, "read " + EscapeForMessage(path) + " failed or it grew");
  }
  return {};
}

FileOutcome WriteWorkspaceFile(int workspace_fd, const std::string& path, const std::string& bytes,
                               const FileOwner& owner) {
  auto components = SplitRelativePath(path);
  if (!components) {
    return Problem(FileProblem::kInvalidPath, "path " + EscapeForMessage(path) + ": " + components.error().message);
  }
  std::vector<std::string> created;
  auto parent = OpenParentBeneath(workspace_fd, *components, /*create=*/true, owner, &created);
  if (!parent) return Problem(FileProblem::kConflict, parent.error().ToString());
  UniqueFd fd(::openat(parent->fd.get(), parent->name.c_str(),
                       O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644));
  if (!fd) {
    if (errno == ELOOP || errno == EISDIR || errno == ENXIO) {
      return Problem(FileProblem::kConflict, EscapeForMessage(path) + " exists and is not a regular file");
    }
    return Problem(FileProblem::kOther, SysError(ErrorCode::kIo, "create " + EscapeForMessage(path)).ToString());
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return Problem(FileProblem::kConflict, EscapeForMessage(path) + " exists and is not a regular file");
  }
  if (::fchown(fd.get(), owner.uid, owner.gid) != 0 || !WriteAll(fd.get(), bytes)) {
    return Problem(FileProblem::kOther, SysError(ErrorCode::kIo, "write " + EscapeForMessage(path)).ToString());
  }
  return {};
}

FileOutcome RemoveWorkspaceFile(int workspace_fd, const std::string& path) {
  auto components = SplitRelativePath(path);
  if (!components) {
    return Problem(FileProblem::kInvalidPath, "path " + EscapeForMessage(path) + ": " + components.error().message);
  }
  auto parent = OpenParentBeneath(workspace_fd, *components, /*create=*/false, std::nullopt, nullptr);
  if (!parent) return FromOpenError(parent.error(), path);
  if (::unlinkat(parent->fd.get(), parent->name.c_str(), 0) == 0) return {};
  if (errno == EISDIR) return Problem(FileProblem::kConflict, EscapeForMessage(path) + " is a directory");
  if (errno == ENOENT) return FromOpenError(Error{ErrorCode::kIo, ENOENT, ""}, path);
  return Problem(FileProblem::kOther, SysError(ErrorCode::kIo, "remove " + EscapeForMessage(path)).ToString());
}

FileOutcome PersistWorkspace(const std::string& workspace_dir, std::string& tar) {
  UniqueFd memory(::memfd_create("sbx-workspace-tar", MFD_CLOEXEC));
  if (!memory) return Problem(FileProblem::kOther, SysError(ErrorCode::kIo, "memfd_create").ToString());
  auto written = PersistWorkspaceTar(workspace_dir, memory.get());
  if (!written) return Problem(FileProblem::kTooLarge, written.error().ToString());
  tar.clear();
  if (::lseek(memory.get(), 0, SEEK_SET) != 0 || !ReadAll(memory.get(), tar)) {
    return Problem(FileProblem::kOther, "read the archive back failed");
  }
  return {};
}

FileOutcome HydrateWorkspace(const std::string& tar, const std::string& workspace_dir,
                             const FileOwner& owner) {
  // The reader checks every header before extracting, so it reads the archive twice: a file.
  UniqueFd memory(::memfd_create("sbx-hydrate-tar", MFD_CLOEXEC));
  if (!memory || !WriteAll(memory.get(), tar)) {
    return Problem(FileProblem::kOther, SysError(ErrorCode::kIo, "memfd for the archive").ToString());
  }
  auto restored = RestoreWorkspaceTar(memory.get(), workspace_dir, owner);
  if (restored) return {};
  if (restored.error().err_no == EEXIST) return Problem(FileProblem::kConflict, restored.error().ToString());
  return Problem(FileProblem::kInvalidPath, restored.error().ToString());
}

Result<FileOwner> SandboxFileOwner(Isolation isolation) {
  if (isolation == Isolation::kOuter) return FileOwner{kSandboxId, kSandboxId};
  SBX_ASSIGN_OR_RETURN(auto mapping, ComputeIdMapping(::geteuid(), ::getegid()));
  return FileOwner{mapping.host_uid, mapping.host_gid};
}

}  // namespace sbx::server
