// The server's counters and execution-latency histogram, in Prometheus' text format.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace sbx::server {

class Metrics {
 public:
  void CountRequest(int http_status);
  void CountSessionCreated();
  void CountExecution(const std::string& status, double seconds);
  // `gauges`: name -> value, written as gauges (sessions active, pool warm, ...).
  std::string Prometheus(const std::map<std::string, double>& gauges) const;

 private:
  static constexpr std::array<double, 12> kBuckets = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                                      0.5,   1,    2.5,   5,    10,  60};
  mutable std::mutex mutex_;
  std::map<int, uint64_t> requests_;
  uint64_t sessions_created_ = 0;
  std::map<std::string, uint64_t> executions_;
  std::array<uint64_t, kBuckets.size()> bucket_counts_{};
  uint64_t execution_count_ = 0;
  double execution_seconds_ = 0;
};

}  // namespace sbx::server
