// The image cache (where built root filesystems live) and the checks an image must pass
// before sbx mounts it as the read-only lower layer of a sandbox's overlay.
//
// Usage:
//   1. `sbx image build` runs rootfs/build-image.sh, which fills ImageCacheDir():
//        <cache>/<id>/              the root tree; <id>/.sbx-image.json is its marker
//        <cache>/<id>.json          metadata (recipe id, package versions, size, file count)
//        <cache>/default            symlink to the image built from the current recipe
//        <cache>/name-NAME          symlink to a variant (`sbx image build --name NAME --add PKG`)
//        <cache>/.lock              flock held by builds and RemoveImage
//   2. At every start-up the launcher calls FindDefaultImage() (or FindImage(id)), then
//      VerifyImageQuick(info.path): a handful of syscalls, cheap enough to always run.
//   3. `sbx image verify` calls VerifyImage(path): a full walk of the tree (about 20k
//      entries), never following symlinks.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "base/error.h"

namespace sbx {

// One image in the cache. Fields other than id and path come from <id>.json and are zero or
// empty when the metadata is missing or unreadable.
struct ImageInfo {
  std::string id;    // short sha256 of the recipe files and the installed package versions
  std::string path;  // absolute path of the root directory
  std::string recipe_id;
  std::string created;  // ISO 8601, UTC
  uint64_t size_bytes = 0;
  uint64_t file_count = 0;
  uint64_t build_seconds = 0;
  bool is_default = false;
  std::vector<std::string> names;           // the variant names pointing at it
  std::vector<std::string> added_packages;  // a variant's packages on top of the recipe
};

// A variant's name: 1-32 of a-z, 0-9 and '-', starting with a letter and never all hex digits
// (so it cannot be read as an image id). `default` names the default image. The error names
// the rule.
Result<void> ValidateImageName(const std::string& name);

// What `--image` takes, resolved to an image directory: empty or `default` for the default
// image, an id or unambiguous id prefix, a name for a variant, anything with a '/' for a
// directory (as `./dir`). The directory itself is checked later by the launcher
// (VerifyImageQuick).
Result<std::string> ResolveImageDir(const std::string& image);
Result<std::string> ResolveImageDirIn(const std::string& cache_dir, const std::string& image);

// The cache directory for the calling user: /var/cache/sbx/images as root,
// $XDG_CACHE_HOME/sbx/images (when absolute) or $HOME/.cache/sbx/images otherwise.
Result<std::string> ImageCacheDir();
// The same decision with its inputs made explicit (for tests); null pointers mean unset.
Result<std::string> ImageCacheDirFor(uid_t uid, const char* xdg_cache_home, const char* home);

// The image `default` points at. When there is none the error says to run `sbx image build`.
// Only id, path and is_default are filled (every run calls this; the metadata parse is for
// ListImages/FindImage).
Result<ImageInfo> FindDefaultImage();
Result<ImageInfo> FindDefaultImageIn(const std::string& cache_dir);
// The image with this id (or an unambiguous id prefix) or this name in the cache.
Result<ImageInfo> FindImage(const std::string& id_or_name);
Result<ImageInfo> FindImageIn(const std::string& cache_dir, const std::string& id_or_name);

// Every complete image in the cache (in-progress builds are skipped), oldest first.
Result<std::vector<ImageInfo>> ListImages();
Result<std::vector<ImageInfo>> ListImagesIn(const std::string& cache_dir);

// Deletes an image, its metadata and any pointers to it, under the cache lock so it cannot
// race a build. The tree is renamed away first, so it disappears at once.
Result<void> RemoveImage(const std::string& id);
Result<void> RemoveImageIn(const std::string& cache_dir, const std::string& id);

// Who may own what in an image.
struct VerifyOptions {
  uid_t owner_uid = 0;         // root, or the current uid for a rootless build
  uid_t workspace_uid = 1000;  // the sandbox user; may own /workspace and nothing else
};
// Root, or the current uid when not root.
VerifyOptions DefaultVerifyOptions();
// For an existing image: root when root owns its directory (any user may run root's images),
// else the current uid.
VerifyOptions VerifyOptionsFor(const std::string& path);

struct VerifyStats {
  uint64_t entries = 0;  // everything looked at, the root included
  double seconds = 0;
};

// The full check. Every entry must be owned by options.owner_uid (only /workspace may be
// owned by workspace_uid instead), nothing may be writable by group or other except sticky
// directories (/tmp), and there may be no setuid/setgid bits, device nodes, sockets or
// fifos. Symlinks are never followed (openat/fstatat with O_NOFOLLOW). The error names the
// first offending path inside the image, how many more there are, and the fix.
Result<VerifyStats> VerifyImageTree(const std::string& path, const VerifyOptions& options);
Result<void> VerifyImage(const std::string& path);

// The start-up check: the root directory and each of its ancestors are owned by root or the
// owner and not writable by others (sticky directories excepted), and the marker file
// `.sbx-image.json` written at build time is present, safe and names the directory's id.
Result<void> VerifyImageQuick(const std::string& path, const VerifyOptions& options);
Result<void> VerifyImageQuick(const std::string& path);
// The same for a path already canonical (realpath's result): a run's start has resolved it
// once, and each resolution is a readlink per component.
Result<void> VerifyCanonicalImageQuick(const std::string& canonical);

// The marker's file name at the root of every image.
inline constexpr char kImageMarker[] = ".sbx-image.json";

}  // namespace sbx
