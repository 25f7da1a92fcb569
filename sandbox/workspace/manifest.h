// The manifest: files staged into a workspace before a run, validated before anything is written.
//
// Usage:
//   1. Build a Manifest: AddBytes("main.py", source), AddHostFile("data/x.csv", "/srv/x.csv"),
//      AddHostDirectory("lib", "/srv/lib"), AddDirectory("output").
//   2. ValidateManifest(manifest) checks the destinations alone (pure; no file system).
//   3. StageManifest(workspace_dir, manifest, owner) validates again, reads every host source's
//      metadata (still writing nothing), then writes. On any error it removes what it created.
//
// Destinations are relative to the workspace and follow SplitRelativePath's rules (no "/"
// prefix, no "." or "..", no empty components, no control characters, names <= 255 bytes,
// paths <= 4096 bytes, depth <= 64). Writing happens fd-relative beneath an O_PATH fd of the
// workspace (openat2 RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS), files are created O_EXCL |
// O_NOFOLLOW, so a symlink planted in the workspace is never written through and an existing
// file is never overwritten. Files are 0644 (0755 when executable), directories 0755, all
// owned by `owner` (the sandbox user's host ids: kRootModeHostId as root).
//
// Host sources are the operator's: the path given for a host file or directory is followed
// as usual, but inside a host directory only regular files and directories are copied.
// Symlinks, FIFOs, sockets, devices and mount points inside it are skipped and listed in
// StageReport::skipped (a project tree often holds a venv symlink; failing on it would be
// unhelpful, and following it could copy the host's files into the sandbox).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/error.h"
#include "sandbox/fs/fs_beneath.h"

namespace sbx {

struct ManifestEntry {
  enum class Kind {
    kBytes,          // `bytes` as a file
    kHostFile,       // a copy of the regular file `host_path`
    kHostDirectory,  // a copy of the tree at `host_path` (regular files and directories only)
    kDirectory,      // an empty directory (merged with any other directory at that path)
    kFileRange,      // `length` bytes of the regular file `source_fd` from `offset` (not owned)
  };
  Kind kind = Kind::kBytes;
  std::string destination;  // relative to the workspace
  std::string bytes;
  bool executable = false;  // kBytes, kFileRange: 0755 instead of 0644
  std::string host_path;    // absolute
  int source_fd = -1;
  uint64_t offset = 0;
  uint64_t length = 0;
};

struct ManifestLimits {
  size_t max_entries = 10'000;  // entries in the manifest
  size_t max_files = 100'000;   // files and directories written, host trees expanded
  uint64_t max_total_bytes = 1ull << 30;
};

class Manifest {
 public:
  Manifest& AddBytes(std::string destination, std::string bytes, bool executable = false);
  Manifest& AddHostFile(std::string destination, std::string host_path);
  Manifest& AddHostDirectory(std::string destination, std::string host_path);
  Manifest& AddDirectory(std::string destination);
  // `source_fd` must stay open until StageManifest returns (workspace archives use this).
  Manifest& AddFileRange(std::string destination, int source_fd, uint64_t offset, uint64_t length,
                         bool executable);

  const std::vector<ManifestEntry>& entries() const { return entries_; }

 private:
  std::vector<ManifestEntry> entries_;
};

// Checks the manifest without touching the file system: entry count, every destination,
// duplicate destinations, a file used as another entry's parent directory, relative host
// paths, inline bytes over the budget. The error names the entry index and the fix:
//   "manifest entry 3 (\"../x\"): \"..\" component; name the path without it".
Result<void> ValidateManifest(const Manifest& manifest, const ManifestLimits& limits = {});

struct StageReport {
  size_t files = 0;
  size_t directories = 0;  // created by staging (existing ones are reused, not counted)
  uint64_t bytes = 0;
  std::vector<std::string> skipped;  // "entry 2: lib/venv (symlink, skipped)"
};

// Stages `manifest` into the existing directory `workspace_dir` (see the file comment).
Result<StageReport> StageManifest(const std::string& workspace_dir, const Manifest& manifest,
                                  const FileOwner& owner, const ManifestLimits& limits = {});
// The same beneath an already-open directory fd of the workspace (O_PATH is enough).
Result<StageReport> StageManifestAt(int workspace_fd, const Manifest& manifest,
                                    const FileOwner& owner, const ManifestLimits& limits = {});

}  // namespace sbx
