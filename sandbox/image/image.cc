// The image cache: where images live, finding and listing them, and removing one.
#include "sandbox/image/image.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/remove_tree.h"
#include "base/small_file.h"
#include "base/unique_fd.h"

namespace sbx {
namespace {

constexpr char kBuildHint[] = "run `sbx image build` to build it (about a minute)";

constexpr char kNamePrefix[] = "name-";

bool IsHexOnly(const std::string& name) {
  return std::all_of(name.begin(), name.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

bool IsImageId(const std::string& name) { return !name.empty() && name.size() <= 64 && IsHexOnly(name); }

// The names in `dir` but "." and ".."; kUnavailable when it does not exist.
Result<std::vector<std::string>> EntryNames(const std::string& dir) {
  DIR* stream = ::opendir(dir.c_str());
  if (stream == nullptr) {
    return SysError(errno == ENOENT ? ErrorCode::kUnavailable : ErrorCode::kIo, "opendir(" + dir + ")");
  }
  std::vector<std::string> names;
  while (const struct dirent* entry = ::readdir(stream)) {
    const std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  ::closedir(stream);
  return names;
}

std::string ReadLink(const std::string& path) {
  char buffer[256];
  ssize_t n = readlink(path.c_str(), buffer, sizeof(buffer));
  return n > 0 ? std::string(buffer, static_cast<size_t>(n)) : "";
}

// Fills the optional fields from <cache>/<id>.json; a missing or malformed file leaves them.
void ReadMetadata(const std::string& cache_dir, ImageInfo* info) {
  auto text = ReadSmallFile(cache_dir + "/" + info->id + ".json");
  if (!text) return;
  nlohmann::json meta = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (!meta.is_object()) return;
  auto text_field = [&](const char* key, std::string* out) {
    if (meta.contains(key) && meta[key].is_string()) *out = meta[key].get<std::string>();
  };
  auto number_field = [&](const char* key, uint64_t* out) {
    if (meta.contains(key) && meta[key].is_number_unsigned()) *out = meta[key].get<uint64_t>();
  };
  if (meta.contains("added_packages") && meta["added_packages"].is_array()) {
    for (const auto& package : meta["added_packages"]) {
      if (package.is_string()) info->added_packages.push_back(package.get<std::string>());
    }
  }
  text_field("recipe_id", &info->recipe_id);
  text_field("created", &info->created);
  number_field("size_bytes", &info->size_bytes);
  number_field("file_count", &info->file_count);
  number_field("build_seconds", &info->build_seconds);
}

ImageInfo MakeInfo(const std::string& cache_dir, const std::string& id) {
  ImageInfo info;
  info.id = id;
  info.path = cache_dir + "/" + id;
  info.is_default = ReadLink(cache_dir + "/default") == id;
  if (auto entries = EntryNames(cache_dir)) {
    for (const std::string& name : *entries) {
      if (name.rfind(kNamePrefix, 0) == 0 && ReadLink(cache_dir + "/" + name) == id)
        info.names.push_back(name.substr(sizeof(kNamePrefix) - 1));
    }
  }
  std::sort(info.names.begin(), info.names.end());
  ReadMetadata(cache_dir, &info);
  return info;
}

// The image a name-NAME pointer names; the error says how to build it.
Result<ImageInfo> FindNamedImageIn(const std::string& cache_dir, const std::string& name) {
  SBX_TRY(ValidateImageName(name));
  std::string id = ReadLink(cache_dir + "/" + kNamePrefix + name);
  struct stat st;
  if (id.empty() || !IsImageId(id) || lstat((cache_dir + "/" + id).c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return InvalidInput("no image named '" + name + "' in " + cache_dir +
                        "; build it with `sbx image build --name " + name +
                        " --add PKG...` (`sbx image ls` lists the names; a directory is given as ./DIR)");
  }
  return MakeInfo(cache_dir, id);
}

// Holds <cache>/.lock, the lock build-image.sh takes for a whole build.
// A container seldom has mmdebstrap or a package mirror: there the image comes from the host.
std::string MountHint(const std::string& cache_dir) {
  return "; in a container, bind a cache built on the host read-only instead (podman/docker "
         "`-v /var/cache/sbx/images:" + cache_dir + ":ro`; Kubernetes: a read-only volume at " +
         cache_dir + ")";
}

Result<UniqueFd> LockCache(const std::string& cache_dir) {
  std::string path = cache_dir + "/.lock";
  UniqueFd fd(open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644));
  if (!fd) return SysError(ErrorCode::kIo, "open(" + path + ")");
  int rc;
  do {
    rc = flock(fd.get(), LOCK_EX);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) return SysError(ErrorCode::kIo, "flock(" + path + ")");
  return fd;
}

}  // namespace

Result<std::string> ImageCacheDirFor(uid_t uid, const char* xdg_cache_home, const char* home) {
  if (uid == 0) return std::string("/var/cache/sbx/images");
  if (xdg_cache_home != nullptr && xdg_cache_home[0] == '/') {
    return std::string(xdg_cache_home) + "/sbx/images";
  }
  if (home != nullptr && home[0] == '/') return std::string(home) + "/.cache/sbx/images";
  return MakeError(ErrorCode::kUnavailable,
                   "no image cache directory: set XDG_CACHE_HOME or HOME to an absolute path");
}

Result<std::string> ImageCacheDir() {
  return ImageCacheDirFor(geteuid(), std::getenv("XDG_CACHE_HOME"), std::getenv("HOME"));
}

Result<ImageInfo> FindDefaultImageIn(const std::string& cache_dir) {
  std::string link = cache_dir + "/default";
  std::string id = ReadLink(link);
  if (id.empty()) {
    return MakeError(ErrorCode::kUnavailable,
                     "no default image in " + cache_dir + "; " + kBuildHint + MountHint(cache_dir));
  }
  if (!IsImageId(id)) {
    return InvalidInput(link + " points at '" + id + "', not an image id; " + kBuildHint);
  }
  struct stat st;
  if (lstat((cache_dir + "/" + id).c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return MakeError(ErrorCode::kUnavailable, "the default image " + id + " is missing from " +
                                                  cache_dir + "; " + kBuildHint + MountHint(cache_dir));
  }
  // Every `sbx run` passes here: the metadata (a JSON parse, milliseconds) is for `image ls`.
  ImageInfo info;
  info.id = id;
  info.path = cache_dir + "/" + id;
  info.is_default = true;
  return info;
}

Result<ImageInfo> FindDefaultImage() {
  SBX_ASSIGN_OR_RETURN(auto cache_dir, ImageCacheDir());
  return FindDefaultImageIn(cache_dir);
}

Result<std::vector<ImageInfo>> ListImagesIn(const std::string& cache_dir) {
  std::vector<ImageInfo> images;
  auto names = EntryNames(cache_dir);
  if (!names && names.error().code == ErrorCode::kUnavailable) return images;
  if (!names) return names.error();
  for (const std::string& name : *names) {
    // Only complete images: a build publishes the directory by rename once it is whole.
    struct stat st;
    if (!IsImageId(name) || ::lstat((cache_dir + "/" + name).c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      continue;
    images.push_back(MakeInfo(cache_dir, name));
  }
  std::sort(images.begin(), images.end(), [](const ImageInfo& a, const ImageInfo& b) {
    return a.created != b.created ? a.created < b.created : a.id < b.id;
  });
  return images;
}

Result<std::vector<ImageInfo>> ListImages() {
  SBX_ASSIGN_OR_RETURN(auto cache_dir, ImageCacheDir());
  return ListImagesIn(cache_dir);
}

Result<void> ValidateImageName(const std::string& name) {
  bool valid = !name.empty() && name.size() <= 32 && name[0] >= 'a' && name[0] <= 'z' && !IsHexOnly(name) &&
               std::all_of(name.begin(), name.end(), [](char c) {
                 return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
               });
  if (!valid) {
    return InvalidInput("image name '" + name +
                        "': use 1-32 of a-z, 0-9 and -, starting with a letter and not all hex digits "
                        "(those read as an image id); a directory is given with a '/', as ./DIR");
  }
  return Ok{};
}

Result<std::string> ResolveImageDirIn(const std::string& cache_dir, const std::string& image) {
  if (image.find('/') != std::string::npos) return image;
  if (image.empty() || image == "default") {
    SBX_ASSIGN_OR_RETURN(auto found, FindDefaultImageIn(cache_dir));
    return found.path;
  }
  // An id or id prefix as `sbx image ls` prints it, or a variant's name.
  SBX_ASSIGN_OR_RETURN(auto found, FindImageIn(cache_dir, image));
  return found.path;
}

Result<std::string> ResolveImageDir(const std::string& image) {
  if (image.find('/') != std::string::npos) return image;
  SBX_ASSIGN_OR_RETURN(auto cache_dir, ImageCacheDir());
  return ResolveImageDirIn(cache_dir, image);
}

Result<ImageInfo> FindImageIn(const std::string& cache_dir, const std::string& id) {
  if (id == "default") {
    SBX_ASSIGN_OR_RETURN(auto found, FindDefaultImageIn(cache_dir));
    return MakeInfo(cache_dir, found.id);
  }
  if (!IsImageId(id)) return FindNamedImageIn(cache_dir, id);
  SBX_ASSIGN_OR_RETURN(auto images, ListImagesIn(cache_dir));
  const ImageInfo* found = nullptr;
  for (const ImageInfo& image : images) {
    if (image.id.compare(0, id.size(), id) != 0) continue;
    if (found != nullptr) {
      return InvalidInput("image id prefix " + id + " is ambiguous; give more digits");
    }
    found = &image;
  }
  if (found == nullptr) {
    return MakeError(ErrorCode::kUnavailable,
                     "no image " + id + " in " + cache_dir + "; `sbx image ls` lists them");
  }
  return *found;
}

Result<ImageInfo> FindImage(const std::string& id_or_name) {
  const std::string& id = id_or_name;
  SBX_ASSIGN_OR_RETURN(auto cache_dir, ImageCacheDir());
  return FindImageIn(cache_dir, id);
}

Result<void> RemoveImageIn(const std::string& cache_dir, const std::string& id) {
  SBX_ASSIGN_OR_RETURN(auto lock, LockCache(cache_dir));
  SBX_ASSIGN_OR_RETURN(auto image, FindImageIn(cache_dir, id));
  std::string trash = cache_dir + "/.trash-" + image.id;
  if (rename(image.path.c_str(), trash.c_str()) != 0) {
    return SysError(ErrorCode::kIo, "rename(" + image.path + ", " + trash + ")");
  }
  // Pointers first, so nothing names the image while its tree is being deleted.
  if (auto entries = EntryNames(cache_dir)) {
    for (const std::string& name : *entries) {
      bool pointer = name == "default" || name.rfind("recipe-", 0) == 0 || name.rfind(kNamePrefix, 0) == 0;
      if (pointer && ReadLink(cache_dir + "/" + name) == image.id) (void)::unlink((cache_dir + "/" + name).c_str());
    }
  }
  (void)::unlink((cache_dir + "/" + image.id + ".json").c_str());
  // RemoveTree deletes symlinks themselves and never follows them.
  if (auto removed = RemoveTree(trash); !removed) return removed.error().Context("removing " + trash);
  return Ok{};
}

Result<void> RemoveImage(const std::string& id) {
  SBX_ASSIGN_OR_RETURN(auto cache_dir, ImageCacheDir());
  return RemoveImageIn(cache_dir, id);
}

}  // namespace sbx
