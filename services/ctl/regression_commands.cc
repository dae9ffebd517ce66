#include "services/ctl/regression_commands.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <memory>
#include <optional>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "proto/wire/exit_codes.h"
#include "proto/wire/names.h"
#include "proto/wire/time.h"
#include "services/ctl/table.h"
#include "services/ctl/trace_commands.h"

namespace devtime::ctl {
namespace {

using Align = TextTable::Align;

// A stored change (the collector computed it with wire::ChangeOf): "+482.0 %".
std::string Percent(double relative_change) { return FormatFraction(relative_change); }

// "step", or "drift" (an unset kind is a step: collectors before kinds had only steps).
std::string Kind(const v1::Regression& r) { return r.kind().empty() ? "step" : r.kind(); }

// A step's change, a latency regression's "+15.0 % device_p99", or a drift's "+3.1 %/30 runs
// since <run>".
std::string ChangeCell(const v1::Regression& r) {
  if (r.kind() == "latency") return Percent(r.relative_change()) + " " + r.metric();
  if (r.kind() != "drift") return Percent(r.relative_change());
  return absl::StrFormat("%+.1f %%/30 runs since %s", 100.0 * r.drift().slope_per_30(),
                         r.drift().start_run_id());
}

// A latency regression's level of its metric: a time (µs), or error_rate's fraction.
std::string Level(const v1::Regression& r, double value) {
  return r.metric() == "error_rate" ? FormatPercent(value) : ScaledTime(value);
}

// A latency regression (issue 24) has no operators: the hosts that moved and the nightly
// profile it links to stand in the list's operator column.
std::string HostsAndNightly(const v1::Regression& r) {
  constexpr int kListed = 3;
  std::vector<std::string> hosts;
  for (const auto& host : r.latency().hosts()) {
    if (static_cast<int>(hosts.size()) == kListed) {
      hosts.push_back(absl::StrFormat("+%d more", r.latency().hosts_size() - kListed));
      break;
    }
    hosts.push_back(host.host());
  }
  std::string text = "hosts " + (hosts.empty() ? std::string("(none)") : absl::StrJoin(hosts, " "));
  if (!r.latency().nightly_run_id().empty()) {
    text += "; nightly " + r.latency().nightly_run_id().substr(0, 8);
  }
  return text;
}

// Where a regression starts: the first bad run's time, or a latency regression's window.
std::string SinceCell(const v1::Regression& r) {
  if (r.kind() != "latency") return wire::FormatTime(r.first_bad_at());
  return wire::FormatTime(r.latency().window_start()) + " .. " +
         wire::FormatTime(r.latency().window_end());
}

std::string TopOp(const v1::Regression& r) {
  if (r.kind() == "latency") return HostsAndNightly(r);
  for (const auto& op : r.attribution().ops()) {
    if (op.delta_us() > 0.0) return op.op() + " " + SignedTime(op.delta_us());
  }
  return "-";
}

std::string EnvChanges(const v1::Regression& r) {
  std::string text;
  for (const auto& change : r.attribution().environment()) {
    absl::StrAppendFormat(&text, "%s%s %s -> %s", text.empty() ? "" : ", ", change.key(),
                          change.before().empty() ? "(none)" : change.before(),
                          change.after().empty() ? "(none)" : change.after());
  }
  return text.empty() ? "-" : text;
}

std::string StateCell(const v1::Regression& r) {
  std::string state = wire::RegressionStateName(r.state());
  if (r.state() == v1::REGRESSION_STATE_RESOLVED) {
    state += " (" + wire::ResolutionName(r.resolution()) + ")";
  }
  return state;
}

void PrintOps(const Session& session, const v1::Attribution& attribution) {
  TextTable ops(
      {"operator", "before/step", "after/step", "delta/step", "share", "calls/step"},
      {Align::kLeft, Align::kRight, Align::kRight, Align::kRight, Align::kRight, Align::kRight});
  for (const auto& op : attribution.ops()) {
    ops.AddRow({op.op(), ScaledTime(op.before_us()), ScaledTime(op.after_us()),
                SignedTime(op.delta_us()), FormatPercent(op.share()),
                absl::StrFormat("%g -> %g", op.before_calls(), op.after_calls())});
  }
  if (!ops.empty()) session.out << "\noperators (last good -> first bad run)\n" << ops.Render();
}

void PrintLayersAndEnvironment(const Session& session, const v1::Attribution& attribution) {
  TextTable layers({"layer", "before/step", "after/step", "delta/step"},
                   {Align::kLeft, Align::kRight, Align::kRight, Align::kRight});
  for (const auto& layer : attribution.layers()) {
    layers.AddRow(
        {layer.layer() == attribution.dominant_layer() ? layer.layer() + " *" : layer.layer(),
         ScaledTime(layer.before_us()), ScaledTime(layer.after_us()),
         SignedTime(layer.delta_us())});
  }
  if (!layers.empty()) session.out << "\nlayers (* grew most)\n" << layers.Render();
  TextTable env({"environment key", "last good run", "first bad run"});
  for (const auto& change : attribution.environment()) {
    env.AddRow({change.key(), change.before().empty() ? "(none)" : change.before(),
                change.after().empty() ? "(none)" : change.after()});
  }
  if (!env.empty()) session.out << "\nenvironment changes\n" << env.Render();
}

void PrintSeriesAndHistory(const Session& session, const v1::Regression& r) {
  TextTable series(
      {"series", "baseline/step", "first bad/step", "change", "z", "baseline runs"},
      {Align::kLeft, Align::kRight, Align::kRight, Align::kRight, Align::kRight, Align::kRight});
  for (const auto& s : r.series()) {
    series.AddRow({s.op().empty() ? "(whole run)" : s.op(), ScaledTime(s.before()),
                   ScaledTime(s.after()), Percent(s.relative_change()),
                   absl::StrFormat("%.1f", s.z()), std::to_string(s.baseline_runs())});
  }
  if (!series.empty()) session.out << "\nseries that moved\n" << series.Render();
  TextTable history({"at (UTC)", "from", "to", "by", "reason"});
  for (const auto& t : r.transitions()) {
    history.AddRow(
        {wire::FormatTime(t.at()),
         t.from() == v1::REGRESSION_STATE_UNSPECIFIED ? "-" : wire::RegressionStateName(t.from()),
         wire::RegressionStateName(t.to()), t.actor(), t.reason()});
  }
  if (!history.empty()) session.out << "\nhistory\n" << history.Render();
}

// What the change is measured against (proto/wire/change.h): a step's baseline is the
// median of the runs since the last change point, a drift's the fitted level at its start.
std::string BaselineNote(const v1::Regression& r) {
  if (r.kind() == "drift") return "(fitted level at the drift's start -> at its newest run)";
  for (const auto& s : r.series()) {
    if (s.op().empty() && s.baseline_runs() > 0) {
      return absl::StrFormat("(first bad run against the median of %d baseline runs)",
                             s.baseline_runs());
    }
  }
  return "(first bad run against the median of the baseline runs)";
}

// The culprit hunt (issue 25): its state and verdict, then each culprit run.
void PrintHunt(const Session& session, const v1::Regression& r) {
  if (!r.has_hunt() || r.hunt().state() == v1::HUNT_STATE_UNSPECIFIED) return;
  const v1::Hunt& hunt = r.hunt();
  static const char* kStates[] = {"", "hunting", "culprit_found", "no_culprit", "inconclusive"};
  auto& out = session.out;
  out << "\nculprit hunt  " << kStates[hunt.state() < 5 ? hunt.state() : 0] << ", "
      << hunt.runs_spent() << " of " << hunt.budget() << " runs";
  if (hunt.has_finished_at()) {
    out << ", verdict after " << (hunt.finished_at().seconds() - hunt.started_at().seconds())
        << " s";
  }
  out << " (started by " << hunt.started_by() << ")\n";
  if (!hunt.verdict().empty()) out << hunt.verdict() << "\n";
  TextTable runs({"culprit run", "pins", "per step", "judged", "run"});
  for (const auto& run : hunt.runs()) {
    std::string pins;
    for (const auto& [key, value] : run.pins())
      pins += (pins.empty() ? "" : ", ") + key + "=" + value;
    runs.AddRow({run.purpose(), pins, run.run_id().empty() ? "" : ScaledTime(run.value()),
                 run.judgement().empty() ? "waiting" : run.judgement(), run.run_id().substr(0, 8)});
  }
  if (!runs.empty()) out << runs.Render();
}

// A latency regression (issue 24): its metric's change, the windows, the hosts that moved,
// the nightly profile that leads to the per-operator view.
void PrintLatencyRegression(const Session& session, const v1::Regression& r) {
  auto& out = session.out;
  const v1::LatencyWindow& w = r.latency();
  out << "change      " << r.metric() << " " << Level(r, r.before()) << " -> "
      << Level(r, r.after()) << " (" << Percent(r.relative_change()) << ", confidence "
      << absl::StrFormat("%.4f", r.confidence()) << ")\n"
      << "            (hourly windows merged over hosts, daily cycle taken out)\n"
      << "window      " << wire::FormatTime(w.window_start()) << " .. "
      << wire::FormatTime(w.window_end()) << " (last good window from "
      << wire::FormatTime(w.last_good_window()) << ")\n"
      << "nightly     "
      << (w.nightly_run_id().empty()
              ? std::string("(no nightly profile of the model)")
              : w.nightly_run_id() + " (devtimectl runs show " + w.nightly_run_id().substr(0, 8) +
                    ": the per-operator view)")
      << "\n";
  TextTable hosts({"host that moved", "before", "after", "change"},
                  {Align::kLeft, Align::kRight, Align::kRight, Align::kRight});
  for (const auto& host : w.hosts()) {
    hosts.AddRow({host.host(), Level(r, host.before()), Level(r, host.after()),
                  host.before() > 0 ? Percent(host.after() / host.before() - 1) : "-"});
  }
  if (!hosts.empty()) out << "\nhosts (" << r.metric() << ")\n" << hosts.Render();
  TextTable env({"environment key", "before", "from the window"});
  for (const auto& change : r.attribution().environment()) {
    env.AddRow({change.key(), change.before().empty() ? "(none)" : change.before(),
                change.after().empty() ? "(none)" : change.after()});
  }
  if (!env.empty()) out << "\nenvironment changes\n" << env.Render();
  TextTable series({"metric", "before", "after", "change"},
                   {Align::kLeft, Align::kRight, Align::kRight, Align::kRight});
  for (const auto& s : r.series()) {
    const bool rate = s.metric() == "error_rate";
    series.AddRow({s.metric(), rate ? FormatPercent(s.before()) : ScaledTime(s.before()),
                   rate ? FormatPercent(s.after()) : ScaledTime(s.after()),
                   Percent(s.relative_change())});
  }
  if (!series.empty()) out << "\nseries that moved\n" << series.Render();
}

void PrintRegression(const Session& session, const v1::Regression& r) {
  auto& out = session.out;
  if (r.kind() == "latency") {
    out << "regression " << r.id() << "  " << StateCell(r) << ", " << r.severity() << ", "
        << Kind(r) << " (between the nights)\n"
        << r.summary() << "\n\n"
        << "model       " << r.model() << " / " << r.workload()
        << (r.instance_type().empty() ? "" : " on " + r.instance_type()) << "\n";
    PrintLatencyRegression(session, r);
    v1::Regression history;  // the transitions only: the series are printed above
    *history.mutable_transitions() = r.transitions();
    PrintSeriesAndHistory(session, history);
    return;
  }
  out << "regression " << r.id() << "  " << StateCell(r) << ", " << r.severity() << ", " << Kind(r)
      << "\n"
      << r.summary() << "\n\n"
      << "model       " << r.model() << " / " << r.workload()
      << (r.instance_type().empty() ? "" : " on " + r.instance_type()) << "\n"
      << "change      " << ScaledTime(r.before()) << " -> " << ScaledTime(r.after())
      << " per step (" << Percent(r.relative_change()) << ", z = " << absl::StrFormat("%.1f", r.z())
      << ", confidence " << absl::StrFormat("%.4f", r.confidence()) << ")\n"
      << "            " << BaselineNote(r) << "\n";
  if (r.kind() == "drift") {
    out << "drift       " << ChangeCell(r) << " (" << r.drift().runs() << " runs, "
        << SignedTime(r.drift().slope()) << "/step per run, "
        << absl::StrFormat("Kendall tau %.2f, p = %.2g", r.drift().kendall_tau(),
                           r.drift().p_value())
        << ")\n"
        << "newest      " << r.drift().end_run_id() << " at "
        << wire::FormatTime(r.drift().end_at()) << "\n";
  }
  out << "since       " << wire::FormatTime(r.first_bad_at()) << "\n"
      << "last good   " << r.last_good_run_id() << "\n"
      << (r.kind() == "drift" ? "detected by " : "first bad   ") << r.first_bad_run_id() << "\n";
  if (!r.confirmation_run_id().empty() || r.confirmation_requested()) {
    out << "confirmed by "
        << (r.confirmation_run_id().empty() ? "(requested, not arrived yet)"
                                            : r.confirmation_run_id())
        << (r.confirmation_requested() ? " (confirmation run)" : " (next run)") << "\n";
  }
  if (!r.job().empty()) out << "job         " << r.job() << " on " << r.host() << "\n";
  PrintRegressionTraces(out, r);
  PrintOps(session, r.attribution());
  PrintLayersAndEnvironment(session, r.attribution());
  PrintHunt(session, r);
  PrintSeriesAndHistory(session, r);
}

void PrintRegressions(const Session& session, const v1::ListRegressionsResponse& response,
                      Format format) {
  if (format == Format::kIds) {
    for (const auto& r : response.regressions()) session.out << r.id() << "\n";
    return;
  }
  TextTable table({"id", "state", "severity", "model / workload", "kind", "change", "top operator",
                   "environment changes", "since (UTC)"},
                  {Align::kRight, Align::kLeft, Align::kLeft, Align::kLeft, Align::kLeft,
                   Align::kRight, Align::kLeft, Align::kLeft, Align::kLeft});
  for (const auto& r : response.regressions()) {
    table.AddRow({std::to_string(r.id()), StateCell(r), r.severity(),
                  r.model() + " / " + r.workload(), Kind(r), ChangeCell(r), TopOp(r), EnvChanges(r),
                  SinceCell(r)});
  }
  session.out << (table.empty() ? "no regressions\n" : table.Render());
}

constexpr char kWhatAnIdIs[] =
    "a regression id is a number, as `devtimectl regressions list` shows; a run id (or a "
    "prefix of one) names the regression that run opened";

// A regression's id: digits, fewer than a run id prefix has (8), so that "08066244" is the
// run it looks like (ten million regressions are not in sight).
bool IsNumber(const std::string& text) {
  return !text.empty() && text.size() < 8 &&
         std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c); });
}

// What a run reference may look like (collector.proto ResolveRun judges the rest).
bool MayBeRunRef(const std::string& text) {
  return text == "latest" ||
         (!text.empty() && std::all_of(text.begin(), text.end(), [](unsigned char c) {
           return std::isxdigit(c) || c == '-';
         }));
}

// Whether `r` is the regression `run_id` opened (its first bad run), else one it took part
// in as the run that confirmed it or the newest run of a drift: 2, 1, 0.
int RunRole(const v1::Regression& r, const std::string& run_id) {
  if (r.first_bad_run_id() == run_id) return 2;
  return r.confirmation_run_id() == run_id || r.drift().end_run_id() == run_id ? 1 : 0;
}

// The regression the run `ref` names (see RunRole): its id in *id, or the exit code.
std::optional<int> RegressionOfRun(const Session& session, const std::string& ref, int64_t* id) {
  v1::ResolveRunRequest resolve;
  resolve.set_ref(ref);
  v1::RunInfo run;
  if (auto failed = Call(session, &Stub::ResolveRun, resolve, &run)) return failed;
  const std::string& run_id = run.identity().run_id();
  v1::ListRegressionsRequest request;
  request.set_model(run.identity().model());
  request.set_workload(run.identity().workload());
  for (int state = v1::REGRESSION_STATE_UNSPECIFIED + 1; v1::RegressionState_IsValid(state);
       ++state) {
    request.add_states(static_cast<v1::RegressionState>(state));
  }
  v1::ListRegressionsResponse all;
  if (auto status = InvokeAll(session, &Stub::ListRegressions, request, 0,
                              &v1::ListRegressionsResponse::mutable_regressions, &all);
      !status.ok()) {
    return ReportError(session, status);
  }
  std::vector<int64_t> best;
  int best_role = 0;
  for (const v1::Regression& r : all.regressions()) {
    const int role = RunRole(r, run_id);
    if (role == 0 || role < best_role) continue;
    if (role > best_role) best.clear();
    best_role = role;
    best.push_back(r.id());
  }
  if (best.empty()) {
    session.err << "devtimectl: run " << run_id << " opened no regression; " << kWhatAnIdIs << "\n";
    return wire::kExitNotFound;
  }
  if (best.size() > 1) {
    session.err << "devtimectl: run " << run_id << " is in regressions "
                << absl::StrJoin(best, ", ") << ": give one of these ids\n";
    return wire::kExitUsage;
  }
  *id = best.front();
  return std::nullopt;
}

// Refuses, while parsing, what is neither a regression id nor a run reference.
CLI::Validator RegressionIdValidator() {
  return CLI::Validator(
      [](const std::string& text) -> std::string {
        if (IsNumber(text) || MayBeRunRef(text)) return "";
        return "'" + text + "' is not a regression: " + kWhatAnIdIs;
      },
      "");
}

std::string CurrentUser() {
  const char* user = std::getenv("USER");
  if (user == nullptr || *user == '\0') user = std::getenv("LOGNAME");
  return user != nullptr && *user != '\0' ? user : "";
}

}  // namespace

std::optional<int> ResolveRegressionId(const Session& session, const std::string& text,
                                       int64_t* id) {
  if (IsNumber(text)) {
    *id = std::stoll(text);
    return std::nullopt;
  }
  std::string ref = text;
  for (char& c : ref) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return RegressionOfRun(session, ref, id);
}

int RegressionsList(const Session& session, const RegressionsListOptions& options) {
  v1::ListRegressionsRequest request;
  request.set_model(options.model);
  request.set_workload(options.workload);
  std::vector<std::string> states = options.states;
  if (options.all) states = {"suspected", "open", "acknowledged", "resolved", "invalid"};
  for (const std::string& name : states) {
    v1::RegressionState state = wire::RegressionStateFromName(name);
    if (state == v1::REGRESSION_STATE_UNSPECIFIED) {
      session.err << "devtimectl: --state: unknown state '" << name
                  << "' (suspected, open, acknowledged, resolved, invalid)\n";
      return 2;
    }
    request.add_states(state);
  }
  return CallAllAndPrint(session, &Stub::ListRegressions, request, options.limit,
                         &v1::ListRegressionsResponse::mutable_regressions, options.format,
                         [&](const v1::ListRegressionsResponse& response) {
                           PrintRegressions(session, response, options.format);
                         });
}

int RegressionsShow(const Session& session, const std::string& id, Format format) {
  v1::GetRegressionRequest request;
  int64_t number = 0;
  if (auto failed = ResolveRegressionId(session, id, &number)) return *failed;
  request.set_id(number);
  return CallAndPrint(session, &Stub::GetRegression, request, format,
                      [&](const v1::Regression& r) { PrintRegression(session, r); });
}

int RegressionsTriage(const Session& session, const TriageOptions& options) {
  v1::TransitionRegressionRequest request;
  int64_t id = 0;
  if (auto failed = ResolveRegressionId(session, options.id, &id)) return *failed;
  request.set_id(id);
  request.set_to(wire::RegressionStateFromName(options.to));
  if (request.to() == v1::REGRESSION_STATE_RESOLVED) {
    request.set_resolution(options.resolution.empty()
                               ? v1::RESOLUTION_FIXED
                               : wire::ResolutionFromName(options.resolution));
  }
  request.set_actor(options.by.empty() ? CurrentUser() : options.by);
  request.set_reason(options.reason);
  if (request.actor().empty()) {
    session.err << "devtimectl: who are you? pass --by NAME (no $USER set)\n";
    return 2;
  }
  v1::Regression response;
  if (auto failed = Call(session, &Stub::TransitionRegression, request, &response)) return *failed;
  session.out << "regression " << response.id() << " is now " << StateCell(response) << "\n";
  return 0;
}

struct HuntOptions {
  std::string id;
  std::vector<std::string> keys;
  uint32_t budget = 0;
  std::string by;
};

int RegressionsHunt(const Session& session, const HuntOptions& options) {
  v1::HuntRegressionRequest request;
  int64_t id = 0;
  if (auto failed = ResolveRegressionId(session, options.id, &id)) return *failed;
  request.set_id(id);
  for (const auto& key : options.keys) request.add_keys(key);
  request.set_budget(options.budget);
  request.set_actor(options.by.empty() ? CurrentUser() : options.by);
  if (request.actor().empty()) {
    session.err << "devtimectl: who are you? pass --by NAME (no $USER set)\n";
    return 2;
  }
  v1::Regression response;
  if (auto failed = Call(session, &Stub::HuntRegression, request, &response)) return *failed;
  session.out << "regression " << response.id() << ": culprit hunt started over "
              << response.hunt().keys_size() << " key(s), budget " << response.hunt().budget()
              << " runs; `devtimectl regressions show " << response.id() << "` follows it\n";
  return 0;
}

void AddRegressionCommands(CLI::App& app, CommandContext& context) {
  static constexpr char kIdHelp[] =
      "the regression's id (a number), or the run that opened it (a run id, a prefix of one)";
  auto* regressions = app.add_subcommand("regressions", "detected regressions and their triage");
  regressions->require_subcommand(1);
  auto list = std::make_shared<RegressionsListOptions>();
  auto* list_command = regressions->add_subcommand(
      "list", "regressions, newest first (default: suspected, open and acknowledged ones)");
  list_command->add_option("--state", list->states,
                           "only these states: suspected, open, acknowledged, resolved, "
                           "invalid (repeatable)");
  list_command->add_flag("--all", list->all, "every state");
  list_command->add_option("--model", list->model, "only this model");
  list_command->add_option("--workload", list->workload, "only this workload");
  list_command->add_option("--limit", list->limit, "at most this many (default 100, 0 = all)");
  AddListFormatOption(list_command, &list->format);
  OnParsed(list_command, context, [list](const Session& s) { return RegressionsList(s, *list); });

  struct ShowOptions {
    std::string id;
    Format format = Format::kTable;
  };
  auto show = std::make_shared<ShowOptions>();
  auto* show_command = regressions->add_subcommand(
      "show", "one regression: attribution (operators, layers, environment), series, history");
  show_command->add_option("ID", show->id, kIdHelp)->required()->check(RegressionIdValidator());
  AddFormatOption(show_command, &show->format);
  OnParsed(show_command, context,
           [show](const Session& s) { return RegressionsShow(s, show->id, show->format); });

  // ack, resolve and invalid: one transition each, to the state `to`.
  auto add_triage = [&](const char* name, const char* help, const char* to) {
    auto triage = std::make_shared<TriageOptions>();
    triage->to = to;
    auto* command = regressions->add_subcommand(name, help);
    command->add_option("ID", triage->id, kIdHelp)->required()->check(RegressionIdValidator());
    command->add_option("--by", triage->by, "who (default: $USER)");
    command->add_option("--reason", triage->reason, "why, for the history");
    OnParsed(command, context,
             [triage](const Session& s) { return RegressionsTriage(s, *triage); });
    return std::pair{command, triage};
  };
  add_triage("ack", "acknowledge: someone is on it (it keeps firing)", "acknowledged");
  auto [resolve, resolve_options] = add_triage(
      "resolve", "resolve: fixed, or the new level accepted as the baseline", "resolved");
  resolve
      ->add_option("--as", resolve_options->resolution,
                   "fixed (the series is back; the default) or accepted_baseline (the new "
                   "level is expected)")
      ->check(CLI::IsMember({"fixed", "accepted_baseline"}));
  add_triage("invalid", "not a regression (noise, a broken capture): ends its alert", "invalid");

  auto hunt = std::make_shared<HuntOptions>();
  auto* hunt_command = regressions->add_subcommand(
      "hunt", "start (or re-run) the culprit hunt: re-run the job with changed keys pinned back");
  hunt_command->add_option("ID", hunt->id, kIdHelp)->required()->check(RegressionIdValidator());
  hunt_command
      ->add_option("--keys", hunt->keys,
                   "only these changed environment keys (default: every one the job can pin)")
      ->delimiter(',');
  hunt_command->add_option("--budget", hunt->budget,
                           "culprit runs it may spend (default: the collector's --hunt-budget)");
  hunt_command->add_option("--by", hunt->by, "who (default: $USER)");
  OnParsed(hunt_command, context, [hunt](const Session& s) { return RegressionsHunt(s, *hunt); });
}

}  // namespace devtime::ctl
