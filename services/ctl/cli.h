// devtimectl's command line: the global flags, parsed into GlobalOptions, and the way each
// command group registers its subcommands (AddRunCommands, AddJobCommands, ...): the parsed
// subcommand leaves its command in a CommandContext, which main runs once connected.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "CLI/CLI.hpp"
#include "services/ctl/session.h"

namespace devtime::ctl {

// The flags before the subcommand: where the collector is and how to authenticate.
struct GlobalOptions {
  std::string collector = "127.0.0.1:50051";
  int timeout_seconds = 30;
  std::string token_file;  // "" = $DEVTIME_TOKEN or the file $DEVTIME_TOKEN_FILE
  std::string tls_ca;      // "" = plaintext
  std::string tls_cert;    // mutual TLS, with tls_key
  std::string tls_key;
};

// Registers --collector, --timeout, --token-file, --tls-ca, --tls-cert and --tls-key on
// `app`, parsed into *options. `env_collector` ($DEVTIME_COLLECTOR, null when unset)
// replaces the default address.
void AddGlobalOptions(CLI::App& app, const char* env_collector, GlobalOptions* options);

// A command that needs the collector: runs once the session is connected.
using Command = std::function<int(const Session&)>;

struct CommandContext {
  Command command;  // the parsed subcommand's; empty until parsing chose one
};

// When `subcommand` is parsed, `command` becomes context.command (so `context` must outlive
// parsing). `command` holds the subcommand's parsed options, usually by shared_ptr.
void OnParsed(CLI::App* subcommand, CommandContext& context, Command command);

// A transform for an option bound to an enum whose value is one of `names` (any case): the
// name becomes its enum value. Anything else is refused naming the option and the values
// ("--format: 'yaml' is not one of table or json"), never with CLI11's internals ("Check yaml
// value in {...} FAILED"); --help shows them as {table,json}, which shell completion offers.
CLI::Validator NamedValues(std::vector<std::pair<std::string, int>> names);
template <typename Enum>
CLI::Validator NamedValues(const std::vector<std::pair<std::string, Enum>>& names) {
  std::vector<std::pair<std::string, int>> values;
  for (const auto& [name, value] : names) values.emplace_back(name, static_cast<int>(value));
  return NamedValues(std::move(values));
}

// --format table|json (case-insensitive), default shown in --help.
void AddFormatOption(CLI::App* subcommand, Format* format);
// --format table|json|ids, for the list commands: ids prints one id per line, for scripts.
void AddListFormatOption(CLI::App* subcommand, Format* format);

// Connects to the collector described by `options` and runs `command`: its exit code, or 2
// when the credentials cannot be loaded, the address is unusable or `command` is empty.
int RunCommand(const GlobalOptions& options, const Command& command);

}  // namespace devtime::ctl
