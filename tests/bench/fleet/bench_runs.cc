#include "tests/bench/fleet/bench_runs.h"

#include <charconv>
#include <chrono>
#include <cstdio>
#include <random>
#include <tuple>

#include "pqxx/pqxx"
#include "tests/support/sample_runs.h"

namespace devtime::bench {
namespace {

std::string NewRunId() {
  static thread_local std::mt19937_64 random{std::random_device{}()};
  uint64_t high = random(), low = random();
  char text[37];
  std::snprintf(text, sizeof text, "%08x-%04x-4%03x-%04x-%012llx",
                static_cast<unsigned>(high >> 32), static_cast<unsigned>(high >> 16) & 0xffff,
                static_cast<unsigned>(high) & 0xfff,
                0x8000 | (static_cast<unsigned>(low >> 48) & 0x3fff),
                static_cast<unsigned long long>(low & 0xffffffffffffULL));
  return text;
}

std::string PgArray(const google::protobuf::RepeatedField<double>& values) {
  std::string out = "{";
  char buffer[32];
  for (int i = 0; i < values.size(); ++i) {
    if (i) out += ',';
    auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, values[i]);
    out.append(buffer, end);
  }
  return out + "}";
}

void CopyRun(pqxx::work& tx, const v1::RunSummary& run) {
  pqxx::stream_to ops{
      tx, "bench_copy_op_stats",
      std::vector<std::string>{"run_id", "op", "calls", "self_cpu_us", "total_cpu_us",
                               "self_device_us", "total_device_us", "step_self_device_us"}};
  for (const auto& op : run.ops()) {
    ops << std::make_tuple(run.identity().run_id(), op.name(), static_cast<long long>(op.calls()),
                           op.self_cpu_us(), op.total_cpu_us(), op.self_device_us(),
                           op.total_device_us(), PgArray(op.step_self_device_us()));
  }
  ops.complete();
  pqxx::stream_to steps{tx, "bench_copy_run_steps",
                        std::vector<std::string>{"run_id", "step", "device_us", "cpu_us"}};
  for (const auto& step : run.steps()) {
    steps << std::make_tuple(run.identity().run_id(), static_cast<long long>(step.step()),
                             step.device_us(), step.cpu_us());
  }
  steps.complete();
}

}  // namespace

v1::RunSummary BenchRun(int uploader, int sequence, int ops, int steps) {
  // The sample run's identity, environment and capture (tests/support), on a larger host,
  // with the fleet's operators and steps instead of RMSNorm's and no artifacts.
  long long started = 1795917600LL + sequence * 86400LL;
  v1::RunSummary run =
      testing::NaiveRmsNormRun(NewRunId(), "w" + std::to_string(uploader), started);
  auto* id = run.mutable_identity();
  id->set_job("bench-nightly");
  id->set_model("bench");
  id->set_host("bench-uploader-" + std::to_string(uploader));
  id->set_instance_type("trn1.32xlarge");
  run.mutable_finished_at()->set_seconds(started + 600);
  run.mutable_capture()->set_active_steps(static_cast<uint32_t>(steps));
  run.clear_ops();
  run.clear_steps();
  run.clear_layers();
  run.clear_artifacts();
  std::mt19937 noise(static_cast<unsigned>(uploader * 7919 + sequence));
  std::uniform_real_distribution<double> jitter(0.98, 1.02);
  double step_device = 0;
  for (int i = 0; i < ops; ++i) {
    auto* op = run.add_ops();
    char name[64];
    std::snprintf(name, sizeof name, "aten::op_%04d", i);
    op->set_name(name);
    double per_step = 5.0 + (i % 97) * 3.5;  // µs of device time per step
    op->set_calls(static_cast<uint64_t>(steps) * (1 + i % 4));
    op->set_self_cpu_us(8.0 * steps);
    op->set_total_cpu_us(10.0 * steps);
    double total = 0;
    for (int s = 0; s < steps; ++s) {
      double value = per_step * jitter(noise);
      op->add_step_self_device_us(value);
      total += value;
    }
    op->set_self_device_us(total);
    op->set_total_device_us(total);
    step_device += total / steps;
  }
  for (int s = 0; s < steps; ++s) {
    auto* step = run.add_steps();
    step->set_step(static_cast<uint32_t>(3 + s));
    step->set_device_us(step_device * jitter(noise));
    step->set_cpu_us(8.0 * ops);
  }
  auto* layer = run.add_layers();
  layer->set_layer(v1::LAYER_DEVICE_EXECUTION);
  layer->set_time_us(step_device * steps);
  return run;
}

CopyResult RawCopy(pqxx::connection& c, const std::vector<v1::RunSummary>& runs,
                   bool one_transaction) {
  {
    pqxx::nontransaction tx{c};
    tx.exec("DROP TABLE IF EXISTS bench_copy_op_stats, bench_copy_run_steps");
    tx.exec(
        "CREATE TABLE bench_copy_op_stats (run_id uuid NOT NULL, op text NOT NULL,"
        " calls bigint NOT NULL, self_cpu_us double precision NOT NULL,"
        " total_cpu_us double precision NOT NULL, self_device_us double precision NOT NULL,"
        " total_device_us double precision NOT NULL,"
        " step_self_device_us double precision[] NOT NULL, PRIMARY KEY (run_id, op))");
    tx.exec(
        "CREATE TABLE bench_copy_run_steps (run_id uuid NOT NULL, step integer NOT NULL,"
        " device_us double precision NOT NULL, cpu_us double precision NOT NULL,"
        " PRIMARY KEY (run_id, step))");
  }
  CopyResult result;
  auto start = std::chrono::steady_clock::now();
  if (one_transaction) {
    pqxx::work tx{c};
    for (const auto& run : runs) CopyRun(tx, run);
    tx.commit();
  } else {
    for (const auto& run : runs) {
      pqxx::work tx{c};
      CopyRun(tx, run);
      tx.commit();
    }
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (const auto& run : runs) result.op_rows += run.ops_size();
  pqxx::nontransaction tx{c};
  tx.exec("DROP TABLE bench_copy_op_stats, bench_copy_run_steps");
  return result;
}

}  // namespace devtime::bench
