// `sbx doctor`: what this host supports and what `sbx run` will use.
#pragma once

namespace sbx::cli {

int RunDoctorCommand(int argc, char** argv);

}  // namespace sbx::cli
