// Cheap per-run checks of the image directory.
#include "sandbox/image_check.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include "sandbox/image.h"

namespace sbx {

Result<OpenImage> OpenVerifiedImage(const std::string& dir) {
  const std::string field = "image " + dir;
  if (dir.empty() || dir[0] != '/') return InvalidInput(field + ": use an absolute path");
  char* resolved = ::realpath(dir.c_str(), nullptr);
  if (resolved == nullptr) {
    return SysError(ErrorCode::kInvalidInput, field + " (build the default image with `sbx image build`)");
  }
  std::string canonical(resolved);
  std::free(resolved);
  if (canonical != dir && canonical + "/" != dir)
    return InvalidInput(field + ": resolves to " + canonical + "; pass the real directory");
  // Ancestors, owner, mode and the build marker (image.h); the walk of every file is
  // `sbx image verify`, too slow for each start.
  if (auto quick = VerifyImageQuick(canonical); !quick) return quick.error();
  UniqueFd fd(::open(canonical.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return SysError(ErrorCode::kInvalidInput, field);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return SysError(ErrorCode::kInvalidInput, field);
  if (st.st_uid != 0 && st.st_uid != ::geteuid()) {
    return InvalidInput(field + ": owned by uid " + std::to_string(st.st_uid) +
                        "; an image must belong to root or to you");
  }
  if (st.st_mode & (S_IWGRP | S_IWOTH))
    return InvalidInput(field + ": writable by group or others; chmod go-w it or rebuild it");
  for (const char* mount_point : {"workspace", "proc", "dev", "tmp", "usr"}) {
    struct stat sub {};
    if (::fstatat(fd.get(), mount_point, &sub, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(sub.st_mode)) {
      return InvalidInput(field + ": has no /" + mount_point +
                          " directory; it is not an sbx image (build one with `sbx image build`)");
    }
  }
  return OpenImage{canonical, std::move(fd)};
}

}  // namespace sbx
