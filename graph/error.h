// Errors that cross layer boundaries.
//
// InputError: the user's input is at fault (a file, a node, a flag); its message is one line that
// names the thing, and the CLI exits with code 2. Anything else thrown is an internal fault (exit 1).
// TO_CHECK(cond) guards internal invariants: it throws InternalError with file and line.
#pragma once

#include <stdexcept>
#include <string>

namespace tensoropt {

class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& what) : std::runtime_error(what) {}
};

class InternalError : public std::logic_error {
 public:
  explicit InternalError(const std::string& what) : std::logic_error(what) {}
};

[[noreturn]] void internal_fault(const char* file, int line, const std::string& what);

}  // namespace tensoropt

#define TO_CHECK(cond)                                                         \
  do {                                                                         \
    if (!(cond)) ::tensoropt::internal_fault(__FILE__, __LINE__, #cond);       \
  } while (0)
