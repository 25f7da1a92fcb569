// `sbx doctor`: prints the host probes and what `sbx run` would use; non-zero when unsafe.
#include "src/cli/doctor_command.h"

#include <unistd.h>

#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "sandbox/host_probe.h"
#include "sandbox/image.h"

namespace sbx::cli {

int RunDoctorCommand(int argc, char** argv) {
  bool json = argc > 1 && std::string(argv[1]) == "--json";
  auto probes = ProbeHost();
  bool safe = true;
  for (const auto& probe : probes) safe = safe && (probe.available || !probe.required);
  auto image = FindDefaultImage();
  std::string mode = ::geteuid() == 0 ? "root (sandbox uid 1000 maps to an unprivileged host uid)"
                                      : "rootless (your uid maps to 1000 inside)";
  if (json) {
    nlohmann::ordered_json out;
    for (const auto& probe : probes) {
      out["features"][probe.name] = {{"available", probe.available}, {"required", probe.required},
                                     {"detail", probe.detail}};
    }
    out["mode"] = mode;
    out["image"] = image ? image->path : "missing: " + image.error().ToString();
    out["can_run_safely"] = safe;
    std::printf("%s\n", out.dump(2).c_str());
  } else {
    for (const auto& probe : probes) {
      std::printf("%-28s %-4s %s%s\n", probe.name.c_str(), probe.available ? "yes" : "NO",
                  probe.detail.c_str(), probe.required && !probe.available ? "  [required]" : "");
    }
    std::printf("%-28s %s\n", "mode", mode.c_str());
    std::printf("%-28s %s\n", "image", image ? image->path.c_str() : image.error().ToString().c_str());
    std::printf("\n%s\n", safe ? "sbx can run safely on this host."
                               : "sbx cannot run safely on this host: see the required items above.");
  }
  return safe ? 0 : 1;
}

}  // namespace sbx::cli
