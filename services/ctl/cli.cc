#include "services/ctl/cli.h"

#include <iostream>
#include <map>
#include <utility>

#include "proto/wire/channel.h"

namespace devtime::ctl {

void AddGlobalOptions(CLI::App& app, const char* env_collector, GlobalOptions* options) {
  if (env_collector != nullptr) options->collector = env_collector;
  app.add_option(
         "--collector", options->collector,
         "collector gRPC address, or several (ipv4:A:P,B:P, dns:host:port, unix:/path; env\n"
         "DEVTIME_COLLECTOR); a token goes only to loopback addresses unless TLS is used")
      ->capture_default_str();
  app.add_option("--timeout", options->timeout_seconds, "seconds to wait for the collector")
      ->capture_default_str();
  app.add_option("--token-file", options->token_file,
                 "file with your token (else $DEVTIME_TOKEN or the file $DEVTIME_TOKEN_FILE)");
  app.add_option("--tls-ca", options->tls_ca,
                 "PEM CA of the collector's certificate: connect with TLS");
  app.add_option("--tls-cert", options->tls_cert, "PEM client certificate (mutual TLS)");
  app.add_option("--tls-key", options->tls_key, "PEM key of --tls-cert");
}

void OnParsed(CLI::App* subcommand, CommandContext& context, Command command) {
  subcommand->callback([&context, command = std::move(command)] { context.command = command; });
}

namespace {

void AddFormatChoice(CLI::App* subcommand, Format* format, const std::string& help,
                     std::map<std::string, Format> names) {
  subcommand->add_option("--format", *format, help)
      ->transform(CLI::CheckedTransformer(std::move(names), CLI::ignore_case))
      ->capture_default_str();
}

}  // namespace

void AddFormatOption(CLI::App* subcommand, Format* format) {
  AddFormatChoice(subcommand, format, "output format: table or json",
                  {{"table", Format::kTable}, {"json", Format::kJson}});
}

void AddListFormatOption(CLI::App* subcommand, Format* format) {
  AddFormatChoice(subcommand, format, "output format: table, json or ids (one id per line)",
                  {{"table", Format::kTable}, {"json", Format::kJson}, {"ids", Format::kIds}});
}

int RunCommand(const GlobalOptions& options, const Command& command) {
  auto creds = wire::LoadClientCredentials(options.token_file, options.tls_ca, options.tls_cert,
                                           options.tls_key);
  if (!creds.ok()) {
    std::cerr << "devtimectl: " << creds.status().message() << "\n";
    return 2;
  }
  if (creds->token.empty()) creds->token = wire::TokenFromEnvironment();
  auto channel = wire::ConnectCollector(options.collector, *creds);
  if (!channel.ok()) {
    std::cerr << "devtimectl: " << channel.status().message() << "\n";
    return 2;
  }
  auto stub = v1::Collector::NewStub(*channel);
  Session session{*stub, std::chrono::seconds(options.timeout_seconds), std::cout, std::cerr,
                  options.collector};
  return command ? command(session) : 2;
}

}  // namespace devtime::ctl
