// `sbx image build|ls|path|rm|verify`: thin commands over sandbox/image/image.h.
#include "src/cli/image_command.h"

#include <limits.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "base/error.h"
#include "sandbox/image/image.h"
#include "sandbox/launch/child_wait.h"

namespace sbx::cli {
namespace {

constexpr int kExitError = 125;
constexpr char kUsage[] =
    "usage: sbx image build [--force]   build the Python image from rootfs/recipe.conf\n"
    "       sbx image build [--force] --name NAME --add PKG...\n"
    "                                   a variant with extra Debian packages, used as --image NAME\n"
    "       sbx image ls                list cached images (* marks the default) with their names\n"
    "       sbx image path [NAME|ID]    print an image's directory (default: the default)\n"
    "       sbx image rm NAME|ID        delete an image\n"
    "       sbx image verify [NAME|ID]  check every file of an image (default: the default)\n";

int Fail(const Error& error) {
  std::fprintf(stderr, "sbx image: %s\n", error.ToString().c_str());
  return kExitError;
}

int Usage(const std::string& problem) {
  std::fprintf(stderr, "sbx image: %s\n%s", problem.c_str(), kUsage);
  return kExitError;
}

bool IsFile(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// rootfs/build-image.sh in the source tree, else next to the installed binary (../rootfs).
Result<std::string> FindBuildScript() {
  std::vector<std::string> candidates = {std::string(SBX_SOURCE_DIR) + "/rootfs/build-image.sh"};
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n > 0) {
    std::string dir(exe, static_cast<size_t>(n));
    dir.resize(dir.rfind('/'));
    candidates.push_back(dir + "/../rootfs/build-image.sh");
  }
  for (const std::string& candidate : candidates) {
    if (IsFile(candidate)) return candidate;
  }
  return MakeError(ErrorCode::kUnavailable, "cannot find rootfs/build-image.sh (looked at " +
                                                candidates.front() + " and next to the binary)");
}

// Runs argv, inheriting stdio so the script's step lines reach the user; returns its status.
Result<int> RunAndWait(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid < 0) return SysError(ErrorCode::kIo, "fork");
  if (pid == 0) {
    execv(argv[0], argv.data());
    _exit(127);
  }
  int status = 0;
  if (WaitForChild(pid, &status) != pid) return SysError(ErrorCode::kIo, "waitpid");
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + WTERMSIG(status);
}

int Verify(const ImageInfo& image) {
  auto stats = VerifyImageTree(image.path, VerifyOptionsFor(image.path));
  if (!stats) return Fail(stats.error());
  std::printf("image %s is safe: %llu entries checked in %.3f s (%s)\n", image.id.c_str(),
              static_cast<unsigned long long>(stats->entries), stats->seconds, image.path.c_str());
  return 0;
}

int Build(const std::vector<std::string>& args) {
  bool force = false;
  std::string name;
  std::vector<std::string> packages;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--force") {
      force = true;
    } else if (arg == "--name" && i + 1 < args.size()) {
      name = args[++i];
    } else if (arg == "--add") {
      // --add takes every following word up to the next flag.
      while (i + 1 < args.size() && args[i + 1].rfind("--", 0) != 0) packages.push_back(args[++i]);
      if (packages.empty()) return Usage("build: --add needs at least one Debian package (as python3-sklearn)");
    } else {
      return Usage("build: unknown argument '" + arg + "'");
    }
  }
  if (name.empty() != packages.empty()) {
    return Usage(name.empty() ? "build: --add needs --name NAME, the name --image will use"
                              : "build: --name " + name + " needs --add PKG..., the Debian packages to add");
  }
  if (!name.empty()) {
    if (auto valid = ValidateImageName(name); !valid) return Fail(valid.error().Context("--name"));
    if (name == "default") return Fail(InvalidInput("--name: 'default' is the default image; choose another name"));
  }
  auto script = FindBuildScript();
  if (!script) return Fail(script.error());
  auto cache_dir = ImageCacheDir();
  if (!cache_dir) return Fail(cache_dir.error());
  std::vector<std::string> command = {"/bin/bash", *script, "--cache-dir", *cache_dir};
  if (force) command.push_back("--force");
  if (!name.empty()) command.insert(command.end(), {"--name", name});
  for (const std::string& package : packages) command.insert(command.end(), {"--add", package});
  auto status = RunAndWait(command);
  if (!status) return Fail(status.error().Context("running " + *script));
  if (*status != 0) {
    std::fprintf(stderr, "sbx image: build failed (%s exited with %d); see the output above\n",
                 script->c_str(), *status);
    return kExitError;
  }
  // Builds are verified in full once; start-ups then only run VerifyImageQuick.
  auto image = FindImageIn(*cache_dir, name.empty() ? "default" : name);
  if (!image) return Fail(image.error());
  return Verify(*image);
}

std::string HumanSize(uint64_t bytes) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.0fM", static_cast<double>(bytes) / (1 << 20));
  return buffer;
}

int List() {
  auto images = ListImages();
  if (!images) return Fail(images.error());
  if (images->empty()) {
    std::printf("no images; run `sbx image build`\n");
    return 0;
  }
  std::printf("  %-14s %-12s %-21s %8s %8s %7s  %s\n", "ID", "NAME", "CREATED", "SIZE", "FILES", "BUILD",
              "ADDED PACKAGES");
  auto joined = [](const std::vector<std::string>& words, const char* none) {
    std::string text;
    for (const std::string& word : words) text += (text.empty() ? "" : ",") + word;
    return text.empty() ? std::string(none) : text;
  };
  for (const ImageInfo& image : *images) {
    std::vector<std::string> names = image.names;
    if (image.is_default) names.insert(names.begin(), "default");
    std::printf("%c %-14s %-12s %-21s %8s %8llu %6llus  %s\n", image.is_default ? '*' : ' ', image.id.c_str(),
                joined(names, "-").c_str(), image.created.c_str(), HumanSize(image.size_bytes).c_str(),
                static_cast<unsigned long long>(image.file_count),
                static_cast<unsigned long long>(image.build_seconds), joined(image.added_packages, "-").c_str());
  }
  return 0;
}

int Path(const std::vector<std::string>& args) {
  if (args.size() > 1) return Usage("path takes at most one image name or id");
  auto image = args.empty() ? FindDefaultImage() : FindImage(args[0]);
  if (!image) return Fail(image.error());
  std::printf("%s\n", image->path.c_str());
  return 0;
}

int Remove(const std::vector<std::string>& args) {
  if (args.size() != 1) return Usage("rm takes one image name or id");
  auto image = FindImage(args[0]);
  if (!image) return Fail(image.error());
  auto removed = RemoveImage(image->id);
  if (!removed) return Fail(removed.error());
  std::printf("removed image %s%s\n", image->id.c_str(),
              image->is_default ? " (it was the default; `sbx image build` makes a new one)" : "");
  return 0;
}

int VerifyCommand(const std::vector<std::string>& args) {
  if (args.size() > 1) return Usage("verify takes at most one image name or id");
  auto image = args.empty() ? FindDefaultImage() : FindImage(args[0]);
  if (!image) return Fail(image.error());
  return Verify(*image);
}

}  // namespace

int RunImageCommand(int argc, char** argv) {
  if (argc < 2) return Usage("missing subcommand");
  std::string command = argv[1];
  std::vector<std::string> args(argv + 2, argv + argc);
  if (command == "build") return Build(args);
  if (command == "ls" && args.empty()) return List();
  if (command == "path") return Path(args);
  if (command == "rm") return Remove(args);
  if (command == "verify") return VerifyCommand(args);
  if (command == "-h" || command == "--help" || command == "help") {
    std::printf("%s", kUsage);
    return 0;
  }
  return Usage("unknown subcommand or extra arguments: " + command);
}

}  // namespace sbx::cli
