// Training data for `run`: batches of the model's data inputs and of the loss target.
//
// Both are functions of the step alone: the batch of step s is the same whatever the number of
// workers (each takes the whole global batch and keeps its shard), so a job resized while it runs
// (run --elastic) sees exactly the samples an unresized one sees. samples(s) names them: the global
// batch of step s is samples (s-1)*B .. s*B-1 of the stream, B the batch; NpyData's stream is the
// file's rows in order, wrapping (sample i is row i mod N), SyntheticData's is endless.
//
// SyntheticData: seeded, a new batch every step: integer inputs (token ids) uniform in
// [0, vocabulary) where the vocabulary is the row count of the embedding table the input indexes
// (1000 when none), float inputs N(0, 1); cross-entropy labels uniform in [0, classes) of the
// output's last axis, shaped as the output without it; mse targets N(0, 1) of the output's shape.
//
// NpyData: `--data X.npy --labels Y.npy`, NumPy arrays as users save them (np.save; read with
// xtensor's npy reader): X is [N, <the input's shape without the batch>], Y is [N, <the target's
// shape without the batch>]; batches are taken in order, wrapping around at the end. int32/int64
// arrays feed integer inputs and labels, float32/float64 arrays float inputs and mse targets.
// Errors (InputError, one line naming the file): not a .npy file, Fortran order, a shape or dtype
// that does not fit the model, fewer than one batch of rows, a model with several data inputs.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "graph/ir.h"
#include "launcher/runtime/backend.h"
#include "launcher/runtime/executor.h"

namespace tensoropt::runtime {

struct Batch {
  std::vector<Array> inputs;  // in g.inputs order
  Array target;               // labels (int64) or mse target (float32)
};

class DataSource {
 public:
  virtual ~DataSource() = default;
  // The batch for training step `step` (1-based).
  virtual Batch next(int64_t step) = 0;
  // The indices of step `step`'s samples in the stream (above), in batch order.
  virtual std::vector<int64_t> samples(int64_t step) const = 0;
};

std::unique_ptr<DataSource> synthetic_data(const Graph& g, LossKind loss, uint64_t seed, Backend& backend);
std::unique_ptr<DataSource> npy_data(const Graph& g, LossKind loss, const std::string& data_path,
                                     const std::string& labels_path, Backend& backend);

}  // namespace tensoropt::runtime
