// A model file read without the element data of its large weights.
//
// skim_model_file returns the bytes of the file's ModelProto with the data fields (raw_data and
// the typed *_data arrays) of the graph's initializers left out where a field's size proves the
// tensor holds more than kMaxFoldElements elements (over 16 bytes per kMaxFoldElements: no ONNX
// element type takes more). The importer reads no value that large (graph/onnx_proto.cc) and the
// runtime reads weights from the file itself, so a model of inline weights is imported in memory
// for its graph: the file is streamed, and the skipped fields are seeked over, never read.
// Everything else is copied field for field; parsing the result equals parsing the file and then
// clearing those fields.
//
// Errors: InputError naming the file for one that cannot be read, or is not well-formed protobuf
// (truncated, a field cut short, a group or an unknown wire type). Thread-safe: no shared state.
#pragma once

#include <string>

namespace tensoropt {

std::string skim_model_file(const std::string& path);

}  // namespace tensoropt
