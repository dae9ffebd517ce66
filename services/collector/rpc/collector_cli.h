// devtime::collector — the devtime-collector command line: flags parsed into ServerOptions
// (tested in tests/unit/rpc/collector_cli_test.cc), the credential files read, and the
// process's life (signals, serving, the ready file) for main.cc.
#pragma once

#include <optional>
#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "services/collector/rpc/server.h"

namespace devtime::collector {

// What the command line asks for, before any file is read.
struct CollectorCommand {
  ServerOptions options;
  std::string ready_file;  // "" = none
  std::string admin_token_file;
  bool no_auth = false;
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string tls_client_ca_file;
};

// The parsed command, or the exit code of a command line that was answered or refused
// (--help, --version: 0 after printing to `out`; a bad flag or an inconsistent combination:
// 2 with a message on `err`). `env_database` is
// $DEVTIME_DATABASE (nullptr when unset).
struct ParsedCommandLine {
  std::optional<CollectorCommand> command;
  int exit_code = 0;
};
ParsedCommandLine ParseCommandLine(int argc, const char* const* argv, const char* env_database,
                                   std::ostream& out, std::ostream& err);

// Reads (or creates) the admin token and the TLS files into `command.options`; an error names
// the file. Prints a warning for --no-auth and a note for a new token on `err`.
absl::Status LoadCredentials(CollectorCommand& command, std::ostream& err);

// Starts the collector, serves until SIGINT/SIGTERM, and returns the process's exit code.
int ServeUntilSignalled(const CollectorCommand& command);

}  // namespace devtime::collector
