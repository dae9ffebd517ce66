#include "services/ctl/jobs_file.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "proto/wire/job_spec.h"
#include "proto/wire/validation.h"
#include "yaml-cpp/yaml.h"

namespace devtime::ctl {
namespace {

// Where a problem is: "jobs.yaml:12: jobs[1].schedule.cron".
struct Place {
  const std::string& source;
  int line;
  std::string field;
};

absl::Status Problem(const Place& at, const std::string& what) {
  return absl::InvalidArgumentError(at.source + ":" + std::to_string(at.line) + ": " + at.field +
                                    ": " + what);
}

int LineOf(const YAML::Node& node) { return node.Mark().line + 1; }

absl::Status CheckKeys(const YAML::Node& map, const Place& at, const std::set<std::string>& known) {
  if (!map.IsMap()) return Problem(at, "must be a mapping");
  for (const auto& entry : map) {
    auto key = entry.first.as<std::string>();
    if (!known.count(key)) {
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      return Problem({at.source, LineOf(entry.first), at.field + "." + key},
                     "unknown field (known: " + list + ")");
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> Text(const YAML::Node& node, const Place& at) {
  if (!node.IsScalar()) return Problem(at, "must be a string");
  return node.as<std::string>();
}

absl::StatusOr<bool> Flag(const YAML::Node& node, const Place& at) {
  bool value = false;
  if (!node.IsScalar() || !YAML::convert<bool>::decode(node, value)) {
    return Problem(at, "must be true or false");
  }
  return value;
}

absl::StatusOr<uint32_t> Count(const YAML::Node& node, const Place& at) {
  if (!node.IsScalar()) return Problem(at, "must be a whole number");
  try {
    long long value = node.as<long long>();
    if (value < 0 || value > 4'000'000'000LL) return Problem(at, "is out of range");
    return static_cast<uint32_t>(value);
  } catch (const YAML::Exception&) {
    return Problem(at, "'" + node.as<std::string>() + "' is not a whole number");
  }
}

absl::Status ReadStringMap(const YAML::Node& node, const Place& at,
                           google::protobuf::Map<std::string, std::string>* out) {
  if (!node.IsMap()) return Problem(at, "must be a mapping of names to strings");
  for (const auto& entry : node) {
    Place item{at.source, LineOf(entry.second), at.field + "." + entry.first.as<std::string>()};
    auto value = Text(entry.second, item);
    if (!value.ok()) return value.status();
    (*out)[entry.first.as<std::string>()] = *value;
  }
  return absl::OkStatus();
}

// Checks `map`'s keys against `known`, then calls read(key, value, place of the value) for
// each entry in file order; the first error ends the walk.
template <typename Read>
absl::Status ReadFields(const YAML::Node& map, const Place& at, const std::set<std::string>& known,
                        Read read) {
  if (auto s = CheckKeys(map, at, known); !s.ok()) return s;
  for (const auto& entry : map) {
    auto key = entry.first.as<std::string>();
    Place field{at.source, LineOf(entry.second), at.field + "." + key};
    if (auto s = read(key, entry.second, field); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status ReadSchedule(const YAML::Node& node, const Place& at, v1::Schedule* schedule) {
  return ReadFields(
      node, at, {"cron", "time_zone", "jitter_seconds"},
      [&](const std::string& key, const YAML::Node& value, const Place& field) -> absl::Status {
        if (key == "jitter_seconds") {
          auto n = Count(value, field);
          if (!n.ok()) return n.status();
          schedule->set_jitter_seconds(*n);
          return absl::OkStatus();
        }
        auto text = Text(value, field);
        if (!text.ok()) return text.status();
        if (key == "cron") schedule->set_cron(*text);
        if (key == "time_zone") schedule->set_time_zone(*text);
        return absl::OkStatus();
      });
}

absl::Status ReadSelector(const YAML::Node& node, const Place& at, v1::HostSelector* selector) {
  return ReadFields(
      node, at, {"labels", "instance_type", "hosts"},
      [&](const std::string& key, const YAML::Node& value, const Place& field) -> absl::Status {
        if (key == "labels") return ReadStringMap(value, field, selector->mutable_labels());
        if (key == "instance_type") {
          auto text = Text(value, field);
          if (!text.ok()) return text.status();
          selector->set_instance_type(*text);
          return absl::OkStatus();
        }
        if (!value.IsSequence()) return Problem(field, "must be a list of host names");
        for (const auto& host : value) selector->add_hosts(host.as<std::string>());
        return absl::OkStatus();
      });
}

// pins: {KEY: {default: VALUE, source: COMMAND}} (or KEY: VALUE, the default alone), in
// file order.
absl::Status ReadPins(const YAML::Node& node, const Place& at, v1::JobSpec* job) {
  if (!node.IsMap()) return Problem(at, "must be a mapping of environment keys to pins");
  for (const auto& entry : node) {
    const std::string key = entry.first.as<std::string>();
    Place pin_at{at.source, LineOf(entry.second), at.field + "." + key};
    v1::PinSpec* pin = job->add_pins();
    pin->set_key(key);
    if (entry.second.IsScalar()) {
      pin->set_default_value(entry.second.as<std::string>());
      continue;
    }
    auto read = ReadFields(
        entry.second, pin_at, {"default", "source"},
        [&](const std::string& field, const YAML::Node& value, const Place& place) -> absl::Status {
          auto text = Text(value, place);
          if (!text.ok()) return text.status();
          if (field == "default") pin->set_default_value(*text);
          if (field == "source") pin->set_source(*text);
          return absl::OkStatus();
        });
    if (!read.ok()) return read;
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::JobSpec> ReadJob(const YAML::Node& node, const Place& at) {
  static const std::set<std::string> kKnown = {"name",
                                               "model",
                                               "workload",
                                               "command",
                                               "schedule",
                                               "selector",
                                               "timeout_seconds",
                                               "capture_steps",
                                               "env",
                                               "retries",
                                               "skip_confirmation_runs",
                                               "pins"};
  v1::JobSpec job;
  auto status = ReadFields(
      node, at, kKnown,
      [&job](const std::string& key, const YAML::Node& value, const Place& field) -> absl::Status {
        if (key == "schedule") return ReadSchedule(value, field, job.mutable_schedule());
        if (key == "selector") return ReadSelector(value, field, job.mutable_selector());
        if (key == "env") return ReadStringMap(value, field, job.mutable_env());
        if (key == "pins") return ReadPins(value, field, &job);
        if (key == "timeout_seconds" || key == "capture_steps" || key == "retries") {
          auto n = Count(value, field);
          if (!n.ok()) return n.status();
          if (key == "timeout_seconds") job.set_timeout_seconds(*n);
          if (key == "capture_steps") job.set_capture_steps(*n);
          if (key == "retries") job.set_retries(*n);
          return absl::OkStatus();
        }
        if (key == "skip_confirmation_runs") {
          auto flag = Flag(value, field);
          if (!flag.ok()) return flag.status();
          job.set_skip_confirmation_runs(*flag);
          return absl::OkStatus();
        }
        auto text = Text(value, field);
        if (!text.ok()) return text.status();
        if (key == "name") job.set_name(*text);
        if (key == "model") job.set_model(*text);
        if (key == "workload") job.set_workload(*text);
        if (key == "command") job.set_command(*text);
        return absl::OkStatus();
      });
  if (!status.ok()) return status;
  if (auto s = wire::ValidateJob(job, at.field); !s.ok()) {
    return absl::InvalidArgumentError(at.source + ":" + std::to_string(at.line) + ": " +
                                      std::string(s.message()));
  }
  return job;
}

}  // namespace

absl::StatusOr<std::vector<v1::JobSpec>> ParseJobs(const std::string& yaml,
                                                   const std::string& source) {
  // yaml-cpp takes broken UTF-8 as it is, and protobuf then refuses to send the strings, saying
  // nothing: the file's own line and byte instead.
  if (auto bad = wire::FirstInvalidUtf8(yaml)) {
    const auto line = 1 + std::count(yaml.begin(), yaml.begin() + static_cast<long>(*bad), '\n');
    return absl::InvalidArgumentError(source + ":" + std::to_string(line) +
                                      ": not valid UTF-8 (byte " + std::to_string(*bad) +
                                      " of the file); save it as UTF-8");
  }
  YAML::Node root;
  try {
    root = YAML::Load(yaml);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(source + ":" + std::to_string(e.mark.line + 1) +
                                      ": not valid YAML: " + e.msg);
  }
  Place top{source, 1, "jobs"};
  if (!root.IsMap() || !root["jobs"])
    return Problem(top, "the file must have a top-level 'jobs' list");
  try {
    if (auto s = CheckKeys(root, {source, 1, "(top level)"}, {"jobs"}); !s.ok()) return s;
    const YAML::Node list = root["jobs"];
    if (!list.IsSequence()) return Problem({source, LineOf(list), "jobs"}, "must be a list");
    std::vector<v1::JobSpec> jobs;
    std::map<std::string, int> first_line;
    for (std::size_t i = 0; i < list.size(); ++i) {
      Place at{source, LineOf(list[i]), "jobs[" + std::to_string(i) + "]"};
      auto job = ReadJob(list[i], at);
      if (!job.ok()) return job.status();
      auto [it, fresh] = first_line.emplace(job->name(), at.line);
      if (!fresh) {
        return Problem(
            {source, at.line, at.field + ".name"},
            "'" + job->name() + "' is already defined at line " + std::to_string(it->second));
      }
      jobs.push_back(std::move(*job));
    }
    return jobs;
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(source + ":" + std::to_string(e.mark.line + 1) + ": " +
                                      e.msg);
  }
}

absl::StatusOr<std::vector<v1::JobSpec>> ReadJobsFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(path + ": cannot open");
  std::ostringstream content;
  content << in.rdbuf();
  return ParseJobs(content.str(), path);
}

}  // namespace devtime::ctl
