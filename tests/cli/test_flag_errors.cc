// Flag errors as a user meets them (cli/flag_errors.h): every mistake on the command line is one
// line on stderr that names the flag, the value given and what is allowed, with the nearest valid
// flag or subcommand for a misspelt one, and exit code 2; none of CLI11's own wording reaches it.
#include <doctest/doctest.h>

#include <string>
#include <utility>
#include <vector>

#include "cli/flag_errors.h"
#include "graph/error.h"
#include "tests/cli/binary.h"

namespace tensoropt {
namespace {

const std::string kModel = std::string(TENSOROPT_SOURCE_DIR) + "/models/resnet18.onnx";

// Refused before anything runs: exit 2, nothing on stdout, exactly `line` on stderr.
void check_line(const std::string& args, const std::string& line) {
  CAPTURE(args);
  const test::CliResult r = test::run_cli(args);
  CHECK(r.code == 2);
  CHECK(r.out.empty());
  CHECK(r.err == "tensoropt: error: " + line + "\n");
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("flag errors: an integer out of range names the flag, the value and the range, not CLI11's 309-digit bound") {
  check_line("run " + kModel + " --steps 0", "--steps: got '0', expected an integer >= 1");
  check_line("plan " + kModel + " --gpus 2 --mesh-axes 5", "--mesh-axes: got '5', expected an integer from 1 to 3");
  check_line("run " + kModel + " --threads 99999999999", "--threads: got '99999999999', expected an integer >= 1 (at most 2147483647)");
  check_line("plan " + kModel + " --gpus 2 --epsilon 1", "--epsilon: got '1', expected a number >= 0 and < 1");
  check_line("run " + kModel + " --lr -0.5", "--lr: got '-0.5', expected a number >= 0");
}

TEST_CASE("flag errors: a value that is not a number says what the flag takes") {
  check_line("evaluate " + kModel + " --strategy s.json --point abc", "--point: got 'abc', expected an integer >= 0");
  check_line("plan " + kModel + " --gpus 2 --epsilon abc", "--epsilon: got 'abc', expected a number >= 0 and < 1");
  check_line("run " + kModel + " --steps 1.5", "--steps: got '1.5', expected an integer >= 1");
  check_line("run " + kModel + " --seed -1", "--seed: got '-1', expected an integer >= 0");
  check_line("run " + kModel + " --momentum nan", "--momentum: got 'nan', expected a number >= 0");
}

TEST_CASE("flag errors: a misspelt flag is named with its value and the nearest flag of that subcommand, before any 'required' error") {
  check_line("plan " + kModel + " --gpu 8", "tensoropt plan has no flag --gpu (given '--gpu 8'); did you mean --gpus?");
  check_line("plan " + kModel + " --gpus 2 --batchsize=8", "tensoropt plan has no flag --batchsize (given '--batchsize=8'); did you mean --batch?");
  check_line("run " + kModel + " --stpes 3", "tensoropt run has no flag --stpes (given '--stpes 3'); did you mean --steps?");
  check_line("evaluate " + kModel + " --stratgy s.json", "tensoropt evaluate has no flag --stratgy (given '--stratgy s.json'); did you mean --strategy?");
  check_line("inspect " + kModel + " --jsno", "tensoropt inspect has no flag --jsno (given '--jsno'); did you mean --json?");
  check_line("ops --mardown", "tensoropt ops has no flag --mardown (given '--mardown'); did you mean --markdown?");
  // Nothing near: the subcommands that do take it, or --help.
  check_line("inspect " + kModel + " --gpus 2", "tensoropt inspect has no flag --gpus (given '--gpus 2'); plan, evaluate, run, profile, resize, simulate, schedule take it (see tensoropt inspect --help)");
  check_line("plan " + kModel + " --gpus 2 --frobnicate", "tensoropt plan has no flag --frobnicate (given '--frobnicate'); see tensoropt plan --help");
  check_line("--steps 2", "tensoropt has no flag --steps (given '--steps 2'); it is a flag of run: give it after the subcommand, e.g. tensoropt run ... --steps 2");
}

TEST_CASE("flag errors: an unknown subcommand is named with the nearest one and the list") {
  const test::CliResult r = test::run_cli("pln " + kModel);
  CHECK(r.code == 2);
  CHECK(test::lines(r.err) == 1);
  CHECK(r.err.rfind("tensoropt: error: no subcommand 'pln'; did you mean plan? (subcommands: inspect, ops, plan, evaluate, run", 0) == 0);
  const test::CliResult far = test::run_cli("frobnicate");
  CHECK(far.code == 2);
  CHECK(far.err.rfind("tensoropt: error: no subcommand 'frobnicate' (subcommands: ", 0) == 0);
}

TEST_CASE("flag errors: a missing argument or value names it and what it takes") {
  check_line("plan --gpus 2", "plan: MODEL is required: ONNX model file (see tensoropt plan --help)");
  check_line("inspect", "inspect: MODEL is required: ONNX model file (see tensoropt inspect --help)");
  check_line("plan " + kModel, "plan: --gpus is required: GPU counts: 8, a list 1,2,4,8, or a range 1-64 (powers of two) (see tensoropt plan --help)");
  check_line("run " + kModel + " --steps", "--steps: got no value, expected an integer >= 1");
  check_line("plan " + kModel + " --gpus --batch 8",
             "--gpus: got no value (the next argument, --batch, is a flag), expected GPU counts: 8, a list 1,2,4,8, or a range 1-64 (powers of two)");
  check_line("plan " + kModel + " other.onnx --gpus 2", "plan: unexpected argument 'other.onnx' (plan takes MODEL and flags; see tensoropt plan --help)");
  check_line("ops extra", "ops: unexpected argument 'extra' (ops takes no arguments; see tensoropt ops --help)");
  check_line("run " + kModel + " --steps 1 --steps 2", "--steps: given 2 times ('1', '2'), expected once");
  check_line("plan " + kModel + " --gpus 2 --baselines=maybe", "--baselines: got 'maybe', expected no value (a switch: give --baselines alone)");
}

TEST_CASE("flag errors: every subcommand's flag mistakes are one 'tensoropt: error:' line with exit 2, never CLI11's text") {
  const std::vector<std::string> bad = {
      "inspect " + kModel + " --batch 0", "inspect " + kModel + " --batch x", "inspect " + kModel + " --bath 2", "inspect " + kModel + " --batch",
      "ops --markdown=maybe", "plan " + kModel + " --gpus 2 --rows -1", "plan " + kModel + " --gpus 2 --param-persistence x",
      "plan " + kModel + " --gpus 2 --recompute all --no-recompute", "plan " + kModel + " --gpus 2 --batch 1e3",
      "evaluate " + kModel + " --strategy s.json --gpus 0", "evaluate " + kModel + " --strategy s.json --batch -4", "evaluate " + kModel + " --strategy",
      "run " + kModel + " --gpus 0", "run " + kModel + " --point -1", "run " + kModel + " --weight-decay inf", "run " + kModel + " --batch 010x",
      "devices --gpus 2", "devices extra", "--versoin",
  };
  for (const std::string& args : bad) {
    CAPTURE(args);
    const test::CliResult r = test::run_cli(args);
    CHECK(r.code == 2);
    CHECK(r.out.empty());
    CHECK(test::lines(r.err) == 1);
    CHECK(r.err.rfind("tensoropt: error: ", 0) == 0);
    for (const char* cli11 : {"not in range", "Could not convert", "was not expected", "were not expected", "required but received", "required INT missing"})
      CHECK(!has(r.err, cli11));
  }
}

TEST_CASE("flag errors: integers are decimal, as the messages say: a leading zero (octal to CLI11) is refused") {
  CLI::App app;
  int64_t n = 0;
  double x = 0;
  app.add_option("--n", n)->check(cli::integer<int64_t>(1));
  app.add_option("--x", x)->check(cli::number(0));
  const char* plus[] = {"t", "--n", "+12", "--x", "+2.5e-1"};
  app.parse(5, const_cast<char**>(plus));
  CHECK(n == 12);
  CHECK(x == 0.25);
  const char* octal[] = {"t", "--n", "010"};
  CHECK_THROWS_WITH_AS(app.parse(3, const_cast<char**>(octal)), "--n: got '010', expected an integer >= 1 (in decimal, without leading zeros)",
                       CLI::ValidationError);
  check_line("run " + kModel + " --steps 010", "--steps: got '010', expected an integer >= 1 (in decimal, without leading zeros)");
}

TEST_CASE("flag errors: require_ranges refuses an option that takes a number without a range of ours") {
  CLI::App app;
  CLI::App* sub = app.add_subcommand("sub");
  int checked = 0, unchecked = 0;
  double ratio = 0;
  std::string text;
  sub->add_option("--checked", checked)->check(cli::integer(0));
  sub->add_option("--ratio", ratio)->check(cli::number(0, 1));
  sub->add_option("--text", text);
  CHECK_NOTHROW(cli::require_ranges(app));
  sub->add_option("--unchecked", unchecked)->check(CLI::PositiveNumber);
  CHECK_THROWS_WITH_AS(cli::require_ranges(app), doctest::Contains("sub --unchecked takes a number but has no range"), InternalError);
}

TEST_CASE("flag errors: edit distance and the nearest candidate") {
  CHECK(cli::edit_distance("", "") == 0);
  CHECK(cli::edit_distance("gpu", "gpus") == 1);
  CHECK(cli::edit_distance("stpes", "steps") == 2);
  CHECK(cli::edit_distance("kitten", "sitting") == 3);
  const std::vector<std::string> flags = {"--gpus", "-g", "--batch", "-b", "--lr", "--json"};
  CHECK(cli::nearest("--gpu", flags) == "--gpus");
  CHECK(cli::nearest("--GPUS", flags) == "--gpus");
  CHECK(cli::nearest("--batchsize", flags) == "--batch");  // a prefix, however many letters follow
  CHECK(cli::nearest("--x", flags) == "");                 // two edits from --lr, but of a one-letter name
  CHECK(cli::nearest("-q", flags) == "");                  // a single letter is near every short flag: none
  CHECK(cli::nearest("--frobnicate", flags) == "");
}

}  // namespace tensoropt
