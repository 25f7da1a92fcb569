// Fuzzes manifest validation and staging (sandbox/workspace/manifest.h) with destinations as a caller
// (the executor, a workspace archive, an agent's files) could give them.
//
// The input is one entry per line: a kind byte ('d' directory, 'h' host file, 'x' executable
// bytes, anything else bytes), the destination, and for bytes and host files a tab and the
// contents or host path. Invariants beyond "no crash":
//   - a refusal names the entry, with control bytes escaped;
//   - an accepted manifest has unique destinations that SplitRelativePath accepts and joins
//     back to the same text, and no file that another entry uses as a directory;
//   - staged into an empty directory (when it has no host entries), exactly its files and
//     directories appear beneath it, with their bytes and modes, and nothing beside it.
#include "sandbox/workspace/manifest.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <string_view>

#include "sandbox/fs/fs_beneath.h"
#include "tests/fuzz/fuzz_check.h"
#include "tests/fuzz/scratch_dir.h"

namespace {

using Kind = sbx::ManifestEntry::Kind;

sbx::Manifest ManifestFrom(std::string_view text, bool& from_host) {
  sbx::Manifest manifest;
  from_host = false;
  while (!text.empty()) {
    const size_t lf = text.find('\n');
    std::string_view line = text.substr(0, lf);
    text = lf == std::string_view::npos ? std::string_view() : text.substr(lf + 1);
    if (line.empty()) continue;
    const char kind = line.front();
    line.remove_prefix(1);
    const size_t tab = line.find('\t');
    const std::string destination(line.substr(0, tab));
    const std::string rest(tab == std::string_view::npos ? "" : line.substr(tab + 1));
    if (kind == 'd') {
      manifest.AddDirectory(destination);
    } else if (kind == 'h') {
      manifest.AddHostFile(destination, rest);
      from_host = true;
    } else {
      manifest.AddBytes(destination, rest, kind == 'x');
    }
  }
  return manifest;
}

void CheckAccepted(const sbx::Manifest& manifest) {
  std::set<std::string> destinations, file_paths;
  for (const auto& entry : manifest.entries()) {
    const auto components = sbx::SplitRelativePath(entry.destination);
    SBX_FUZZ_CHECK(components.has_value());
    SBX_FUZZ_CHECK(sbx::JoinPath(*components, components->size()) == entry.destination);
    SBX_FUZZ_CHECK(destinations.insert(entry.destination).second);
    if (entry.kind != Kind::kDirectory) file_paths.insert(entry.destination);
  }
  for (const std::string& destination : destinations) {
    for (size_t slash = destination.find('/'); slash != std::string::npos;
         slash = destination.find('/', slash + 1)) {
      SBX_FUZZ_CHECK(file_paths.count(destination.substr(0, slash)) == 0);
    }
  }
}

void CheckStaged(const std::string& workspace, const sbx::Manifest& manifest) {
  std::set<std::string> expected;
  for (const auto& entry : manifest.entries()) {
    const std::filesystem::path path = std::filesystem::path(workspace) / entry.destination;
    for (auto parent = std::filesystem::path(entry.destination); !parent.empty();
         parent = parent.parent_path()) {
      expected.insert(parent.string());
    }
    struct stat st {};
    SBX_FUZZ_CHECK(::lstat(path.c_str(), &st) == 0);
    if (entry.kind == Kind::kDirectory) {
      SBX_FUZZ_CHECK(S_ISDIR(st.st_mode));
      continue;
    }
    SBX_FUZZ_CHECK(S_ISREG(st.st_mode));
    SBX_FUZZ_CHECK((st.st_mode & 07777) == (entry.executable ? 0755u : 0644u));
    std::ifstream in(path, std::ios::binary);
    const std::string contents((std::istreambuf_iterator<char>(in)), {});
    SBX_FUZZ_CHECK(contents == entry.bytes);
  }
  size_t found = 0;
  for (const auto& item : std::filesystem::recursive_directory_iterator(workspace)) {
    SBX_FUZZ_CHECK(expected.count(item.path().lexically_relative(workspace).string()) == 1);
    ++found;
  }
  SBX_FUZZ_CHECK(found == expected.size());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static sbx::fuzz::ScratchDir scratch;
  bool from_host = false;
  const sbx::Manifest manifest =
      ManifestFrom(std::string_view(reinterpret_cast<const char*>(data), size), from_host);
  const auto valid = sbx::ValidateManifest(manifest);
  if (!valid) {
    const std::string& message = valid.error().message;
    SBX_FUZZ_CHECK(message.starts_with("manifest entry ") || message.starts_with("manifest has "));
    for (char c : message) SBX_FUZZ_CHECK(static_cast<unsigned char>(c) >= 0x20 && c != 0x7f);
    return 0;
  }
  CheckAccepted(manifest);
  if (from_host) return 0;
  const std::string workspace = scratch.Fresh("workspace");
  const sbx::FileOwner owner{::getuid(), ::getgid()};
  const auto staged = sbx::StageManifest(workspace, manifest, owner);
  SBX_FUZZ_CHECK(staged.has_value());
  CheckStaged(workspace, manifest);
  SBX_FUZZ_CHECK(scratch.Entries() == 1);
  return 0;
}
