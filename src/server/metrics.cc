// Metrics: counting and the text exposition format.
#include "src/server/metrics.h"

#include <sstream>

namespace sbx::server {

void Metrics::CountRequest(int http_status) {
  std::lock_guard lock(mutex_);
  ++requests_[http_status];
}

void Metrics::CountSessionCreated() {
  std::lock_guard lock(mutex_);
  ++sessions_created_;
}

void Metrics::CountExecution(const std::string& status, double seconds) {
  std::lock_guard lock(mutex_);
  ++executions_[status];
  ++execution_count_;
  execution_seconds_ += seconds;
  for (size_t i = 0; i < kBuckets.size(); ++i) {
    if (seconds <= kBuckets[i]) ++bucket_counts_[i];
  }
}

std::string Metrics::Prometheus(const std::map<std::string, double>& gauges) const {
  std::lock_guard lock(mutex_);
  std::ostringstream out;
  for (const auto& [name, value] : gauges) {
    out << "# TYPE " << name << " gauge\n" << name << " " << value << "\n";
  }
  out << "# TYPE sbx_sessions_created_total counter\nsbx_sessions_created_total " << sessions_created_ << "\n";
  out << "# TYPE sbx_http_requests_total counter\n";
  for (const auto& [code, count] : requests_) {
    out << "sbx_http_requests_total{code=\"" << code << "\"} " << count << "\n";
  }
  out << "# TYPE sbx_executions_total counter\n";
  for (const auto& [status, count] : executions_) {
    out << "sbx_executions_total{status=\"" << status << "\"} " << count << "\n";
  }
  out << "# TYPE sbx_execution_seconds histogram\n";
  for (size_t i = 0; i < kBuckets.size(); ++i) {
    out << "sbx_execution_seconds_bucket{le=\"" << kBuckets[i] << "\"} " << bucket_counts_[i] << "\n";
  }
  out << "sbx_execution_seconds_bucket{le=\"+Inf\"} " << execution_count_ << "\n";
  out << "sbx_execution_seconds_sum " << execution_seconds_ << "\n";
  out << "sbx_execution_seconds_count " << execution_count_ << "\n";
  return out.str();
}

}  // namespace sbx::server
