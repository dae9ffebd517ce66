#include "services/ctl/detect_command.h"

#include <charconv>
#include <cmath>
#include <fstream>
#include <initializer_list>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string_view>
#include <utility>
#include <vector>

#include "services/ctl/cli.h"

namespace devtime::ctl {
namespace {

std::string_view Trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return {};
  const auto last = s.find_last_not_of(" \t\r\n");
  return s.substr(first, last - first + 1);
}

bool IsNanWord(std::string_view token) {
  std::string lower;
  for (char c : token)
    lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  return lower == "nan" || lower == "-nan" || lower == "+nan" || lower == "null" ||
         lower == "none" || lower == "na";
}

// One finite number, or NaN for a missing-run word; false when the token is neither.
bool ParseNumber(std::string_view token, double& value) {
  if (IsNanWord(token)) {
    value = std::numeric_limits<double>::quiet_NaN();
    return true;
  }
  if (!token.empty() && token.front() == '+') token.remove_prefix(1);
  const auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), value);
  return ec == std::errc() && end == token.data() + token.size() && std::isfinite(value);
}

void WriteJsonNumber(std::ostream& out, double v) {
  if (std::isfinite(v)) {
    out << v;
  } else {
    out << "null";
  }
}

// `, "name": value` for each field; non-finite values are null.
void WriteNumbers(std::ostream& json,
                  std::initializer_list<std::pair<const char*, double>> fields) {
  for (const auto& [name, value] : fields) {
    json << ", \"" << name << "\": ";
    WriteJsonNumber(json, value);
  }
}

// One step finding (a change point) as a JSON object.
void WriteChangePoint(std::ostream& json, const detect::ChangePoint& cp) {
  json << "{\"kind\": \"" << detect::FindingKindName(detect::FindingKind::kStep)
       << "\", \"index\": " << cp.index << ", \"previous_index\": " << cp.previous_index;
  WriteNumbers(json, {{"before_mean", cp.before_mean},
                      {"after_mean", cp.after_mean},
                      {"before_stddev", cp.before_stddev},
                      {"after_stddev", cp.after_stddev}});
  json << ", \"before_count\": " << cp.before_count << ", \"after_count\": " << cp.after_count;
  WriteNumbers(json, {{"relative_change", cp.relative_change},
                      {"t_statistic", cp.t_statistic},
                      {"p_value", cp.p_value},
                      {"confidence", cp.confidence},
                      {"q_hat", cp.q_hat}});
  json << "}";
}

// One drift finding as a JSON object.
void WriteDrift(std::ostream& json, const detect::Drift& d) {
  json << "{\"kind\": \"" << detect::FindingKindName(detect::FindingKind::kDrift)
       << "\", \"start_index\": " << d.start_index << ", \"end_index\": " << d.end_index
       << ", \"count\": " << d.count;
  WriteNumbers(json, {{"start_value", d.start_value},
                      {"end_value", d.end_value},
                      {"slope", d.slope},
                      {"level", d.level},
                      {"slope_per_30", d.slope_per_30},
                      {"relative_change", d.relative_change},
                      {"kendall_tau", d.kendall_tau},
                      {"z", d.z},
                      {"p_value", d.p_value},
                      {"confidence", d.confidence}});
  json << "}";
}

// The human-readable line of a drift finding (text mode, on stderr).
std::string DriftNote(const detect::Drift& d) {
  std::ostringstream note;
  note.precision(3);
  note << "# drift from " << d.start_index << " to " << d.end_index << ": " << std::showpos
       << 100.0 * d.slope_per_30 << " % per 30 runs, " << 100.0 * d.relative_change
       << std::noshowpos << " % in all (p " << d.p_value << ")\n";
  return note.str();
}

}  // namespace

int RunDetect(const DetectCommandOptions& options, std::istream& in, std::ostream& out,
              std::ostream& err) {
  std::vector<detect::Point> points;
  std::string line;
  size_t line_number = 0;
  while (std::getline(in, line)) {
    ++line_number;
    const std::string_view text = Trim(line);
    if (text.empty() || text.front() == '#') continue;
    std::vector<std::string_view> tokens;
    size_t at = 0;
    while (at < text.size()) {
      const size_t space = text.find_first_of(" \t,", at);
      const std::string_view token =
          text.substr(at, space == std::string_view::npos ? text.size() - at : space - at);
      if (!token.empty()) tokens.push_back(token);
      if (space == std::string_view::npos) break;
      at = space + 1;
    }
    detect::Point point;
    if (tokens.empty() || tokens.size() > 2 || !ParseNumber(tokens[0], point.value) ||
        (tokens.size() == 2 && !ParseNumber(tokens[1], point.noise))) {
      err << "devtimectl detect: line " << line_number << ": expected a number (or nan), got '"
          << text << "'\n";
      return 2;
    }
    points.push_back(point);
  }
  if (in.bad()) {
    err << "devtimectl detect: read error after line " << line_number << "\n";
    return 2;
  }

  detect::DetectorOptions detector = options.detector;
  detector.mode = options.mode;
  if (options.mode == detect::Mode::kOtava) {
    if (!std::isnan(options.max_pvalue)) detector.otava_max_pvalue = options.max_pvalue;
    if (!std::isnan(options.min_change)) detector.otava_min_magnitude = options.min_change;
  } else {
    if (!std::isnan(options.max_pvalue)) detector.max_pvalue = options.max_pvalue;
    if (!std::isnan(options.min_change)) detector.min_relative_change = options.min_change;
  }
  const auto findings = detect::Analyze(points, detector);
  if (!findings.ok()) {
    err << "devtimectl detect: " << findings.status().message() << "\n";
    return 2;
  }
  std::vector<detect::ChangePoint> steps;
  std::vector<detect::Drift> drifts;
  for (const detect::Finding& f : *findings) {
    if (f.kind == detect::FindingKind::kStep) {
      steps.push_back(f.step);
    } else {
      drifts.push_back(f.drift);
    }
  }

  if (options.format == DetectFormat::kText) {
    // stdout is the machine-readable part (one index per line, as README promises); drifts
    // have no single index, so their human-readable notes go to stderr.
    for (const detect::ChangePoint& cp : steps) out << cp.index << "\n";
    for (const detect::Drift& d : drifts) err << DriftNote(d);
    return 0;
  }
  std::ostringstream json;
  json.precision(10);
  json << "{\"mode\": \"" << (options.mode == detect::Mode::kOtava ? "otava" : "default")
       << "\", \"points\": " << points.size() << ", \"change_points\": [";
  for (size_t i = 0; i < steps.size(); ++i) {
    json << (i ? ", " : "");
    WriteChangePoint(json, steps[i]);
  }
  json << "], \"drifts\": [";
  for (size_t i = 0; i < drifts.size(); ++i) {
    json << (i ? ", " : "");
    WriteDrift(json, drifts[i]);
  }
  json << "]}\n";
  out << json.str();
  return 0;
}

int RunDetectInput(const DetectCommandOptions& options, std::ostream& out, std::ostream& err) {
  if (options.input.empty() || options.input == "-") return RunDetect(options, std::cin, out, err);
  std::ifstream file(options.input);
  if (!file) {
    err << "devtimectl detect: cannot open '" << options.input << "'\n";
    return 2;
  }
  return RunDetect(options, file, out, err);
}

void AddDetectCommand(CLI::App& app, std::function<int()>* run) {
  auto options = std::make_shared<DetectCommandOptions>();
  CLI::App* command = app.add_subcommand(
      "detect", "find change points in a series read from FILE or stdin (one number per line)");
  command->add_option("FILE", options->input, "input file, '-' for standard input")
      ->capture_default_str();
  command->add_option("--mode", options->mode, "detector: default, or otava (Otava 0.8 reference)")
      ->type_name("TEXT")
      ->transform(NamedValues<detect::Mode>(
          {{"default", detect::Mode::kDefault}, {"otava", detect::Mode::kOtava}}));
  command
      ->add_option("--format", options->format,
                   "output: text (one change-point index per line; drift notes on stderr) or json "
                   "(steps and drifts with their statistics)")
      ->type_name("TEXT")
      ->transform(NamedValues<DetectFormat>(
          {{"text", DetectFormat::kText}, {"json", DetectFormat::kJson}}));
  command->add_option("--max-pvalue", options->max_pvalue,
                      "largest p-value of a change point (default 0.001 in both modes)");
  command->add_option("--min-change", options->min_change,
                      "smallest relative change, 0.02 = 2 % (default 0.01; otava: its "
                      "min_magnitude, default 0)");
  // Detector options shown with their defaults in --help.
  auto with_default = [command](const char* name, auto& value, const char* help) {
    command->add_option(name, value, help)->capture_default_str();
  };
  detect::DetectorOptions& d = options->detector;
  with_default("--min-noise-ratio", d.min_within_noise_ratio,
               "smallest change as a multiple of the median within-run stddev");
  with_default("--min-segment", d.min_segment, "fewest runs on each side of a change");
  with_default("--outlier-threshold", d.outlier_threshold,
               "robust sigmas that make a single run an outlier (0 = off)");
  with_default("--window", d.otava_window, "otava mode: window length");
  command->callback([options, run] {
    if (run != nullptr) {
      *run = [options] { return RunDetectInput(*options, std::cout, std::cerr); };
      return;
    }
    throw CLI::RuntimeError(RunDetectInput(*options, std::cout, std::cerr));
  });
}

}  // namespace devtime::ctl
