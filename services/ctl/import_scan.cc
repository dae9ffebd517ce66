#include "services/ctl/import_scan.h"

#include <algorithm>
#include <array>
#include <fstream>
#include <map>
#include <tuple>

#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/civil_time.h"
#include "absl/time/time.h"
#include "agents/trace/neuron/neuron_dir.h"
#include "agents/trace/neuron/system_trace_finder.h"
#include "proto/wire/sha256.h"
#include "proto/wire/time.h"

namespace devtime::ctl {
namespace fs = std::filesystem;
namespace {

using Field = ImportLayout::Field;

bool EndsWith(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

// The trace-file suffixes, longest first, so "a.pt.trace.json.gz" loses all of its suffix.
constexpr std::array<std::string_view, 4> kTraceSuffixes = {".pt.trace.json.gz", ".pt.trace.json",
                                                            ".json.gz", ".json"};

bool IsTraceFileName(std::string_view name) {
  return std::any_of(kTraceSuffixes.begin(), kTraceSuffixes.end(),
                     [name](std::string_view s) { return EndsWith(name, s); });
}

std::string WithoutTraceSuffix(std::string name) {
  for (std::string_view suffix : kTraceSuffixes) {
    if (EndsWith(name, suffix)) return name.substr(0, name.size() - suffix.size());
  }
  return name;
}

bool IsHidden(const fs::path& path) { return path.filename().string().starts_with("."); }

// A profiler output directory: what `devtime-agent summarize DIR` reads as one run.
bool IsCaptureDirectory(const fs::path& dir) {
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_regular_file(ec) &&
        (trace::IsFrameworkTraceName(name) || name == "key_averages.json")) {
      return true;
    }
  }
  return trace::FindNeuronSession(dir).has_value();
}

absl::Status Label(const fs::path& root, const ImportLayout& layout, Capture* capture) {
  std::vector<std::string> components;
  for (const fs::path& part : capture->path.lexically_relative(root)) {
    if (part != ".") components.push_back(part.string());
  }
  if (!components.empty() && !fs::is_directory(capture->path)) {
    components.back() = WithoutTraceSuffix(components.back());
  }
  for (std::size_t i = 0; i < components.size() && i < layout.fields.size(); ++i) {
    switch (layout.fields[i]) {
      case Field::kModel:
        capture->model = components[i];
        break;
      case Field::kWorkload:
        capture->workload = components[i];
        break;
      case Field::kWhen:
        capture->when = ParsePathTime(components[i]);
        if (!capture->when) {
          return absl::InvalidArgumentError(absl::StrFormat(
              "%s: path component '%s' is where the layout expects a time (2026-11-24, "
              "2026-11-24T02:00:00Z, 20261124T0200): choose another --layout",
              capture->path.string(), components[i]));
        }
        break;
      case Field::kSkip:
        break;
    }
  }
  return absl::OkStatus();
}

absl::Status FindBelow(const fs::path& root, const ImportLayout& layout,
                       std::vector<Capture>* captures) {
  auto add = [&](const fs::path& path) {
    Capture capture{.path = path};
    absl::Status labelled = Label(root, layout, &capture);
    if (labelled.ok()) captures->push_back(std::move(capture));
    return labelled;
  };
  std::error_code ec;
  if (!fs::exists(root, ec)) return absl::NotFoundError(root.string() + ": no such file or folder");
  if (!fs::is_directory(root, ec) || IsCaptureDirectory(root)) return add(root);
  fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec);
  if (ec) return absl::InvalidArgumentError(root.string() + ": cannot list: " + ec.message());
  for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) return absl::InvalidArgumentError(it->path().string() + ": " + ec.message());
    const fs::path& path = it->path();
    if (IsHidden(path)) {
      if (it->is_directory(ec)) it.disable_recursion_pending();
      continue;
    }
    if (it->is_directory(ec)) {
      if (!IsCaptureDirectory(path)) continue;
      it.disable_recursion_pending();  // its insides are the capture's, not captures
      if (absl::Status st = add(path); !st.ok()) return st;
    } else if (it->is_regular_file(ec) && IsTraceFileName(path.filename().string())) {
      if (absl::Status st = add(path); !st.ok()) return st;
    }
  }
  return absl::OkStatus();
}

absl::Status HashFile(const fs::path& file, wire::Sha256* sha) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return absl::NotFoundError(file.string() + ": cannot read");
  std::array<char, 1 << 16> buffer;
  while (in) {
    in.read(buffer.data(), buffer.size());
    sha->Update(buffer.data(), static_cast<std::size_t>(in.gcount()));
  }
  if (in.bad()) return absl::DataLossError(file.string() + ": read failed");
  return absl::OkStatus();
}

void HashText(std::string_view text, wire::Sha256* sha) {
  sha->Update(text.data(), text.size());
  sha->Update("", 1);  // a separator no name holds: ("ab","c") ≠ ("a","bc")
}

// The compact forms archive scripts write: 20261124, 20261124T0200, 20261124T020000,
// 20261124-020000, each with an optional trailing Z.
std::optional<std::chrono::system_clock::time_point> ParseCompactTime(std::string_view text) {
  if (text.ends_with('Z')) text.remove_suffix(1);
  auto number = [&text](std::size_t from, std::size_t digits) -> std::optional<int> {
    if (text.size() < from + digits) return std::nullopt;
    int value = 0;
    for (char c : text.substr(from, digits)) {
      if (c < '0' || c > '9') return std::nullopt;
      value = value * 10 + (c - '0');
    }
    return value;
  };
  const std::size_t size = text.size();
  if (size != 8 && size != 13 && size != 15) return std::nullopt;
  if (size > 8 && text[8] != 'T' && text[8] != '-') return std::nullopt;
  auto year = number(0, 4), month = number(4, 2), day = number(6, 2);
  auto hour = size > 8 ? number(9, 2) : 0, minute = size > 8 ? number(11, 2) : 0;
  auto second = size > 13 ? number(13, 2) : 0;
  if (!year || !month || !day || !hour || !minute || !second) return std::nullopt;
  const absl::CivilSecond civil(*year, *month, *day, *hour, *minute, *second);
  // CivilSecond normalises 2026-13-40 into 2027; a real date survives unchanged.
  if (civil.month() != *month || civil.day() != *day || civil.hour() != *hour ||
      civil.minute() != *minute || civil.second() != *second) {
    return std::nullopt;
  }
  return absl::ToChronoTime(absl::FromCivil(civil, absl::UTCTimeZone()));
}

}  // namespace

absl::StatusOr<ImportLayout> ParseImportLayout(std::string_view text) {
  static const std::map<std::string, Field, std::less<>> kFields = {{"model", Field::kModel},
                                                                    {"workload", Field::kWorkload},
                                                                    {"when", Field::kWhen},
                                                                    {"-", Field::kSkip}};
  ImportLayout layout;
  const std::vector<std::string> names =
      absl::StrSplit(absl::string_view(text.data(), text.size()), '/', absl::SkipEmpty());
  for (const std::string& name : names) {
    auto it = kFields.find(name);
    if (it == kFields.end()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "layout '%s': unknown field '%s' (use model, workload, when and - to skip)", text, name));
    }
    if (it->second != Field::kSkip &&
        std::count(layout.fields.begin(), layout.fields.end(), it->second) > 0) {
      return absl::InvalidArgumentError(
          absl::StrFormat("layout '%s': field '%s' appears twice", text, name));
    }
    layout.fields.push_back(it->second);
  }
  return layout;
}

std::optional<std::chrono::system_clock::time_point> ParsePathTime(std::string_view component) {
  const std::string text(component);
  // RFC 3339 and plain dates, the forms every other devtimectl time flag takes.
  if (text.size() >= 10 && text[4] == '-' && text[7] == '-') {
    auto parsed = wire::ParseTimeOrAge(text, std::chrono::system_clock::time_point{});
    if (parsed.ok()) return *parsed;
  }
  return ParseCompactTime(text);
}

absl::StatusOr<std::vector<Capture>> FindCaptures(const std::vector<fs::path>& roots,
                                                  const ImportLayout& layout) {
  std::vector<Capture> captures;
  for (const fs::path& root : roots) {
    if (absl::Status st = FindBelow(root, layout, &captures); !st.ok()) return st;
  }
  std::sort(captures.begin(), captures.end(),
            [](const Capture& a, const Capture& b) { return a.path < b.path; });
  return captures;
}

absl::Status CheckLabels(const std::vector<Capture>& captures, std::string_view layout_text,
                         bool model_given, bool workload_given) {
  for (const Capture& capture : captures) {
    for (const auto& [field, name, given] :
         {std::tuple{"model", &capture.model, model_given},
          std::tuple{"workload", &capture.workload, workload_given}}) {
      if (given || name->empty() || !ParsePathTime(*name)) continue;
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: --layout %s makes '%s' the %s, but it reads as a date or time: the folder "
          "given is probably not the archive's root (DIR/MODEL instead of DIR). Import the "
          "root, or say what the path holds (e.g. --model M --layout workload/when), or set "
          "--%s",
          capture.path.string(), layout_text, *name, field, field));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ContentRunId(const fs::path& capture, const std::string& model,
                                         const std::string& workload,
                                         std::chrono::system_clock::time_point started_at) {
  wire::Sha256 sha;
  HashText(model, &sha);
  HashText(workload, &sha);
  HashText(std::to_string(
               std::chrono::duration_cast<std::chrono::microseconds>(started_at.time_since_epoch())
                   .count()),
           &sha);
  std::error_code ec;
  if (fs::is_directory(capture, ec)) {
    std::vector<fs::path> files;
    for (fs::recursive_directory_iterator it(capture, ec), end; !ec && it != end;
         it.increment(ec)) {
      if (it->is_regular_file()) files.push_back(it->path());
    }
    if (ec) return absl::InvalidArgumentError(capture.string() + ": cannot list: " + ec.message());
    std::sort(files.begin(), files.end());
    for (const fs::path& file : files) {
      HashText(file.lexically_relative(capture).generic_string(), &sha);
      if (absl::Status st = HashFile(file, &sha); !st.ok()) return st;
    }
  } else if (absl::Status st = HashFile(capture, &sha); !st.ok()) {
    return st;
  }
  std::array<unsigned char, 32> digest = sha.Final();
  digest[6] = static_cast<unsigned char>((digest[6] & 0x0f) | 0x80);  // version 8
  digest[8] = static_cast<unsigned char>((digest[8] & 0x3f) | 0x80);  // variant 10
  std::string id;
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) id += '-';
    id += absl::StrFormat("%02x", digest[static_cast<std::size_t>(i)]);
  }
  return id;
}

}  // namespace devtime::ctl
