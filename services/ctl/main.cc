// devtimectl: the operator's CLI. Talks gRPC to the collector only. Each command group
// registers its subcommands; the one parsed runs once connected (detect and import --dry-run
// need no collector).
#include <cstdlib>
#include <functional>
#include <iostream>

#include "CLI/CLI.hpp"
#include "proto/wire/command_line.h"
#include "proto/wire/version.h"
#include "services/ctl/cli.h"
#include "services/ctl/commands.h"
#include "services/ctl/detect_command.h"
#include "services/ctl/import_command.h"
#include "services/ctl/job_commands.h"
#include "services/ctl/regression_commands.h"
#include "services/ctl/report.h"

int main(int argc, char** argv) {
  namespace ctl = devtime::ctl;
  CLI::App app{"devtimectl: look at device-time history kept by a devtime collector."};
  app.require_subcommand(1);
  ctl::GlobalOptions options;
  ctl::AddGlobalOptions(app, std::getenv("DEVTIME_COLLECTOR"), &options);
  // The order here is the order of `devtimectl --help`.
  ctl::CommandContext context;
  ctl::AddRunCommands(app, context);
  ctl::AddModelCommands(app, context);
  ctl::AddJobCommands(app, context);
  ctl::AddAgentCommands(app, context);
  ctl::AddCompareCommand(app, context);
  ctl::AddCheckCommand(app, context);
  ctl::AddRegressionCommands(app, context);
  ctl::AddReportCommand(app, context);
  std::function<int()> run_offline;
  ctl::AddImportCommand(app, context, &run_offline);
  ctl::AddDetectCommand(app, &run_offline);
  // `devtimectl version`, as kubectl and helm take it: the same text as --version.
  app.add_subcommand("version", "print the version and exit (as --version)")->callback([&] {
    run_offline = [] {
      std::cout << devtime::wire::VersionText("devtimectl") << std::endl;
      return 0;
    };
  });

  devtime::wire::AddVersionFlag(app, "devtimectl");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return devtime::wire::ExitForParseError(app, e, "devtimectl", std::cout, std::cerr);
  }
  if (run_offline) return run_offline();  // needs no collector
  return ctl::RunCommand(options, context.command);
}
