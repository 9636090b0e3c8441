#include "graph/model_skim.h"

#include <cstdint>
#include <limits>

#include <fcntl.h>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>

#include "graph/error.h"
#include "graph/import_steps.h"

namespace tensoropt {
namespace {

using google::protobuf::io::CodedInputStream;

// The messages the skim descends into: ModelProto.graph (7), GraphProto.initializer (5); in an
// initializer (TensorProto) the data fields float_data (4), int32_data (5), int64_data (7),
// raw_data (9), double_data (10) and uint64_data (11) may be left out. string_data stays.
enum class Message { Model, Graph, Tensor, Other };

Message child(Message parent, uint32_t field) {
  if (parent == Message::Model && field == 7) return Message::Graph;
  if (parent == Message::Graph && field == 5) return Message::Tensor;
  return Message::Other;
}

bool data_field(uint32_t field) {
  return field == 4 || field == 5 || field == 7 || field == 9 || field == 10 || field == 11;
}

// No ONNX element type takes more than 16 bytes (complex128; a varint at most 10), so a data field
// longer than this holds more than kMaxFoldElements elements.
constexpr uint32_t kSkipBytes = 16 * static_cast<uint32_t>(kMaxFoldElements);

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

// Copies the fields of one message, up to `in`'s current limit (or the end of the file), to `out`;
// false for malformed input.
bool skim(CodedInputStream& in, Message kind, std::string& out) {
  for (;;) {
    const uint32_t tag = in.ReadTag();
    if (tag == 0) return in.ConsumedEntireMessage();
    const uint32_t field = tag >> 3;
    switch (tag & 7) {
      case 0: {
        uint64_t v = 0;
        if (!in.ReadVarint64(&v)) return false;
        put_varint(out, tag);
        put_varint(out, v);
        break;
      }
      case 1:
      case 5: {  // fixed 64 and 32 bits, copied as they are
        char raw[8];
        const int n = (tag & 7) == 1 ? 8 : 4;
        if (!in.ReadRaw(raw, n)) return false;
        put_varint(out, tag);
        out.append(raw, static_cast<size_t>(n));
        break;
      }
      case 2: {
        uint32_t length = 0;
        if (!in.ReadVarint32(&length) || length > static_cast<uint32_t>(std::numeric_limits<int>::max())) return false;
        const int size = static_cast<int>(length);
        const Message sub = child(kind, field);
        std::string inner;
        if (sub != Message::Other) {
          const CodedInputStream::Limit limit = in.PushLimit(size);
          if (!skim(in, sub, inner) || in.BytesUntilLimit() != 0) return false;
          in.PopLimit(limit);
        } else if (kind == Message::Tensor && data_field(field) && length > kSkipBytes) {
          if (!in.Skip(size)) return false;
          break;
        } else if (!in.ReadString(&inner, size)) {
          return false;
        }
        put_varint(out, tag);
        put_varint(out, inner.size());
        out += inner;
        break;
      }
      default:
        return false;  // groups (3, 4) are not in ONNX's schema; 6 and 7 are not wire types
    }
  }
}

}  // namespace

std::string skim_model_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw InputError(path + ": cannot be read");
  google::protobuf::io::FileInputStream file(fd);
  file.SetCloseOnDelete(true);
  std::string out;
  bool ok = false;
  {
    CodedInputStream in(&file);
    in.SetTotalBytesLimit(std::numeric_limits<int>::max());
    ok = skim(in, Message::Model, out);
  }
  if (file.GetErrno() != 0) throw InputError(path + ": cannot be read");
  if (!ok) throw InputError(path + ": not an ONNX model, or truncated (protobuf parse failed)");
  return out;
}

}  // namespace tensoropt
