// Device memory with a ledger: every block is tagged with what it holds, and the allocator counts
// live and peak bytes per kind and in total, so a run can set measured memory against the plan's
// prediction kind by kind (docs/runtime.md "Memory").
//
// The kinds are the planner's memory terms (docs/cost-model.md "Memory"): parameters, gradients,
// optimizer state, activations saved for backward, data inputs, buffers and constants, and
// transients (everything an op needs only while it runs: outputs nobody keeps, gradients on their
// way back, workspaces). A block's kind is fixed when it is allocated.
//
// Allocator is the interface each backend implements (CPU: aligned host memory; CUDA: device
// memory); the ledger is common to all. Blocks are released by Block's destructor. Thread-safe:
// the ledger is guarded by a mutex (kernels may allocate from worker threads).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <string_view>

namespace tensoropt::runtime {

enum class MemoryKind : uint8_t { Parameters, Gradients, OptimizerState, Activations, Inputs, Buffers, Transients };
constexpr int kMemoryKinds = 7;
std::string_view memory_kind_name(MemoryKind k);  // "parameters", "gradients", ...

struct MemoryStats {
  std::array<int64_t, kMemoryKinds> live{};   // bytes now, per kind
  std::array<int64_t, kMemoryKinds> peak{};   // the most each kind held at once
  int64_t live_total = 0;
  int64_t peak_total = 0;                     // the most all kinds held at once
  // Each kind's bytes at the moment peak_total was reached.
  std::array<int64_t, kMemoryKinds> at_peak{};
};

// A device out of memory: what() says how many bytes of which kind were asked for, what was held
// then, and (where the allocator knows) what the device had free; the executors add the node and
// the tensor (with_context). Still a std::bad_alloc.
class OutOfMemory : public std::bad_alloc {
 public:
  explicit OutOfMemory(std::string what) : what_(std::move(what)) {}
  const char* what() const noexcept override { return what_.c_str(); }
  // The same error with "<context>: " in front.
  OutOfMemory with_context(const std::string& context) const { return OutOfMemory(context + ": " + what_); }

 private:
  std::string what_;
};

class Allocator;

// One allocation. Move-only; frees itself through its allocator.
class Block {
 public:
  Block() = default;
  Block(Block&& o) noexcept { *this = std::move(o); }
  Block& operator=(Block&& o) noexcept;
  Block(const Block&) = delete;
  Block& operator=(const Block&) = delete;
  ~Block() { reset(); }
  void reset();
  void* data() const { return data_; }
  int64_t bytes() const { return bytes_; }
  MemoryKind kind() const { return kind_; }

 private:
  friend class Allocator;
  Allocator* owner_ = nullptr;
  void* data_ = nullptr;
  int64_t bytes_ = 0;
  MemoryKind kind_ = MemoryKind::Transients;
};

class Allocator {
 public:
  virtual ~Allocator() = default;
  // A block of `bytes` (0 allowed: a null block that still counts nothing). Throws OutOfMemory
  // when the device has no memory left.
  Block allocate(int64_t bytes, MemoryKind kind);
  MemoryStats stats() const;
  // Forgets the peaks (live bytes stay): a run measures its steady-state step this way.
  void reset_peaks();

 protected:
  // Throws std::bad_alloc (or OutOfMemory with the device's own account) when out of memory.
  virtual void* raw_allocate(int64_t bytes) = 0;
  virtual void raw_free(void* p) = 0;

 private:
  friend class Block;
  void release(Block& b);
  mutable std::mutex mu_;
  MemoryStats stats_;
};

// Host memory aligned to 64 bytes (a cache line, and enough for any SIMD load).
class HostAllocator final : public Allocator {
 protected:
  void* raw_allocate(int64_t bytes) override;
  void raw_free(void* p) override;
};

}  // namespace tensoropt::runtime
