#include "launcher/runtime/allocator.h"

#include <cstdlib>
#include <unistd.h>
#include <string>

#include "graph/units.h"
#include <new>

namespace tensoropt::runtime {

std::string_view memory_kind_name(MemoryKind k) {
  switch (k) {
    case MemoryKind::Parameters: return "parameters";
    case MemoryKind::Gradients: return "gradients";
    case MemoryKind::OptimizerState: return "optimizer state";
    case MemoryKind::Activations: return "activations";
    case MemoryKind::Inputs: return "data inputs";
    case MemoryKind::Buffers: return "buffers and constants";
    case MemoryKind::Transients: return "transients";
  }
  return "?";
}

Block& Block::operator=(Block&& o) noexcept {
  if (this != &o) {
    reset();
    owner_ = o.owner_;
    data_ = o.data_;
    bytes_ = o.bytes_;
    kind_ = o.kind_;
    o.owner_ = nullptr;
    o.data_ = nullptr;
    o.bytes_ = 0;
  }
  return *this;
}

void Block::reset() {
  if (owner_) owner_->release(*this);
  owner_ = nullptr;
  data_ = nullptr;
  bytes_ = 0;
}

Block Allocator::allocate(int64_t bytes, MemoryKind kind) {
  if (bytes < 0) throw std::bad_alloc();
  Block b;
  b.kind_ = kind;
  if (bytes == 0) return b;
  try {
    b.data_ = raw_allocate(bytes);
  } catch (const std::bad_alloc& e) {
    const OutOfMemory* device = dynamic_cast<const OutOfMemory*>(&e);
    throw OutOfMemory("out of memory allocating " + with_commas(bytes) + " bytes of " + std::string(memory_kind_name(kind)) + " (" +
                      with_commas(stats().live_total) + " bytes held by this run" + (device ? "; " + std::string(device->what()) : "") +
                      ")");
  }
  b.bytes_ = bytes;
  b.owner_ = this;
  std::lock_guard<std::mutex> lock(mu_);
  auto k = static_cast<size_t>(kind);
  stats_.live[k] += bytes;
  stats_.live_total += bytes;
  if (stats_.live[k] > stats_.peak[k]) stats_.peak[k] = stats_.live[k];
  if (stats_.live_total > stats_.peak_total) {
    stats_.peak_total = stats_.live_total;
    stats_.at_peak = stats_.live;
  }
  return b;
}

void Allocator::release(Block& b) {
  raw_free(b.data_);
  std::lock_guard<std::mutex> lock(mu_);
  auto k = static_cast<size_t>(b.kind_);
  stats_.live[k] -= b.bytes_;
  stats_.live_total -= b.bytes_;
}

MemoryStats Allocator::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void Allocator::reset_peaks() {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.peak = stats_.live;
  stats_.peak_total = stats_.live_total;
  stats_.at_peak = stats_.live;
}

void* HostAllocator::raw_allocate(int64_t bytes) {
  // More than the machine has can never be had: say so instead of asking (an overcommitting
  // kernel may grant it and kill the process on first touch).
  static const int64_t physical = static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE);
  if (physical > 0 && bytes > physical) throw OutOfMemory("the machine has " + with_commas(physical) + " bytes of memory");
  auto rounded = static_cast<size_t>((bytes + 63) / 64 * 64);
  void* p = std::aligned_alloc(64, rounded);
  if (!p) throw std::bad_alloc();
  return p;
}

void HostAllocator::raw_free(void* p) { std::free(p); }

}  // namespace tensoropt::runtime
