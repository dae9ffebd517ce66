// Command-line habits all three executables share (CLI11, header-only like CLI11 itself):
// `--version`, and what happens to a command line CLI11 refuses — its message, a suggestion
// for a mistyped subcommand ("runs lst": did you mean "list"?), and exit code 2 (usage), or 0
// for --help and --version (proto/wire/exit_codes.h).
#pragma once

#include <algorithm>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "proto/wire/exit_codes.h"
#include "proto/wire/version.h"

namespace devtime::wire {

// Adds --version (version, commit, schema) to `app`.
inline void AddVersionFlag(CLI::App& app, const std::string& program) {
  app.set_version_flag("--version", VersionText(program), "print the version and exit");
}

// Levenshtein distance, for suggestions.
inline std::size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// The subcommand of `app` closest to `typed` when it is a plausible typo (a prefix of it, or
// at most a third of its letters off); nullopt otherwise.
inline std::optional<std::string> ClosestSubcommand(const CLI::App& app, const std::string& typed) {
  std::optional<std::string> best;
  std::size_t best_distance = std::max<std::size_t>(2, typed.size() / 3) + 1;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    const std::string& name = sub->get_name();
    const std::size_t distance = name.starts_with(typed) ? 0 : EditDistance(typed, name);
    if (distance < best_distance) {
      best = name;
      best_distance = distance;
    }
  }
  return best;
}

// The long option of `app` closest to `typed` ("--formt": "--format"). kubectl's and helm's
// "-o"/"--output" mean --format here.
inline std::optional<std::string> ClosestOption(const CLI::App& app, const std::string& typed) {
  const std::string bare = typed.substr(0, typed.find('='));
  if ((bare == "-o" || bare == "--output") && app.get_option_no_throw("--format") != nullptr) {
    return "--format";
  }
  std::optional<std::string> best;
  std::size_t best_distance = std::max<std::size_t>(2, bare.size() / 3) + 1;
  for (const CLI::Option* option : app.get_options()) {
    for (const std::string& name : option->get_lnames()) {
      const std::size_t distance = EditDistance(bare, "--" + name);
      if (distance < best_distance) {
        best = "--" + name;
        best_distance = distance;
      }
    }
  }
  return best;
}

// What main does when app.parse() throws: prints the error (or the help or version text)
// and returns the exit code: 0 for --help/--version, else kExitUsage. An unknown word where
// a subcommand belongs is named, with the closest subcommand when there is one; so is an
// unknown option, with the closest option.
inline int ExitForParseError(const CLI::App& app, const CLI::ParseError& error,
                             const std::string& program, std::ostream& out, std::ostream& err) {
  if (error.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) {
    return app.exit(error, out, err);
  }
  const CLI::App* at = &app;  // the deepest subcommand the user named
  for (auto parsed = at->get_subcommands(); !parsed.empty(); parsed = at->get_subcommands()) {
    at = parsed.front();
  }
  std::string path = program;
  for (const CLI::App* p = at; p != &app && p != nullptr; p = p->get_parent()) {
    path.insert(program.size(), " " + p->get_name());
  }
  const auto remaining = at->remaining();
  const auto typed = std::find_if(remaining.begin(), remaining.end(),
                                  [](const std::string& word) { return !word.starts_with("-"); });
  const bool has_subcommands = !at->get_subcommands([](const CLI::App*) { return true; }).empty();
  if (has_subcommands && typed != remaining.end()) {
    err << path << ": unknown command '" << *typed << "'";
    if (auto closest = ClosestSubcommand(*at, *typed))
      err << "; did you mean '" << *closest << "'?";
    err << "\nRun '" << path << " --help' for the commands.\n";
    return kExitUsage;
  }
  const auto option = std::find_if(remaining.begin(), remaining.end(), [](const std::string& word) {
    return word.size() > 1 && word.starts_with("-");
  });
  if (option != remaining.end()) {
    err << path << ": unknown option '" << *option << "'";
    if (auto closest = ClosestOption(*at, *option)) err << "; did you mean '" << *closest << "'?";
    err << "\nRun '" << path << " --help' for the options.\n";
    return kExitUsage;
  }
  app.exit(error, out, err);
  return kExitUsage;
}

}  // namespace devtime::wire
