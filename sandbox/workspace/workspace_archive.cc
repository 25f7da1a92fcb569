// A minimal ustar/pax writer and a strict reader that hands every entry to the manifest rules.
#include "sandbox/workspace/workspace_archive.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <optional>
#include <utility>

#include "base/unique_fd.h"
#include "base/write_all.h"

namespace sbx {
namespace {

constexpr size_t kBlock = 512;
using Block = std::array<char, kBlock>;

// ustar header field offsets and widths (POSIX.1-2001, pax "ustar Interchange Format").
struct Field {
  size_t offset, width;
};
constexpr Field kName{0, 100}, kMode{100, 8}, kUid{108, 8}, kGid{116, 8}, kSize{124, 12},
    kMtime{136, 12}, kChecksum{148, 8}, kType{156, 1}, kMagic{257, 6}, kVersion{263, 2},
    kPrefix{345, 155};

void PutOctal(Block& block, Field field, uint64_t value) {
  // width-1 zero-padded octal digits, then NUL.
  for (size_t i = field.width - 1; i-- > 0; value >>= 3)
    block[field.offset + i] = char('0' + (value & 7));
  block[field.offset + field.width - 1] = '\0';
}

unsigned Checksum(const Block& block) {
  unsigned sum = 0;
  for (size_t i = 0; i < kBlock; ++i) {
    const bool in_field = i >= kChecksum.offset && i < kChecksum.offset + kChecksum.width;
    sum += in_field ? ' ' : static_cast<unsigned char>(block[i]);
  }
  return sum;
}

Block MakeHeader(const std::string& name, char type, mode_t mode, uint64_t size) {
  Block block{};
  std::memcpy(&block[kName.offset], name.data(), std::min(name.size(), kName.width));
  PutOctal(block, kMode, mode);
  PutOctal(block, kUid, 0);
  PutOctal(block, kGid, 0);
  PutOctal(block, kSize, size);
  PutOctal(block, kMtime, 0);
  block[kType.offset] = type;
  std::memcpy(&block[kMagic.offset], "ustar", 6);
  std::memcpy(&block[kVersion.offset], "00", 2);
  unsigned sum = Checksum(block);
  PutOctal(block, Field{kChecksum.offset, 7}, sum);  // six digits, NUL, then the space
  block[kChecksum.offset + 7] = ' ';
  return block;
}

// A pax record is "<length> <key>=<value>\n" where <length> counts the whole record.
std::string PaxRecord(const std::string& key, const std::string& value) {
  size_t body = 1 + key.size() + 1 + value.size() + 1;
  size_t length = body + 1;
  while (std::to_string(length).size() + body != length)
    length = std::to_string(length).size() + body;
  return std::to_string(length) + " " + key + "=" + value + "\n";
}

Result<void> WritePadded(int fd, std::string_view data) {
  SBX_TRY(WriteAll(fd, data));
  static const char kZeros[kBlock] = {};
  size_t tail = data.size() % kBlock;
  return tail == 0 ? Result<void>(Ok{}) : WriteAll(fd, std::string_view(kZeros, kBlock - tail));
}

Result<void> WriteEntryHeader(int fd, const std::string& name, char type, mode_t mode,
                              uint64_t size) {
  if (name.size() > kName.width) {
    std::string records = PaxRecord("path", name);
    Block pax = MakeHeader("PaxHeader", 'x', 0644, records.size());
    SBX_TRY(WriteAll(fd, std::string_view(pax.data(), kBlock)));
    SBX_TRY(WritePadded(fd, records));
  }
  Block header = MakeHeader(name, type, mode, size);
  return WriteAll(fd, std::string_view(header.data(), kBlock));
}

Result<void> WriteFileEntry(int fd, const WalkItem& item) {
  UniqueFd in(::openat(item.parent_fd, item.name.c_str(),
                       O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  struct stat now {};
  if (!in || ::fstat(in.get(), &now) != 0 || !S_ISREG(now.st_mode) ||
      now.st_ino != item.st.st_ino || now.st_size != item.st.st_size) {
    return MakeError(ErrorCode::kIo, item.path + " changed while archiving; is the sandbox dead?");
  }
  const auto size = static_cast<uint64_t>(item.st.st_size);
  if (size >= (uint64_t{1} << 33))
    return InvalidInput(item.path + ": ustar holds files under 8 GiB");
  SBX_TRY(WriteEntryHeader(fd, item.path, '0', NormalizedFileMode(item.st.st_mode), size));
  SBX_TRY(CopyRange(in.get(), 0, size, fd));
  static const char kZeros[kBlock] = {};
  size_t tail = size % kBlock;
  return tail == 0 ? Result<void>(Ok{}) : WriteAll(fd, std::string_view(kZeros, kBlock - tail));
}

// Strict parse of a NUL- or space-terminated octal field; base-256 and junk are refused.
std::optional<uint64_t> ParseOctal(const Block& block, Field field) {
  size_t i = field.offset, end = field.offset + field.width;
  while (i < end && block[i] == ' ') ++i;
  uint64_t value = 0;
  size_t digits = 0;
  for (; i < end && block[i] >= '0' && block[i] <= '7'; ++i, ++digits) {
    if (value > (UINT64_MAX >> 3)) return std::nullopt;
    value = value << 3 | uint64_t(block[i] - '0');
  }
  if (digits == 0) return std::nullopt;
  for (; i < end; ++i) {
    if (block[i] != '\0' && block[i] != ' ') return std::nullopt;
  }
  return value;
}

std::string TextField(const Block& block, Field field) {
  const char* start = &block[field.offset];
  return std::string(start, strnlen(start, field.width));
}

// Reads `path` (the only key honoured) from pax records; other keys (mtime, ...) are ignored.
Result<std::string> ParsePaxPath(const std::string& records) {
  std::string path;
  size_t pos = 0;
  while (pos < records.size()) {
    size_t space = records.find(' ', pos);
    if (space == std::string::npos) return InvalidInput("malformed pax record");
    size_t length = 0;
    for (size_t i = pos; i < space; ++i) {
      if (records[i] < '0' || records[i] > '9' || length > records.size())
        return InvalidInput("malformed pax record length");
      length = length * 10 + size_t(records[i] - '0');
    }
    if (length <= space - pos + 1 || pos + length > records.size() ||
        records[pos + length - 1] != '\n')
      return InvalidInput("malformed pax record");
    std::string record = records.substr(space + 1, pos + length - space - 2);
    size_t equals = record.find('=');
    if (equals == std::string::npos) return InvalidInput("malformed pax record");
    const std::string key = record.substr(0, equals);
    if (key == "path") path = record.substr(equals + 1);
    if (key == "size" || key == "linkpath" || key.rfind("GNU.", 0) == 0)
      return InvalidInput("pax key \"" + key + "\" is not supported");
    pos += length;
  }
  return path;
}

bool IsZeroBlock(const Block& block) {
  for (char c : block) {
    if (c != '\0') return false;
  }
  return true;
}

Result<Block> ReadBlock(int fd, uint64_t offset) {
  Block block{};
  ssize_t n;
  do {
    n = ::pread(fd, block.data(), kBlock, static_cast<off_t>(offset));
  } while (n < 0 && errno == EINTR);
  if (n < 0) return SysError(ErrorCode::kIo, "read archive");
  if (static_cast<size_t>(n) != kBlock) return InvalidInput("archive is truncated");
  return block;
}

// Turns the archive into a manifest of directories and file ranges of `fd`.
Result<Manifest> ReadArchive(int fd, const ArchiveBudgets& budgets) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return SysError(ErrorCode::kIo, "fstat archive");
  if (!S_ISREG(st.st_mode)) return InvalidInput("the archive must be a regular file");
  const auto archive_size = static_cast<uint64_t>(st.st_size);
  Manifest manifest;
  std::optional<std::string> pax_path;
  uint64_t offset = 0;
  for (size_t index = 0;; ++index) {
    const std::string where = "archive entry " + std::to_string(index);
    auto block = ReadBlock(fd, offset);
    if (!block) return block.error().Context(where);
    if (IsZeroBlock(*block)) return manifest;
    auto sum = ParseOctal(*block, kChecksum);
    if (!sum || *sum != Checksum(*block)) return InvalidInput(where + ": bad header checksum");
    if (TextField(*block, kMagic).rfind("ustar", 0) != 0)
      return InvalidInput(where + ": not ustar");
    auto size = ParseOctal(*block, kSize);
    auto mode = ParseOctal(*block, kMode);
    if (!size || !mode) return InvalidInput(where + ": malformed size or mode field");
    const uint64_t data = offset + kBlock;
    if (*size > archive_size || data + *size > archive_size)
      return InvalidInput(where + ": data runs past the end of the archive");
    offset = data + (*size + kBlock - 1) / kBlock * kBlock;
    const char type = (*block)[kType.offset];
    if (type == 'x') {
      if (*size > 64 * 1024) return InvalidInput(where + ": pax header over 64 KiB");
      std::string records(*size, '\0');
      if (::pread(fd, records.data(), *size, static_cast<off_t>(data)) !=
          static_cast<ssize_t>(*size))
        return SysError(ErrorCode::kIo, where + ": read pax header");
      auto path = ParsePaxPath(records);
      if (!path) return path.error().Context(where);
      pax_path = *path;
      continue;
    }
    if (manifest.entries().size() >= budgets.max_entries)
      return InvalidInput("more than " + std::to_string(budgets.max_entries) + " archive entries");
    std::string name = TextField(*block, kName);
    if (const std::string prefix = TextField(*block, kPrefix); !prefix.empty())
      name = prefix + "/" + name;
    if (pax_path) name = *std::exchange(pax_path, std::nullopt);
    if (type == '5') {
      if (!name.empty() && name.back() == '/') name.pop_back();
      manifest.AddDirectory(name);
    } else if (type == '0' || type == '\0') {
      manifest.AddFileRange(name, fd, data, *size, (*mode & 0111) != 0);
    } else {
      return InvalidInput(
          where + " (\"" + EscapeForMessage(name) + "\"): type '" +
          EscapeForMessage(std::string(1, type)) +
          "' (a link, device, FIFO or extension) is not allowed in a workspace archive");
    }
  }
}

}  // namespace

Result<ArchiveReport> PersistWorkspaceTar(const std::string& workspace_dir, int out_fd,
                                          const ArchiveBudgets& budgets) {
  UniqueFd workspace(
      ::open(workspace_dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!workspace) return SysError(ErrorCode::kInvalidInput, "open workspace " + workspace_dir);
  ArchiveReport report;
  std::optional<Error> failure;
  // Skipped entries cost a visit too: bound the walk at four times the entry budget.
  const size_t max_visits = std::min(budgets.max_entries, SIZE_MAX / 8) * 4 + 1;
  auto walked = WalkTree(workspace.get(), "", max_visits, [&](const WalkItem& item) {
    const char* skip = nullptr;
    if (item.depth > budgets.max_depth) {
      skip = "too deep";
    } else if (!SplitRelativePath(item.path)) {
      skip = "name a manifest would refuse";
    } else if (item.other_device) {
      skip = "mount point";
    } else if (S_ISLNK(item.st.st_mode)) {
      skip = "symlink";
    } else if (!S_ISDIR(item.st.st_mode) && !S_ISREG(item.st.st_mode)) {
      skip = "not a regular file";
    }
    if (skip != nullptr) {
      if (report.skipped.size() < kMaxListedSkips) {
        report.skipped.push_back(EscapeForMessage(item.path) + " (" + skip + ")");
      } else {
        ++report.skipped_unlisted;
      }
      return WalkAction::kSkip;
    }
    if (report.files + report.directories >= budgets.max_entries) {
      failure = InvalidInput("more than " + std::to_string(budgets.max_entries) + " entries");
      return WalkAction::kStop;
    }
    const auto size = static_cast<uint64_t>(item.st.st_size);
    Result<void> written = Ok{};
    if (S_ISDIR(item.st.st_mode)) {
      written = WriteEntryHeader(out_fd, item.path + "/", '5', 0755, 0);
      ++report.directories;
    } else if (size > budgets.max_bytes - report.bytes) {
      failure =
          InvalidInput(item.path + " (" + std::to_string(size) + " bytes) exceeds the budget of " +
                       std::to_string(budgets.max_bytes) + " bytes");
      return WalkAction::kStop;
    } else {
      written = WriteFileEntry(out_fd, item);
      report.bytes += size;
      ++report.files;
    }
    if (!written) failure = written.error();
    return written ? WalkAction::kContinue : WalkAction::kStop;
  });
  if (failure) return failure->Context("persist workspace " + workspace_dir);
  if (!walked) return walked.error().Context("persist workspace " + workspace_dir);
  if (!*walked)
    return InvalidInput("persist workspace " + workspace_dir + ": too many entries to walk");
  static const char kEnd[2 * kBlock] = {};
  SBX_TRY(WriteAll(out_fd, std::string_view(kEnd, sizeof(kEnd))));
  return report;
}

Result<ArchiveReport> PersistWorkspaceTar(const std::string& workspace_dir,
                                          const std::string& archive_path,
                                          const ArchiveBudgets& budgets) {
  UniqueFd out(
      ::open(archive_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!out) return SysError(ErrorCode::kIo, "create archive " + archive_path);
  auto report = PersistWorkspaceTar(workspace_dir, out.get(), budgets);
  if (!report) ::unlink(archive_path.c_str());
  return report;
}

Result<StageReport> RestoreWorkspaceTar(int archive_fd, const std::string& workspace_dir,
                                        const FileOwner& owner, const ArchiveBudgets& budgets) {
  auto manifest = ReadArchive(archive_fd, budgets);
  if (!manifest) return manifest.error().Context("restore workspace archive");
  ManifestLimits limits;
  limits.max_entries = budgets.max_entries;
  limits.max_files = budgets.max_entries;
  limits.max_total_bytes = budgets.max_bytes;
  auto staged = StageManifest(workspace_dir, *manifest, owner, limits);
  if (!staged) return staged.error().Context("restore workspace archive");
  return staged;
}

Result<StageReport> RestoreWorkspaceTar(const std::string& archive_path,
                                        const std::string& workspace_dir, const FileOwner& owner,
                                        const ArchiveBudgets& budgets) {
  UniqueFd in(::open(archive_path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!in) return SysError(ErrorCode::kInvalidInput, "open archive " + archive_path);
  return RestoreWorkspaceTar(in.get(), workspace_dir, owner, budgets);
}

}  // namespace sbx
