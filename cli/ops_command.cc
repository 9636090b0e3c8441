// `tensoropt ops`: the op catalogue, the source of docs/ops.md.
#include <ostream>

#include "cli/commands.h"
#include "graph/op_catalogue.h"

namespace tensoropt::cli {

int run_ops(bool markdown, std::ostream& out) {
  const auto& ops = all_ops();
  if (!markdown) {
    for (const OpDef& d : ops) out << d.type << "\t" << d.family << "\tFLOPs fwd / bwd: " << d.flops_doc << "\tsaves: " << d.saves_doc << "\n";
    return 0;
  }
  out << "| op | family | forward FLOPs / backward FLOPs | saved for backward |\n";
  out << "| --- | --- | --- | --- |\n";
  for (const OpDef& d : ops) {
    out << "| " << d.type << " | " << d.family << " | " << d.flops_doc << " | " << d.saves_doc << " |\n";
  }
  return 0;
}

}  // namespace tensoropt::cli
