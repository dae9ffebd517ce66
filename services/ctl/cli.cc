#include "services/ctl/cli.h"

#include <cctype>
#include <iostream>
#include <utility>
#include <vector>

#include "proto/wire/channel.h"

namespace devtime::ctl {

void AddGlobalOptions(CLI::App& app, const char* env_collector, GlobalOptions* options) {
  if (env_collector != nullptr) options->collector = env_collector;
  app.add_option(
         "--collector", options->collector,
         "collector gRPC address, or several (ipv4:A:P,B:P, dns:host:port, unix:/path; env\n"
         "DEVTIME_COLLECTOR); a token goes only to loopback addresses unless TLS is used")
      ->capture_default_str();
  app.add_option("--timeout", options->timeout_seconds,
                 "seconds a call may take, connecting to the collector included")
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

// "table, json or ids": the names, as a sentence ends them.
std::string Sentence(const std::vector<std::pair<std::string, int>>& names) {
  std::string text;
  for (std::size_t i = 0; i < names.size(); ++i) {
    text += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i].first;
  }
  return text;
}

void AddFormatChoice(CLI::App* subcommand, Format* format, const std::string& help,
                     const std::vector<std::pair<std::string, Format>>& names) {
  std::string default_name;
  for (const auto& [name, value] : names) {
    if (value == *format) default_name = name;
  }
  subcommand->add_option("--format", *format, help)
      ->type_name("TEXT")
      ->transform(NamedValues(names))
      ->default_str(default_name);
}

}  // namespace

CLI::Validator NamedValues(std::vector<std::pair<std::string, int>> names) {
  std::string listed;
  for (const auto& [name, value] : names) listed += (listed.empty() ? "" : ",") + name;
  auto to_value = [names](std::string& text) -> std::string {
    std::string lower = text;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (const auto& [name, value] : names) {
      if (name != lower) continue;
      text = std::to_string(value);  // what CLI11 reads into the enum
      return "";
    }
    return "'" + text + "' is not one of " + Sentence(names);
  };
  return CLI::Validator(to_value, "{" + listed + "}");
}

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
  const std::chrono::seconds timeout(options.timeout_seconds);
  // The connection may take all of --timeout: a slow link is slow from its first packet.
  auto channel = wire::ConnectCollector(options.collector, *creds, timeout);
  if (!channel.ok()) {
    std::cerr << "devtimectl: " << channel.status().message() << "\n";
    return 2;
  }
  auto stub = v1::Collector::NewStub(*channel);
  Session session{*stub, timeout, std::cout, std::cerr, options.collector};
  return command ? command(session) : 2;
}

}  // namespace devtime::ctl
