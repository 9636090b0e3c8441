#!/usr/bin/env python3
"""Writes a libFuzzer seed corpus for import_fuzzer into OUT_DIR (not committed).

Seeds:
  - every shipped model (models/*.onnx, tests/fixtures/models/*.onnx) and fuzz/regressions/*.onnx;
  - for each shipped model, truncated copies and bit-flipped copies (fixed random seed);
  - small hand-encoded models of one to three nodes covering most ops in the catalogue. Mutating
    a 200-byte model reaches the op code far more often than mutating a 300 KB one.
Needs only the Python standard library (the protobuf wire format is written by hand below).
Usage: fuzz/make_corpus.py [--no-regressions] OUT_DIR [REPO_ROOT]
"""
import hashlib
import pathlib
import random
import struct
import sys

# --- minimal protobuf writer (field numbers from onnx/onnx.proto) -----------------------------

def _varint(n: int) -> bytes:
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def f_int(field: int, n: int) -> bytes:
    return _varint(field << 3) + _varint(n)


def f_bytes(field: int, data) -> bytes:
    if isinstance(data, str):
        data = data.encode()
    return _varint(field << 3 | 2) + _varint(len(data)) + data


def f_float(field: int, x: float) -> bytes:
    return _varint(field << 3 | 5) + struct.pack("<f", x)


FLOAT, INT64, BOOL = 1, 7, 9


def tensor(name: str, dims, dtype=FLOAT, values=None) -> bytes:
    """TensorProto; raw_data holds `values` (or zeros) for int64, none for float (weightless)."""
    out = b"".join(f_int(1, d) for d in dims) + f_int(2, dtype) + f_bytes(8, name)
    if values is not None:
        fmt = {INT64: "<q", FLOAT: "<f", BOOL: "<?"}[dtype]
        out += f_bytes(9, b"".join(struct.pack(fmt, v) for v in values))
    elif dtype == FLOAT:
        n = 1
        for d in dims:
            n *= d
        out += f_bytes(9, b"\0" * 4 * n)
    return out


def value_info(name: str, dims=None, dtype=FLOAT) -> bytes:
    """ValueInfoProto; dims None: no shape (as graph outputs usually are); a str dim is symbolic."""
    ttype = f_int(1, dtype)
    if dims is not None:
        ttype += f_bytes(2, b"".join(f_bytes(1, f_bytes(2, d) if isinstance(d, str) else f_int(1, d))
                                     for d in dims))
    return f_bytes(1, name) + f_bytes(2, f_bytes(1, ttype))


def attr(name: str, value) -> bytes:
    out = f_bytes(1, name)
    if isinstance(value, float):
        return out + f_int(20, 1) + f_float(2, value)
    if isinstance(value, int):
        return out + f_int(20, 2) + f_int(3, value)
    if isinstance(value, str):
        return out + f_int(20, 3) + f_bytes(4, value)
    if isinstance(value, bytes):   # an already-encoded TensorProto
        return out + f_int(20, 4) + f_bytes(5, value)
    return out + f_int(20, 7) + b"".join(f_int(8, v) for v in value)


def node(op: str, inputs, outputs, **attrs) -> bytes:
    return (b"".join(f_bytes(1, i) for i in inputs) + b"".join(f_bytes(2, o) for o in outputs)
            + f_bytes(3, op + "_0") + f_bytes(4, op) + b"".join(f_bytes(5, attr(k, v)) for k, v in attrs.items()))


def model(nodes, inputs, outputs, inits=(), opset=17) -> bytes:
    graph = (b"".join(f_bytes(1, n) for n in nodes) + f_bytes(2, "g")
             + b"".join(f_bytes(5, t) for t in inits)
             + b"".join(f_bytes(11, v) for v in inputs) + b"".join(f_bytes(12, v) for v in outputs))
    return (f_int(1, 8) + f_bytes(2, "fuzz") + f_bytes(7, graph)
            + f_bytes(8, f_bytes(1, "") + f_int(2, opset)))


def small_models():
    X = value_info("x", ["N", 4, 8])
    Y = value_info("y")
    out = {}
    for op in ["Relu", "Sigmoid", "Tanh", "Exp", "Log", "Sqrt", "Neg", "Abs", "Erf", "Softplus",
               "Identity", "Reciprocal", "HardSwish", "Floor", "Cos"]:
        out[op] = model([node(op, ["x"], ["y"])], [X], [Y])
    for op in ["Add", "Mul", "Sub", "Div", "Pow", "Max", "Min"]:
        out[op] = model([node(op, ["x", "w"], ["y"])], [X], [Y], [tensor("w", [8])])
    for op in ["Equal", "Less", "Greater"]:
        out[op] = model([node(op, ["x", "x"], ["y"])], [X], [value_info("y", None, BOOL)])
    out["MatMul"] = model([node("MatMul", ["x", "w"], ["y"])], [X], [Y], [tensor("w", [8, 16])])
    out["Gemm"] = model([node("Gemm", ["x", "w", "b"], ["y"], transB=1)], [value_info("x", ["N", 8])], [Y],
                        [tensor("w", [16, 8]), tensor("b", [16])])
    img = value_info("x", ["N", 3, 8, 8])
    out["Conv"] = model([node("Conv", ["x", "w", "b"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                              strides=[2, 2], group=1, dilations=[1, 1])],
                        [img], [Y], [tensor("w", [6, 3, 3, 3]), tensor("b", [6])])
    out["MaxPool"] = model([node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2])], [img], [Y])
    out["AveragePool"] = model([node("AveragePool", ["x"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                                     ceil_mode=1)], [img], [Y])
    out["GlobalAveragePool"] = model([node("GlobalAveragePool", ["x"], ["y"])], [img], [Y])
    out["BatchNormalization"] = model(
        [node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], epsilon=1e-5)], [img], [Y],
        [tensor("s", [3]), tensor("b", [3]), tensor("m", [3]), tensor("v", [3])])
    out["LayerNormalization"] = model([node("LayerNormalization", ["x", "s", "b"], ["y"], axis=-1)], [X], [Y],
                                      [tensor("s", [8]), tensor("b", [8])])
    out["Softmax"] = model([node("Softmax", ["x"], ["y"], axis=-1)], [X], [Y])
    out["Transpose"] = model([node("Transpose", ["x"], ["y"], perm=[0, 2, 1])], [X], [Y])
    out["Flatten"] = model([node("Flatten", ["x"], ["y"], axis=1)], [X], [Y])
    out["Reshape"] = model([node("Reshape", ["x", "s"], ["y"])], [X], [Y],
                           [tensor("s", [3], INT64, [0, -1, 2])])
    out["Unsqueeze"] = model([node("Unsqueeze", ["x", "a"], ["y"])], [X], [Y], [tensor("a", [1], INT64, [1])])
    out["Squeeze"] = model([node("Squeeze", ["x", "a"], ["y"])], [value_info("x", ["N", 1, 8])], [Y],
                           [tensor("a", [1], INT64, [1])])
    out["Concat"] = model([node("Concat", ["x", "x"], ["y"], axis=1)], [X], [Y])
    out["Split"] = model([node("Split", ["x", "s"], ["y", "z"], axis=2)], [X], [Y, value_info("z")],
                         [tensor("s", [2], INT64, [3, 5])])
    out["Slice"] = model([node("Slice", ["x", "st", "en", "ax", "sp"], ["y"])], [X], [Y],
                         [tensor("st", [1], INT64, [1]), tensor("en", [1], INT64, [-1]),
                          tensor("ax", [1], INT64, [2]), tensor("sp", [1], INT64, [2])])
    out["Gather"] = model([node("Gather", ["w", "x"], ["y"], axis=0)], [value_info("x", ["N", 5], INT64)], [Y],
                          [tensor("w", [100, 16])])
    out["Expand"] = model([node("Expand", ["x", "s"], ["y"])], [value_info("x", ["N", 1, 8])], [Y],
                          [tensor("s", [3], INT64, [1, 4, 8])])
    out["Tile"] = model([node("Tile", ["x", "r"], ["y"])], [X], [Y], [tensor("r", [3], INT64, [1, 2, 3])])
    out["Pad"] = model([node("Pad", ["x", "p"], ["y"], mode="constant")], [X], [Y],
                       [tensor("p", [6], INT64, [0, 1, 2, 0, 1, 2])])
    out["ReduceMean"] = model([node("ReduceMean", ["x", "a"], ["y"], keepdims=1)], [X], [Y],
                              [tensor("a", [1], INT64, [-1])])
    out["ReduceSum"] = model([node("ReduceSum", ["x", "a"], ["y"], keepdims=0)], [X], [Y],
                             [tensor("a", [2], INT64, [1, 2])])
    out["Where"] = model([node("Greater", ["x", "x"], ["c"]), node("Where", ["c", "x", "x"], ["y"])], [X], [Y])
    out["Trilu"] = model([node("Trilu", ["x"], ["y"], upper=1)], [X], [Y])
    out["Clip"] = model([node("Clip", ["x", "lo", "hi"], ["y"])], [X], [Y],
                        [tensor("lo", [], FLOAT, [0.0]), tensor("hi", [], FLOAT, [6.0])])
    out["Cast"] = model([node("Cast", ["x"], ["y"], to=INT64)], [X], [value_info("y", None, INT64)])
    out["Dropout"] = model([node("Dropout", ["x"], ["y"], seed=0)], [X], [Y])
    # Shape subgraph folded at import: Shape -> Gather -> Unsqueeze -> Concat -> Reshape.
    out["ShapeFold"] = model(
        [node("Shape", ["x"], ["s"]), node("Gather", ["s", "i0"], ["n"], axis=0),
         node("Unsqueeze", ["n", "a0"], ["nu"]), node("Concat", ["nu", "m1"], ["shp"], axis=0),
         node("Reshape", ["x", "shp"], ["y"])],
        [X], [Y], [tensor("i0", [], INT64, [0]), tensor("a0", [1], INT64, [0]), tensor("m1", [1], INT64, [-1])])
    out["ConstantOfShape"] = model(
        [node("Shape", ["x"], ["s"]), node("ConstantOfShape", ["s"], ["c"], value=tensor("v", [1], FLOAT, [1.0])),
         node("Add", ["x", "c"], ["y"])], [X], [Y])
    out["Range"] = model([node("Range", ["a", "b", "d"], ["r"]), node("Cast", ["r"], ["rf"], to=FLOAT),
                          node("Add", ["x", "rf"], ["y"])], [X], [Y],
                         [tensor("a", [], INT64, [0]), tensor("b", [], INT64, [8]), tensor("d", [], INT64, [1])])
    out["Constant"] = model([node("Constant", [], ["c"], value=tensor("v", [8], FLOAT, [0.5] * 8)),
                             node("Mul", ["x", "c"], ["y"])], [X], [Y])
    out["ScatterND"] = model([node("ScatterND", ["x", "i", "u"], ["y"])], [X], [Y],
                             [tensor("i", [1, 1], INT64, [0]), tensor("u", [1, 4, 8])])
    return out


def main() -> int:
    args = sys.argv[1:]
    with_regressions = "--no-regressions" not in args
    args = [a for a in args if a != "--no-regressions"]
    if len(args) not in (1, 2) or any(a.startswith("-") for a in args):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    out = pathlib.Path(args[0])
    root = pathlib.Path(args[1]) if len(args) == 2 else pathlib.Path(__file__).resolve().parent.parent
    out.mkdir(parents=True, exist_ok=True)
    models = sorted(root.glob("models/*.onnx")) + sorted(root.glob("tests/fixtures/models/*.onnx"))
    regressions = sorted(root.glob("fuzz/regressions/*.onnx")) if with_regressions else []
    if not models:
        print(f"make_corpus: no models under {root}", file=sys.stderr)
        return 1
    rng = random.Random(20240601)
    count = 0

    def write(data: bytes) -> None:
        nonlocal count
        (out / hashlib.sha1(data).hexdigest()).write_bytes(data)
        count += 1

    for path in models + regressions:
        data = path.read_bytes()
        write(data)
        if path in regressions or not data:
            continue
        for frac in (0.1, 0.5, 0.9):                      # truncated
            write(data[: max(1, int(len(data) * frac))])
        for _ in range(4):                                 # 1 to 8 flipped bits
            b = bytearray(data)
            for _ in range(rng.randint(1, 8)):
                i = rng.randrange(len(b))
                b[i] ^= 1 << rng.randrange(8)
            write(bytes(b))
    small = small_models()
    for data in small.values():
        write(data)
    print(f"make_corpus: {count} seeds ({len(models)} models, {len(regressions)} regressions, "
          f"{len(small)} small models) in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
