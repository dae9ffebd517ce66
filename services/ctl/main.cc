// devtimectl: the operator's CLI. Talks gRPC to the collector only.
#include <cstdlib>
#include <iostream>

#include "CLI/CLI.hpp"
#include "proto/wire/channel.h"
#include "services/ctl/commands.h"
#include "services/ctl/detect_command.h"
#include "services/ctl/job_commands.h"
#include "services/ctl/regression_commands.h"
#include "services/ctl/report.h"
#include "services/ctl/run_diff.h"

namespace {

void AddFormatOption(CLI::App* command, devtime::ctl::Format* format) {
  command->add_option("--format", *format, "output format: table or json")
      ->transform(CLI::CheckedTransformer(
          std::map<std::string, devtime::ctl::Format>{{"table", devtime::ctl::Format::kTable},
                                                      {"json", devtime::ctl::Format::kJson}},
          CLI::ignore_case))
      ->capture_default_str();
}

}  // namespace

int main(int argc, char** argv) {
  using devtime::ctl::Format;
  const char* env_collector = std::getenv("DEVTIME_COLLECTOR");
  std::string collector = env_collector ? env_collector : "127.0.0.1:50051";
  int timeout_seconds = 30;

  CLI::App app{"devtimectl: look at device-time history kept by a devtime collector."};
  app.require_subcommand(1);
  app.add_option("--collector", collector, "collector gRPC address (env DEVTIME_COLLECTOR)")
      ->capture_default_str();
  app.add_option("--timeout", timeout_seconds, "seconds to wait for the collector")
      ->capture_default_str();
  std::string token_file, tls_ca, tls_cert, tls_key;
  app.add_option("--token-file", token_file,
                 "file with your token (else $DEVTIME_TOKEN or the file $DEVTIME_TOKEN_FILE)");
  app.add_option("--tls-ca", tls_ca, "PEM CA of the collector's certificate: connect with TLS");
  app.add_option("--tls-cert", tls_cert, "PEM client certificate (mutual TLS)");
  app.add_option("--tls-key", tls_key, "PEM key of --tls-cert");

  auto* runs = app.add_subcommand("runs", "stored profiling runs");
  runs->require_subcommand(1);
  devtime::ctl::RunsListOptions list;
  auto* runs_list = runs->add_subcommand("list", "list runs, newest first");
  runs_list->add_option("--model", list.model, "only this model");
  runs_list->add_option("--workload", list.workload, "only this workload");
  runs_list->add_option("--since", list.since,
                        "only runs started since: 2026-11-01, 2026-11-01T02:00:00Z or an age "
                        "like 7d, 12h");
  runs_list->add_option("--limit", list.limit, "at most this many runs (default 100, max 10000)");
  AddFormatOption(runs_list, &list.format);

  std::string run_id;
  Format show_format = Format::kTable;
  auto* runs_show = runs->add_subcommand("show", "one run with its operator table");
  runs_show->add_option("RUN_ID", run_id, "the run's id (a UUID)")->required();
  AddFormatOption(runs_show, &show_format);

  auto* models = app.add_subcommand("models", "models with stored runs");
  models->require_subcommand(1);
  Format models_format = Format::kTable;
  auto* models_list = models->add_subcommand("list", "list models and their workloads");
  AddFormatOption(models_list, &models_format);

  auto* jobs = app.add_subcommand("jobs", "scheduled profiling jobs");
  jobs->require_subcommand(1);
  std::string jobs_file, job_name, run_host;
  Format jobs_format = Format::kTable;
  unsigned history_limit = 50;
  auto* jobs_apply = jobs->add_subcommand(
      "apply", "create or update the jobs in a YAML file (see deploy/jobs.example.yaml)");
  jobs_apply->add_option("-f,--file", jobs_file, "jobs file")->required();
  auto* jobs_list = jobs->add_subcommand("list", "jobs with their next slot and last outcome");
  AddFormatOption(jobs_list, &jobs_format);
  auto* jobs_show = jobs->add_subcommand("show", "one job and its recent slots");
  jobs_show->add_option("NAME", job_name, "job name")->required();
  AddFormatOption(jobs_show, &jobs_format);
  auto* jobs_delete = jobs->add_subcommand("delete", "delete a job (its history is kept)");
  jobs_delete->add_option("NAME", job_name, "job name")->required();
  auto* jobs_run_now = jobs->add_subcommand("run-now", "run a job now on a matching agent");
  jobs_run_now->add_option("NAME", job_name, "job name")->required();
  jobs_run_now->add_option("--host", run_host, "only on this host");
  auto* jobs_history = jobs->add_subcommand(
      "history", "each slot of a job: ran, succeeded, failed (why) or missed (why)");
  jobs_history->add_option("NAME", job_name, "job name")->required();
  jobs_history->add_option("--limit", history_limit, "at most this many slots")
      ->capture_default_str();
  AddFormatOption(jobs_history, &jobs_format);

  auto* agents = app.add_subcommand("agents", "the agents that run jobs");
  agents->require_subcommand(1);
  Format agents_format = Format::kTable;
  auto* agents_list = agents->add_subcommand("list", "agents, their labels and when last seen");
  AddFormatOption(agents_list, &agents_format);
  std::string agent_name, agent_host;
  auto* agents_add = agents->add_subcommand(
      "add", "issue (or replace) an agent's token; prints it once (admin token needed)");
  agents_add->add_option("NAME", agent_name, "the agent's name (agent.yaml: name)")->required();
  agents_add->add_option("--host", agent_host, "the only host it may write runs for")->required();

  std::string compare_a, compare_b;
  auto* compare = app.add_subcommand("compare", "op-by-op difference of two runs (before, after)");
  compare->add_option("RUN_A", compare_a, "the earlier (baseline) run id")->required();
  compare->add_option("RUN_B", compare_b, "the later run id")->required();
  std::string check_run, check_baseline;
  devtime::ctl::CheckOptions check_options;
  auto* check = app.add_subcommand(
      "check", "exit 1 if RUN is significantly slower than BASELINE (a pre-merge gate)");
  check->add_option("--run", check_run, "the run to judge")->required();
  check->add_option("--against", check_baseline, "the baseline run")->required();
  check
      ->add_option("--min-change", check_options.min_change,
                   "smallest relative slowdown that fails (0.02 = 2 %)")
      ->capture_default_str();
  check
      ->add_option("--max-p", check_options.max_p,
                   "significance needed when both runs have per-step samples")
      ->capture_default_str();

  auto* regressions = app.add_subcommand("regressions", "detected regressions and their triage");
  regressions->require_subcommand(1);
  devtime::ctl::RegressionsListOptions regressions_list_options;
  auto* regressions_list = regressions->add_subcommand(
      "list", "regressions, newest first (default: suspected, open and acknowledged ones)");
  regressions_list->add_option("--state", regressions_list_options.states,
                               "only these states: suspected, open, acknowledged, resolved, "
                               "invalid (repeatable)");
  regressions_list->add_flag("--all", regressions_list_options.all, "every state");
  regressions_list->add_option("--model", regressions_list_options.model, "only this model");
  regressions_list->add_option("--workload", regressions_list_options.workload,
                               "only this workload");
  regressions_list->add_option("--limit", regressions_list_options.limit,
                               "at most this many (default 100)");
  AddFormatOption(regressions_list, &regressions_list_options.format);
  int64_t regression_id = 0;
  Format regression_format = Format::kTable;
  auto* regressions_show = regressions->add_subcommand(
      "show", "one regression: attribution (operators, layers, environment), series, history");
  regressions_show->add_option("ID", regression_id, "the regression's id")->required();
  AddFormatOption(regressions_show, &regression_format);
  devtime::ctl::TriageOptions triage;
  auto add_triage = [&](const char* name, const char* help, const char* to) {
    auto* command = regressions->add_subcommand(name, help);
    command->add_option("ID", triage.id, "the regression's id")->required();
    command->add_option("--by", triage.by, "who (default: $USER)");
    command->add_option("--reason", triage.reason, "why, for the history");
    command->callback([&triage, to] { triage.to = to; });
    return command;
  };
  add_triage("ack", "acknowledge: someone is on it (it keeps firing)", "acknowledged");
  auto* regressions_resolve = add_triage(
      "resolve", "resolve: fixed, or the new level accepted as the baseline", "resolved");
  regressions_resolve
      ->add_option("--as", triage.resolution,
                   "fixed (the series is back; the default) or accepted_baseline (the new "
                   "level is expected)")
      ->check(CLI::IsMember({"fixed", "accepted_baseline"}));
  add_triage("invalid", "not a regression (noise, a broken capture): ends its alert", "invalid");

  devtime::ctl::ReportOptions report_options;
  auto* report = app.add_subcommand(
      "report", "one model: history charts, latest run against its baseline, live regressions");
  report->add_option("--model", report_options.model, "the model")->required();
  report->add_option("--html", report_options.html_path,
                     "write a self-contained HTML page to this file (else a text summary)");
  report->add_option(
      "--since", report_options.since,
      "only runs started since: 2026-11-01, 2026-11-01T02:00:00Z or an age like 30d");
  report->add_option("--limit", report_options.limit, "at most this many runs, newest first")
      ->capture_default_str();

  std::function<int()> run_detect;
  devtime::ctl::AddDetectCommand(app, &run_detect);

  CLI11_PARSE(app, argc, argv);
  if (run_detect) return run_detect();  // offline: needs no collector

  auto creds = devtime::wire::LoadClientCredentials(token_file, tls_ca, tls_cert, tls_key);
  if (!creds.ok()) {
    std::cerr << "devtimectl: " << creds.status().message() << "\n";
    return 2;
  }
  if (creds->token.empty()) creds->token = devtime::wire::TokenFromEnvironment();
  auto channel = devtime::wire::ConnectCollector(collector, *creds);
  if (!channel.ok()) {
    std::cerr << "devtimectl: " << channel.status().message() << "\n";
    return 2;
  }
  auto stub = devtime::v1::Collector::NewStub(*channel);
  devtime::ctl::Session session{*stub, std::chrono::seconds(timeout_seconds), std::cout, std::cerr};
  if (*runs_list) return devtime::ctl::RunsList(session, list);
  if (*runs_show) return devtime::ctl::RunsShow(session, run_id, show_format);
  if (*models_list) return devtime::ctl::ModelsList(session, models_format);
  if (*jobs_apply) return devtime::ctl::JobsApply(session, jobs_file);
  if (*jobs_list) return devtime::ctl::JobsList(session, jobs_format);
  if (*jobs_show) return devtime::ctl::JobsShow(session, job_name, jobs_format);
  if (*jobs_delete) return devtime::ctl::JobsDelete(session, job_name);
  if (*jobs_run_now) return devtime::ctl::JobsRunNow(session, job_name, run_host);
  if (*jobs_history)
    return devtime::ctl::JobsHistory(session, job_name, history_limit, jobs_format);
  if (*agents_list) return devtime::ctl::AgentsList(session, agents_format);
  if (*agents_add) return devtime::ctl::AgentsAdd(session, agent_name, agent_host);
  if (*compare) return devtime::ctl::Compare(session, compare_a, compare_b);
  if (*check) return devtime::ctl::Check(session, check_run, check_baseline, check_options);
  if (*regressions_list) return devtime::ctl::RegressionsList(session, regressions_list_options);
  if (*regressions_show)
    return devtime::ctl::RegressionsShow(session, regression_id, regression_format);
  if (!triage.to.empty()) return devtime::ctl::RegressionsTriage(session, triage);
  if (*report) return devtime::ctl::Report(session, report_options);
  return 2;
}
