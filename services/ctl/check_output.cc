#include "services/ctl/check_output.h"

#include <cmath>

#include "absl/strings/str_format.h"
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
      "%s time per step %s → %s (%s", v.diff.basis, ScaledTime(v.diff.before_us),
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
  out += absl::StrFormat("**%s** against baseline **%s**\n\n%s\n\n", v.run, v.baseline, Summary(v));
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
    std::string c =
        absl::StrFormat("    <testcase classname=\"devtime.check\" name=\"%s\"", HtmlEscape(name));
    if (failure.empty()) {
      cases.push_back(c + "/>\n");
      return;
    }
    ++failures;
    cases.push_back(
        c +
        absl::StrFormat(
            ">\n      <failure type=\"regression\" message=\"%s\">%s</failure>\n    </testcase>\n",
            HtmlEscape(failure), HtmlEscape(details)));
  };
  add_case("time per step of " + v.run, v.regression ? Summary(v) : "",
           "baseline " + v.baseline + "\n" + RenderDiff(v.diff, max_ops));
  for (const OpDelta& op : ops) {
    const bool slower = op.after_us > op.before_us;
    add_case("operator " + op.name, v.regression && slower ? OpLine(op) : "", OpLine(op));
  }
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += absl::StrFormat("<testsuites name=\"devtime check\" tests=\"%d\" failures=\"%d\">\n",
                         cases.size(), failures);
  out += absl::StrFormat("  <testsuite name=\"%s\" tests=\"%d\" failures=\"%d\">\n",
                         HtmlEscape("devtime check " + v.run), cases.size(), failures);
  for (const std::string& c : cases) out += c;
  return out + "  </testsuite>\n</testsuites>\n";
}

}  // namespace devtime::ctl
