#include "services/ctl/regression_commands.h"

#include <cstdlib>

#include "absl/strings/str_format.h"
#include "proto/wire/channel.h"
#include "proto/wire/json.h"
#include "proto/wire/names.h"
#include "proto/wire/time.h"
#include "services/ctl/table.h"

namespace devtime::ctl {
namespace {

using Align = TextTable::Align;

std::string Percent(double relative_change) {
  return absl::StrFormat("%+.1f%%", 100.0 * relative_change);
}

std::string TopOp(const v1::Regression& r) {
  for (const auto& op : r.attribution().ops()) {
    if (op.delta_us() > 0.0) return absl::StrFormat("%s %+.1f us", op.op(), op.delta_us());
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
      {"operator", "before us/step", "after us/step", "delta us", "share", "calls/step"},
      {Align::kLeft, Align::kRight, Align::kRight, Align::kRight, Align::kRight, Align::kRight});
  for (const auto& op : attribution.ops()) {
    ops.AddRow({op.op(), FormatMicros(op.before_us()), FormatMicros(op.after_us()),
                absl::StrFormat("%+.1f", op.delta_us()), FormatPercent(op.share()),
                absl::StrFormat("%g -> %g", op.before_calls(), op.after_calls())});
  }
  if (!ops.empty()) session.out << "\noperators (last good -> first bad run)\n" << ops.Render();
}

void PrintLayersAndEnvironment(const Session& session, const v1::Attribution& attribution) {
  TextTable layers({"layer", "before us/step", "after us/step", "delta us"},
                   {Align::kLeft, Align::kRight, Align::kRight, Align::kRight});
  for (const auto& layer : attribution.layers()) {
    layers.AddRow(
        {layer.layer() == attribution.dominant_layer() ? layer.layer() + " *" : layer.layer(),
         FormatMicros(layer.before_us()), FormatMicros(layer.after_us()),
         absl::StrFormat("%+.1f", layer.delta_us())});
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
      {"series", "before us", "after us", "change", "z", "baseline runs"},
      {Align::kLeft, Align::kRight, Align::kRight, Align::kRight, Align::kRight, Align::kRight});
  for (const auto& s : r.series()) {
    series.AddRow({s.op().empty() ? "(whole run)" : s.op(), FormatMicros(s.before()),
                   FormatMicros(s.after()), Percent(s.relative_change()),
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

void PrintRegression(const Session& session, const v1::Regression& r) {
  auto& out = session.out;
  out << "regression " << r.id() << "  " << StateCell(r) << ", " << r.severity() << "\n"
      << r.summary() << "\n\n"
      << "model       " << r.model() << " / " << r.workload()
      << (r.instance_type().empty() ? "" : " on " + r.instance_type()) << "\n"
      << "change      " << FormatMicros(r.before()) << " -> " << FormatMicros(r.after())
      << " us/step (" << Percent(r.relative_change()) << ", z = " << absl::StrFormat("%.1f", r.z())
      << ", confidence " << absl::StrFormat("%.4f", r.confidence()) << ")\n"
      << "since       " << wire::FormatTime(r.first_bad_at()) << "\n"
      << "last good   " << r.last_good_run_id() << "\n"
      << "first bad   " << r.first_bad_run_id() << "\n";
  if (!r.confirmation_run_id().empty() || r.confirmation_requested()) {
    out << "confirmed by "
        << (r.confirmation_run_id().empty() ? "(requested, not arrived yet)"
                                            : r.confirmation_run_id())
        << (r.confirmation_requested() ? " (confirmation run)" : " (next run)") << "\n";
  }
  if (!r.job().empty()) out << "job         " << r.job() << " on " << r.host() << "\n";
  PrintOps(session, r.attribution());
  PrintLayersAndEnvironment(session, r.attribution());
  PrintSeriesAndHistory(session, r);
}

std::string CurrentUser() {
  const char* user = std::getenv("USER");
  if (user == nullptr || *user == '\0') user = std::getenv("LOGNAME");
  return user != nullptr && *user != '\0' ? user : "";
}

}  // namespace

int RegressionsList(const Session& session, const RegressionsListOptions& options) {
  v1::ListRegressionsRequest request;
  request.set_model(options.model);
  request.set_workload(options.workload);
  request.set_limit(options.limit);
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
  v1::ListRegressionsResponse response;
  auto context = wire::MakeContext(session.timeout);
  if (auto status = session.stub.ListRegressions(context.get(), request, &response); !status.ok()) {
    return ReportError(session, status);
  }
  if (options.format == Format::kJson) {
    session.out << wire::ToJson(response) << "\n";
    return 0;
  }
  TextTable table({"id", "state", "severity", "model / workload", "change", "top operator",
                   "environment changes", "since (UTC)"},
                  {Align::kRight, Align::kLeft, Align::kLeft, Align::kLeft, Align::kRight,
                   Align::kLeft, Align::kLeft, Align::kLeft});
  for (const auto& r : response.regressions()) {
    table.AddRow({std::to_string(r.id()), StateCell(r), r.severity(),
                  r.model() + " / " + r.workload(), Percent(r.relative_change()), TopOp(r),
                  EnvChanges(r), wire::FormatTime(r.first_bad_at())});
  }
  session.out << (table.empty() ? "no regressions\n" : table.Render());
  return 0;
}

int RegressionsShow(const Session& session, int64_t id, Format format) {
  v1::GetRegressionRequest request;
  request.set_id(id);
  v1::Regression response;
  auto context = wire::MakeContext(session.timeout);
  if (auto status = session.stub.GetRegression(context.get(), request, &response); !status.ok()) {
    return ReportError(session, status);
  }
  if (format == Format::kJson) {
    session.out << wire::ToJson(response) << "\n";
  } else {
    PrintRegression(session, response);
  }
  return 0;
}

int RegressionsTriage(const Session& session, const TriageOptions& options) {
  v1::TransitionRegressionRequest request;
  request.set_id(options.id);
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
  auto context = wire::MakeContext(session.timeout);
  if (auto status = session.stub.TransitionRegression(context.get(), request, &response);
      !status.ok()) {
    return ReportError(session, status);
  }
  session.out << "regression " << response.id() << " is now " << StateCell(response) << "\n";
  return 0;
}

}  // namespace devtime::ctl
