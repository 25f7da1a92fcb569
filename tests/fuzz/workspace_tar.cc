// Fuzzes the workspace archive reader (sandbox/workspace/workspace_archive.h): the input is an archive a
// previous run's sandbox could have shaped, restored into an empty workspace.
//
// Invariants beyond "no crash": a refusal names the archive; nothing is ever written beside
// the workspace; a restored workspace persists to an archive that restores and persists again
// to the same bytes (restore and persist agree on every name, mode and byte they accept).
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "base/unique_fd.h"
#include "sandbox/workspace/workspace_archive.h"
#include "tests/fuzz/fuzz_check.h"
#include "tests/fuzz/scratch_dir.h"

namespace {

sbx::UniqueFd MemoryFile(const uint8_t* data, size_t size) {
  sbx::UniqueFd fd(::memfd_create("archive", MFD_CLOEXEC));
  SBX_FUZZ_CHECK(fd.get() >= 0);
  SBX_FUZZ_CHECK(::write(fd.get(), data, size) == static_cast<ssize_t>(size));
  return fd;
}

std::string Contents(int fd) {
  struct stat st {};
  SBX_FUZZ_CHECK(::fstat(fd, &st) == 0);
  std::string bytes(static_cast<size_t>(st.st_size), '\0');
  SBX_FUZZ_CHECK(::pread(fd, bytes.data(), bytes.size(), 0) == st.st_size);
  return bytes;
}

std::string Persist(const std::string& workspace) {
  sbx::UniqueFd out(::memfd_create("persisted", MFD_CLOEXEC));
  const auto report = sbx::PersistWorkspaceTar(workspace, out.get());
  SBX_FUZZ_CHECK(report.has_value());
  SBX_FUZZ_CHECK(report->skipped.empty() && report->skipped_unlisted == 0);
  return Contents(out.get());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static sbx::fuzz::ScratchDir scratch;
  const sbx::FileOwner owner{::getuid(), ::getgid()};
  sbx::UniqueFd archive = MemoryFile(data, size);
  const std::string workspace = scratch.Fresh("restored");
  const auto restored = sbx::RestoreWorkspaceTar(archive.get(), workspace, owner);
  SBX_FUZZ_CHECK(scratch.Entries() == 1);
  if (!restored) {
    SBX_FUZZ_CHECK(restored.error().message.starts_with("restore workspace archive"));
    return 0;
  }
  const std::string persisted = Persist(workspace);
  sbx::UniqueFd again =
      MemoryFile(reinterpret_cast<const uint8_t*>(persisted.data()), persisted.size());
  const std::string second = scratch.Fresh("again");
  const auto restored_again = sbx::RestoreWorkspaceTar(again.get(), second, owner);
  SBX_FUZZ_CHECK(restored_again.has_value());
  SBX_FUZZ_CHECK(restored_again->files == restored->files);
  SBX_FUZZ_CHECK(restored_again->bytes == restored->bytes);
  SBX_FUZZ_CHECK(Persist(second) == persisted);
  scratch.Remove("again");
  return 0;
}
