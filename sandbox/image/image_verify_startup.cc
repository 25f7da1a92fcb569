// Cheap per-run checks of the image directory.
#include "sandbox/image/image_verify.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>


#include "sandbox/image/image.h"
#include "sandbox/workspace/workspace.h"

namespace sbx {

Result<OpenImage> OpenVerifiedImage(const std::string& dir) {
  const std::string field = "image " + dir;
  SBX_ASSIGN_OR_RETURN(auto resolved,
                       RequireCanonicalPath(field, dir,
                                            " (an image directory; `sbx image ls` lists the built "
                                            "images, `sbx image build` builds one)"));
  const std::string& canonical = resolved;
  // Ancestors, owner, mode and the build marker (image.h); the walk of every file is
  // `sbx image verify`, too slow for each start.
  if (auto quick = VerifyCanonicalImageQuick(canonical); !quick) return quick.error();
  UniqueFd fd(::open(canonical.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return SysError(ErrorCode::kInvalidInput, field);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return SysError(ErrorCode::kInvalidInput, field);
  // VerifyCanonicalImageQuick has checked the owner; it lets a sticky directory be world-writable,
  // which an image's root never may be.
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
