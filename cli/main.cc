// The tensoropt command: argument parsing, dispatch, and exit codes
// (0 success, 1 internal fault, 2 bad input or usage).
#include <CLI/CLI.hpp>
#include <iostream>

#include "cli/commands.h"
#include "graph/error.h"
#include "launcher/build_info.h"

int main(int argc, char** argv) {
  using namespace tensoropt;
  CLI::App app{"tensoropt: plan and run data, tensor and pipeline parallel training of ONNX models"};
  app.require_subcommand(0, 1);
  bool version = false;
  app.add_flag("--version", version, "Print the version, CUDA support and library versions, then exit");

  cli::InspectArgs inspect;
  int64_t batch = 0;
  CLI::App* ins = app.add_subcommand("inspect", "What is in a model: ops, parameters, FLOPs, activation memory");
  ins->add_option("model", inspect.model, "ONNX model file")->required();
  ins->add_option("--batch,-b", batch, "Batch size: sets the batch axis (axis 0) of every data input")
      ->check(CLI::PositiveNumber);
  ins->add_flag("--json", inspect.json, "Print JSON instead of text (format in docs/cli.md)");
  ins->add_flag("--verbose,-v", inspect.verbose, "List every node with its shapes, FLOPs and saved bytes");

  bool markdown = false;
  CLI::App* ops = app.add_subcommand("ops", "List the supported ONNX ops with their FLOP formulas");
  ops->add_flag("--markdown", markdown, "Print the table of docs/ops.md");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string what = e.what();
    std::cerr << "tensoropt: " << what << (what.find("--help") == std::string::npos ? " (see --help)" : "") << "\n";
    return 2;
  }

  try {
    if (version) {
      std::cout << build_info();
      return 0;
    }
    if (*ins) {
      if (batch > 0) inspect.batch = batch;
      return cli::run_inspect(inspect, std::cout);
    }
    if (*ops) return cli::run_ops(markdown, std::cout);
    std::cout << app.help();
    return 2;
  } catch (const InputError& e) {
    std::cerr << "tensoropt: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "tensoropt: internal error: " << e.what() << "\n";
    return 1;
  }
}
