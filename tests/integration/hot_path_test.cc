// The CLI's layout: the code a run executes lies together in sbx's .text.hot_path section
// (src/cli/hot_path.ld, tools/hot_path/generate.py), so a run faults in a few 64 KiB windows of
// the binary instead of most of them. The linker ignores patterns that match nothing, so a
// renamed archive or a moved function would quietly undo it: this test notices.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <sstream>
#include <string>

#include "tests/integration/sandbox_fixture.h"

namespace sbx::testing {
namespace {

struct Section {
  uint64_t start = 0;
  uint64_t size = 0;
};

// A section of the ELF file by name, from `readelf -SW`.
Section FindSection(const std::string& readelf_output, const std::string& name) {
  std::istringstream lines(readelf_output);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream fields(line.substr(line.find(']') == std::string::npos ? 0 : line.find(']') + 1));
    std::string section, type, address, offset, size;
    if (fields >> section >> type >> address >> offset >> size && section == name)
      return {std::stoull(address, nullptr, 16), std::stoull(size, nullptr, 16)};
  }
  return {};
}

// Address of each defined symbol, from `nm` ("ADDRESS TYPE NAME" lines; others skipped).
std::map<std::string, uint64_t> SymbolAddresses(const std::string& nm_output) {
  std::map<std::string, uint64_t> addresses;
  std::istringstream lines(nm_output);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::string address, type, name, extra;
    if (fields >> address >> type >> name && !(fields >> extra))
      addresses.emplace(name, std::stoull(address, nullptr, 16));
  }
  return addresses;
}

TEST(HotPath, TheRunsCodeIsGatheredInOneSection) {
  const HostRun sections = RunOnHost({"/usr/bin/readelf", "-SW", SBX_BINARY});
  ASSERT_EQ(sections.exit_code, 0) << sections.output;
  const HostRun symbols = RunOnHost({"/usr/bin/nm", "--defined-only", SBX_BINARY});
  ASSERT_EQ(symbols.exit_code, 0) << symbols.output;
  const Section hot = FindSection(sections.output, ".text.hot_path");
  ASSERT_GT(hot.size, 0u) << "sbx has no .text.hot_path: src/cli/hot_path.ld was not linked in";
  // The point is a few windows: the section must not grow into most of the code.
  const Section text = FindSection(sections.output, ".text");
  EXPECT_LT(hot.size, text.size) << "the hot path holds more code than all the rest";
  EXPECT_LE(hot.size, 1u << 20) << "the hot path has grown past 1 MiB: it takes more than runs";
  const std::map<std::string, uint64_t> functions = SymbolAddresses(symbols.output);
  // The runner, the child, the init and the libraries they use on every run.
  for (const char* name :
       {"main", "_ZN3sbx12RunSandboxedERKNS_7RunSpecE", "_ZN3sbx16SandboxChildMainERKNS_9ChildPlanE",
        "_ZN3sbx18ApplyMountsInChildERKNS_9MountPlanERKNS_12MountSourcesEPNS_9ChildStepEPb", "malloc",
        "__libc_start_main"}) {
    auto found = functions.find(name);
    ASSERT_NE(found, functions.end()) << name << " is not in sbx's symbols (renamed?)";
    EXPECT_GE(found->second, hot.start) << name << " lies outside .text.hot_path";
    EXPECT_LT(found->second, hot.start + hot.size) << name << " lies outside .text.hot_path";
  }
}

}  // namespace
}  // namespace sbx::testing
