// The seed case study's stack inside the default sandbox: pandas, numpy, scipy, matplotlib.
#include <fstream>

#include "tests/integration/sandbox_fixture.h"

namespace sbx::testing {
namespace {

TEST(PythonStack, CsvRollingStatsAndChart) {
  ScratchDir workspace;
  {
    std::ofstream csv(workspace.path() + "/data.csv");
    csv << "day,value\n";
    for (int i = 0; i < 200; ++i) csv << i << "," << (i % 17 == 0 ? 100.0 : 10.0 + (i % 5)) << "\n";
  }
  const char* script = R"(
import numpy as np, pandas as pd
from scipy import stats
import matplotlib.pyplot as plt
df = pd.read_csv('data.csv')
df['rolling'] = df['value'].rolling(7, min_periods=1).mean()
z = np.abs(stats.zscore(df['value']))
anomalies = df[z > 3]
fig, ax = plt.subplots()
ax.plot(df['day'], df['value']); ax.plot(df['day'], df['rolling'])
ax.scatter(anomalies['day'], anomalies['value'], color='red')
fig.savefig('chart.png')
print(len(anomalies))
)";
  {
    std::ofstream(workspace.path() + "/analyse.py") << script;
  }
  RunResult result = RunInSandbox({"/usr/bin/python3", "analyse.py"}, Policy{}, workspace.path());
  ASSERT_EQ(result.status, RunStatus::kExited) << result.stderr_data;
  EXPECT_EQ(result.exit_code, 0) << result.stderr_data;
  EXPECT_EQ(result.stdout_data, "12\n");
  EXPECT_EQ(result.stderr_data, "");  // no font-cache rebuild, no warnings
  std::ifstream png(workspace.path() + "/chart.png", std::ios::binary);
  std::string header(8, '\0');
  png.read(header.data(), 8);
  EXPECT_EQ(header, "\x89PNG\r\n\x1a\n");
  png.seekg(0, std::ios::end);
  EXPECT_GT(png.tellg(), 10000);
}

}  // namespace
}  // namespace sbx::testing
