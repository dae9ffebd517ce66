#include "services/ctl/check_output.h"

#include <cmath>

#include "absl/strings/str_format.h"
#include "proto/wire/exit_codes.h"
#include "services/ctl/report_chart.h"
#include "services/ctl/report_html.h"  // HtmlEscape: also right for XML text and attributes
#include "services/ctl/table.h"

namespace devtime::ctl {
namespace {

const char* KindName(OpDelta::Kind kind) {
  static constexpr const char* kNames[] = {"", "added", "removed"};  // OpDelta::Kind's order
  return kNames[static_cast<int>(kind)];
}

std::string Percent(const OpDelta& op) {
  if (op.kind != OpDelta::Kind::kChanged || op.before_us <= 0) return KindName(op.kind);
  return FormatChange(wire::ChangeOf(op.before_us, op.after_us));
}

std::string Summary(const CheckVerdict& v) {
  std::string text = absl::StrFormat(
      "%s %s → %s (%s", TimeLabel(v.diff), ScaledTime(v.diff.before_us),
      ScaledTime(v.diff.after_us), FormatChange(wire::ChangeOf(v.diff.before_us, v.diff.after_us)));
  if (v.diff.tested) text += absl::StrFormat(", p = %.3g", v.diff.p_value);
  return text + absl::StrFormat("); fails at ≥ %s%s", FormatFraction(v.options.min_change),
                                v.diff.tested ? absl::StrFormat(" with p ≤ %g", v.options.max_p)
                                              : std::string(" (too few steps for a t-test)"));
}

// Markdown table cells: a | would end the cell, a backtick the code span.
std::string CodeCell(const std::string& text) {
  std::string out;
  for (char c : text)
    out += (c == '|' ? std::string("\\|") : c == '`' ? std::string("'") : std::string(1, c));
  return "`" + out + "`";
}

// "across series (--allow-different): workload fused vs fused-pr": said whenever a
// comparison crossed the series identity on purpose, so nobody mistakes it for like with like.
std::string CrossedText(const CheckVerdict& v) {
  return "across series (--allow-different): " + DifferencesText(v.crossed);
}

// `text` with every control character but newline, tab and carriage return as '?': XML 1.0
// has no place for them, not even escaped, and a terminal escape has none in a comment.
std::string WithoutControls(std::string text) {
  for (char& c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if ((byte < 0x20 || byte == 0x7f) && c != '\n' && c != '\t' && c != '\r') c = '?';
  }
  return text;
}

std::string XmlText(const std::string& text) { return HtmlEscape(WithoutControls(text)); }

std::string Property(const std::string& name, const std::string& value) {
  return absl::StrFormat("      <property name=\"%s\" value=\"%s\"/>\n", XmlText(name),
                         XmlText(value));
}

// The JUnit document around one suite: its test cases (already rendered), counts and
// properties.
std::string JunitDocument(const std::string& suite, const std::vector<std::string>& cases,
                          int failures, int errors, const std::string& properties) {
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += absl::StrFormat(
      "<testsuites name=\"devtime check\" tests=\"%d\" failures=\"%d\" errors=\"%d\">\n",
      cases.size(), failures, errors);
  out += absl::StrFormat("  <testsuite name=\"%s\" tests=\"%d\" failures=\"%d\" errors=\"%d\">\n",
                         XmlText("devtime check " + suite), cases.size(), failures, errors);
  out += "    <properties>\n" + properties + "    </properties>\n";
  for (const std::string& c : cases) out += c;
  return out + "  </testsuite>\n</testsuites>\n";
}

std::string OpLine(const OpDelta& op) {
  return absl::StrFormat("%s %s → %s (%s, %s)", op.name, ScaledTime(op.before_us),
                         ScaledTime(op.after_us), SignedTime(op.after_us - op.before_us),
                         Percent(op));
}

}  // namespace

std::vector<OpDelta> SignificantOps(const CheckVerdict& verdict, std::size_t max_ops) {
  const double floor_us = verdict.options.min_change * verdict.diff.before_us;
  std::vector<OpDelta> ops;
  for (const OpDelta& op : verdict.diff.ops) {  // largest |Δ| first already
    if (ops.size() == max_ops) break;
    const bool moved = std::fabs(op.after_us - op.before_us) >= floor_us;
    if (op.kind != OpDelta::Kind::kChanged || moved) ops.push_back(op);
  }
  return ops;
}

std::string RenderCheckMarkdown(const CheckVerdict& v, std::size_t max_ops) {
  std::string out =
      absl::StrFormat("### devtime check: %s\n\n", v.regression ? "❌ REGRESSION" : "✅ OK");
  out += absl::StrFormat("**%s** against baseline **%s**\n\n", v.run, v.baseline);
  if (!v.crossed.empty()) out += absl::StrFormat("⚠️ %s\n\n", CrossedText(v));
  out += Summary(v) + "\n\n";
  const std::vector<OpDelta> ops = SignificantOps(v, max_ops);
  if (ops.empty()) {
    out += "No operator changed by the threshold or more.\n";
  } else {
    out +=
        "| operator | | before / step | after / step | Δ / step | Δ % |\n"
        "|---|---|---:|---:|---:|---:|\n";
    for (const OpDelta& op : ops) {
      out += absl::StrFormat("| %s | %s | %s | %s | %s | %s |\n", CodeCell(op.name),
                             KindName(op.kind), ScaledTime(op.before_us), ScaledTime(op.after_us),
                             SignedTime(op.after_us - op.before_us), Percent(op));
    }
  }
  if (!v.diff.environment.empty()) {
    out += "\nEnvironment changes:";
    for (const EnvChange& e : v.diff.environment) {
      out +=
          absl::StrFormat(" %s %s → %s;", CodeCell(e.key), e.before.empty() ? "(none)" : e.before,
                          e.after.empty() ? "(none)" : e.after);
    }
    out.back() = '\n';
  }
  return out;
}

std::string RenderCheckJunit(const CheckVerdict& v, std::size_t max_ops) {
  const std::vector<OpDelta> ops = SignificantOps(v, max_ops);
  std::vector<std::string> cases;
  int failures = 0;
  auto add_case = [&](const std::string& name, const std::string& failure,
                      const std::string& details) {
    std::string c = absl::StrFormat("    <testcase classname=\"devtime.check\" name=\"%s\"",
                                    XmlText(v.series + ": " + name));
    if (failure.empty()) {
      cases.push_back(c + "/>\n");
      return;
    }
    ++failures;
    cases.push_back(
        c +
        absl::StrFormat(
            ">\n      <failure type=\"regression\" message=\"%s\">%s</failure>\n    </testcase>\n",
            XmlText(failure), XmlText(details)));
  };
  std::string details = "run " + v.run + "\nbaseline " + v.baseline + "\n";
  if (!v.crossed.empty()) details += CrossedText(v) + "\n";
  add_case(TimeLabel(v.diff), v.regression ? Summary(v) : "",
           details + RenderDiff(v.diff, max_ops));
  for (const OpDelta& op : ops) {
    const bool slower = op.after_us > op.before_us;
    add_case("operator " + op.name, v.regression && slower ? OpLine(op) : "", OpLine(op));
  }
  std::string properties = Property("run", v.run_id) + Property("run_label", v.run) +
                           Property("baseline", v.baseline_id) +
                           Property("baseline_label", v.baseline);
  if (!v.crossed.empty()) properties += Property("across_series", DifferencesText(v.crossed));
  return JunitDocument(v.series, cases, failures, 0, properties);
}

std::string RenderCheckFailureMarkdown(const CheckFailure& f) {
  // A fence inside the reason would end the code block early.
  std::string reason = WithoutControls(f.reason);
  const std::string fence = "```";
  for (std::size_t at = reason.find(fence); at != std::string::npos; at = reason.find(fence)) {
    reason.replace(at, fence.size(), std::string(fence.size(), '\''));
  }
  return absl::StrFormat(
      "### devtime check: ⚠️ could not check (exit %d: %s)\n\n"
      "**%s** against baseline **%s**: no verdict.\n\n```text\n%s\n```\n",
      f.exit_code, wire::ExitCodeMeaning(f.exit_code),
      f.series.empty() ? "run " + f.run_ref : f.series, f.baseline_ref, reason);
}

std::string RenderCheckFailureJunit(const CheckFailure& f) {
  const std::string suite = f.series.empty() ? "run " + f.run_ref : f.series;
  const std::string name =
      suite + ": " + (f.basis.empty() ? std::string("time per step") : f.basis + " time per step");
  const std::string message = absl::StrFormat("could not check (exit %d: %s)", f.exit_code,
                                              wire::ExitCodeMeaning(f.exit_code));
  const std::string test_case = absl::StrFormat(
      "    <testcase classname=\"devtime.check\" name=\"%s\">\n"
      "      <error type=\"%s\" message=\"%s\">%s</error>\n    </testcase>\n",
      XmlText(name), XmlText(wire::ExitCodeMeaning(f.exit_code)), XmlText(message),
      XmlText(f.reason));
  const std::string properties = Property("run", f.run_ref) + Property("baseline", f.baseline_ref) +
                                 Property("exit_code", std::to_string(f.exit_code));
  return JunitDocument(suite, {test_case}, 0, 1, properties);
}

}  // namespace devtime::ctl
