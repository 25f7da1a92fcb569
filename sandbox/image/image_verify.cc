// The safety checks on an image tree: the full walk (VerifyImageTree) and the start-up check.
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

#include "base/str_cat.h"
#include "base/unique_fd.h"
#include "sandbox/fs/fs_beneath.h"
#include "sandbox/image/image.h"

namespace sbx {
namespace {

constexpr int kMaxDepth = 128;
constexpr off_t kMaxMarkerBytes = 64 << 10;
constexpr char kRebuild[] = "or rebuild the image with `sbx image build --force`";

struct DirCloser {
  void operator()(DIR* dir) const { closedir(dir); }
};
using UniqueDir = std::unique_ptr<DIR, DirCloser>;

std::string Octal(mode_t mode) {
  char buffer[16];
  std::snprintf(buffer, sizeof(buffer), "%04o", static_cast<unsigned>(mode & 07777));
  return buffer;
}

bool IsStickyDir(const struct stat& st) { return S_ISDIR(st.st_mode) && (st.st_mode & S_ISVTX); }

// What is wrong with one entry and how to fix it, or "" when it is fine. `rel` is the path
// inside the image ("/" for the root).
std::string CheckEntry(const std::string& rel, const struct stat& st, dev_t root_dev,
                       const VerifyOptions& options) {
  bool workspace = rel == "/workspace";
  if (st.st_uid != options.owner_uid && !(workspace && st.st_uid == options.workspace_uid)) {
    return "is owned by uid " + std::to_string(st.st_uid) + ", expected " +
           std::to_string(options.owner_uid) + (workspace ? " or the sandbox user" : "") +
           "; chown it";
  }
  if (st.st_dev != root_dev) return "has another file system mounted on it; unmount it";
  if (S_ISLNK(st.st_mode)) return "";  // never followed; a link's own mode means nothing
  if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
    return "is a device node; delete it (the sandbox mounts its own /dev)";
  }
  if (S_ISFIFO(st.st_mode)) return "is a fifo; delete it";
  if (S_ISSOCK(st.st_mode)) return "is a socket; delete it";
  if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) return "has an unknown file type; delete it";
  if (st.st_mode & (S_ISUID | S_ISGID)) {
    return std::string("is ") + ((st.st_mode & S_ISUID) ? "setuid" : "setgid") + " (mode " +
           Octal(st.st_mode) + "); chmod ug-s it";
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !IsStickyDir(st)) {
    return "is writable by group or other (mode " + Octal(st.st_mode) + "); chmod go-w it";
  }
  return "";
}

class TreeWalker {
 public:
  TreeWalker(const std::string& image, const VerifyOptions& options)
      : image_(image), options_(options) {}

  Result<void> Walk(UniqueFd root_fd, const struct stat& root_st) {
    root_dev_ = root_st.st_dev;
    Check("/", root_st);
    return WalkDir(std::move(root_fd), "", 0);
  }

  uint64_t entries() const { return entries_; }

  Result<void> Verdict() const {
    if (problems_ == 0) return Ok{};
    std::string more =
        problems_ > 1 ? " (and " + std::to_string(problems_ - 1) + " more problems)" : "";
    return InvalidInput("image " + image_ + " is unsafe: " + first_problem_ + ", " + kRebuild +
                        more);
  }

 private:
  void Check(const std::string& rel, const struct stat& st) {
    ++entries_;
    std::string problem = CheckEntry(rel, st, root_dev_, options_);
    if (problem.empty()) return;
    if (problems_++ == 0) first_problem_ = rel + " " + problem;
  }

  // Walks the directory open as `owned`, whose path in the image is `rel`.
  Result<void> WalkDir(UniqueFd owned, const std::string& rel, int depth) {
    if (depth > kMaxDepth) {
      return InvalidInput("image " + image_ + ": " + rel + " is nested deeper than " +
                          std::to_string(kMaxDepth) + " directories");
    }
    UniqueDir dir(fdopendir(owned.get()));
    if (!dir) return SysError(ErrorCode::kIo, "fdopendir(" + image_ + rel + ")");
    owned.release();
    int fd = dirfd(dir.get());
    while (true) {
      errno = 0;
      struct dirent* entry = readdir(dir.get());
      if (entry == nullptr) {
        if (errno != 0) return SysError(ErrorCode::kIo, "readdir(" + image_ + rel + ")");
        return Ok{};
      }
      std::string name = entry->d_name;
      if (name == "." || name == "..") continue;
      std::string child = rel + "/" + name;
      struct stat st;
      if (fstatat(fd, entry->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        return SysError(ErrorCode::kIo, "fstatat(" + image_ + child + ")");
      }
      Check(child, st);
      if (!S_ISDIR(st.st_mode) || st.st_dev != root_dev_) continue;
      UniqueFd child_fd(openat(fd, entry->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!child_fd) return SysError(ErrorCode::kIo, "openat(" + image_ + child + ")");
      struct stat opened;
      if (fstat(child_fd.get(), &opened) != 0 || opened.st_ino != st.st_ino ||
          opened.st_dev != st.st_dev) {
        return MakeError(ErrorCode::kIo,
                         "image " + image_ + ": " + child + " changed while it was being verified");
      }
      SBX_TRY(WalkDir(std::move(child_fd), child, depth + 1));
    }
  }

  std::string image_;
  VerifyOptions options_;
  dev_t root_dev_ = 0;
  uint64_t entries_ = 0;
  uint64_t problems_ = 0;
  std::string first_problem_;
};

Result<UniqueFd> OpenImageRoot(const std::string& path, struct stat* st) {
  UniqueFd fd(open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) {
    if (errno == ELOOP || errno == ENOTDIR) {
      return InvalidInput("image " + path +
                          " is not a directory (symlinks are not followed; pass the image "
                          "directory itself, as `sbx image path` prints it)");
    }
    return SysError(errno == ENOENT ? ErrorCode::kUnavailable : ErrorCode::kIo,
                    "open(" + path + ")");
  }
  if (fstat(fd.get(), st) != 0) return SysError(ErrorCode::kIo, "fstat(" + path + ")");
  return fd;
}

// The marker's "id", after checking the file is as safe as the rest of the image.
// Whether `text` is the marker as `sbx image build` writes it, naming `id` first: checked on
// every start without a JSON parser, whose code the run would otherwise execute for one field.
bool IsBuiltMarkerFor(std::string_view text, const std::string& id) {
  const std::string head = StrCat({"{\"id\": \"", id, "\""});
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  return text.size() > head.size() && text.starts_with(head) && text.back() == '}';
}

// The id the marker names: `expected` when it is written as `sbx image build` writes it, else
// whatever its "id" field says, parsed as JSON.
Result<std::string> ReadMarkerId(int root_fd, const std::string& path, const std::string& expected,
                                 const VerifyOptions& options) {
  std::string where = path + "/" + kImageMarker;
  UniqueFd fd(openat(root_fd, kImageMarker, O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) {
    return SysError(ErrorCode::kInvalidInput,
                    "open(" + where + "), the marker that `sbx image build` writes; " +
                        "this directory was not built by sbx, or the build did not finish");
  }
  struct stat st;
  if (fstat(fd.get(), &st) != 0) return SysError(ErrorCode::kIo, "fstat(" + where + ")");
  if (!S_ISREG(st.st_mode) || st.st_size > kMaxMarkerBytes || st.st_uid != options.owner_uid ||
      (st.st_mode & (S_IWGRP | S_IWOTH))) {
    return InvalidInput(where + " is not a small regular file owned by uid " +
                        std::to_string(options.owner_uid) + " and writable only by it; " +
                        kRebuild);
  }
  std::string text(static_cast<size_t>(st.st_size), '\0');
  ssize_t got;
  do {
    got = pread(fd.get(), text.data(), text.size(), 0);
  } while (got < 0 && errno == EINTR);
  if (got < 0) return SysError(ErrorCode::kIo, "read(" + where + ")");
  text.resize(static_cast<size_t>(got));
  if (IsBuiltMarkerFor(text, expected)) return expected;
  nlohmann::json marker = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!marker.is_object() || !marker.contains("id") || !marker["id"].is_string()) {
    return InvalidInput(where + ": expected a JSON object with a string \"id\"; " + kRebuild);
  }
  return marker["id"].get<std::string>();
}

}  // namespace

VerifyOptions DefaultVerifyOptions() {
  VerifyOptions options;
  options.owner_uid = geteuid();
  return options;
}

VerifyOptions VerifyOptionsFor(const std::string& path) {
  VerifyOptions options = DefaultVerifyOptions();
  // A rootless user may run root's images: root owns them and the user cannot write them.
  struct stat st;
  if (lstat(path.c_str(), &st) == 0 && st.st_uid == 0) options.owner_uid = 0;
  return options;
}

Result<VerifyStats> VerifyImageTree(const std::string& path, const VerifyOptions& options) {
  auto start = std::chrono::steady_clock::now();
  struct stat st;
  SBX_ASSIGN_OR_RETURN(auto root, OpenImageRoot(path, &st));
  TreeWalker walker(path, options);
  SBX_TRY(walker.Walk(std::move(root), st));
  SBX_TRY(walker.Verdict());
  std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  return VerifyStats{walker.entries(), elapsed.count()};
}

Result<void> VerifyImage(const std::string& path) {
  SBX_TRY(VerifyImageTree(path, VerifyOptionsFor(path)));
  return Ok{};
}

namespace {

Result<void> VerifyResolvedImage(const std::string& path, const char* real, const VerifyOptions& options) {
  // Whoever can write an ancestor can swap the image for another tree after this check.
  SBX_TRY(CheckAncestorsGuarded("image " + path, real, options.owner_uid, "move the image cache elsewhere"));
  struct stat st;
  SBX_ASSIGN_OR_RETURN(auto root, OpenImageRoot(real, &st));
  std::string problem = CheckEntry("/", st, st.st_dev, options);
  if (!problem.empty()) {
    return InvalidInput("image " + path + ": its root directory " + problem + ", " + kRebuild);
  }
  std::string name = std::string(real).substr(std::string(real).rfind('/') + 1);
  SBX_ASSIGN_OR_RETURN(auto id, ReadMarkerId(root.get(), real, name, options));
  if (id != name) {
    return InvalidInput("image " + path + ": its marker says id " + id +
                        " but the directory is named " + name + "; " + kRebuild);
  }
  return Ok{};
}

}  // namespace

Result<void> VerifyImageQuick(const std::string& path, const VerifyOptions& options) {
  char real[PATH_MAX];
  if (realpath(path.c_str(), real) == nullptr) {
    return SysError(errno == ENOENT ? ErrorCode::kUnavailable : ErrorCode::kIo,
                    "realpath(" + path + ")");
  }
  return VerifyResolvedImage(path, real, options);
}

Result<void> VerifyCanonicalImageQuick(const std::string& canonical) {
  return VerifyResolvedImage(canonical, canonical.c_str(), VerifyOptionsFor(canonical));
}

Result<void> VerifyImageQuick(const std::string& path) {
  return VerifyImageQuick(path, VerifyOptionsFor(path));
}

}  // namespace sbx
