"""Constant folding and static shape inference for ONNX graphs.

Real exported models build weights and shapes out of ``Constant``, ``ConstantOfShape``,
``Shape``/``Gather``/``Concat`` chains and ``Identity`` nodes. ``fold`` evaluates every node whose
inputs are all known (and ``Shape``/``Size`` of any tensor with a static shape), until nothing
changes, and returns the remaining graph with every tensor's static shape. Common ops are
evaluated with numpy (``ConstantOfShape`` as a zero-copy broadcast view, so shape-only weights
cost no memory); any other op falls back to ``onnx.reference``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import helper, numpy_helper, shape_inference

from pimsolve.errors import InputError

__all__ = ["FoldedModel", "fold"]

_SMALL = 4096  # constants up to this many elements stay initializers for shape inference


@dataclass
class FoldedModel:
    """An ONNX graph after folding: remaining nodes, constants, and every tensor's type."""

    nodes: list[onnx.NodeProto]
    constants: dict[str, np.ndarray]
    shapes: dict[str, tuple[int, ...]]
    dtypes: dict[str, str]
    inputs: list[str]
    outputs: list[str]


def fold(model: onnx.ModelProto, *, max_rounds: int = 8) -> FoldedModel:
    """Fold constants and infer static shapes of ``model`` (whose inputs have static shapes)."""
    graph = model.graph
    constants: dict[str, np.ndarray] = {
        init.name: numpy_helper.to_array(init) for init in graph.initializer}
    inputs = [i.name for i in graph.input if i.name not in constants]
    outputs = [o.name for o in graph.output]
    nodes = list(graph.node)
    opset = _opset(model)
    for _ in range(max_rounds):
        shapes, dtypes = _infer(model, nodes, constants, inputs, outputs, opset)
        remaining, changed = [], False
        for node in nodes:
            values = _evaluate(node, constants, shapes, opset)
            if values is None:
                remaining.append(node)
                continue
            changed = True
            for name, value in zip(node.output, values, strict=False):
                if name:
                    constants[name] = value
        if not changed:  # the last inference already describes the remaining graph
            return FoldedModel(nodes, constants, shapes, dtypes, inputs, outputs)
        nodes = remaining
    shapes, dtypes = _infer(model, nodes, constants, inputs, outputs, opset)
    return FoldedModel(nodes, constants, shapes, dtypes, inputs, outputs)


def _opset(model: onnx.ModelProto) -> int:
    return next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 1)


def _infer(model, nodes, constants, inputs, outputs, opset):
    """Run ONNX shape inference on the remaining graph; weights are given by shape only."""
    used = {name for node in nodes for name in node.input if name} | set(outputs)
    initializers, weight_inputs = [], []
    for name, value in constants.items():
        if name not in used:
            continue
        if value.size <= _SMALL:
            initializers.append(numpy_helper.from_array(np.array(value, order="C"), name))
        else:
            weight_inputs.append(helper.make_tensor_value_info(
                name, helper.np_dtype_to_tensor_dtype(value.dtype), value.shape))
    graph_inputs = [i for i in model.graph.input if i.name in inputs]
    out_infos = [o for o in model.graph.output if o.name not in constants]
    graph = helper.make_graph(nodes, model.graph.name or "model", graph_inputs + weight_inputs,
                              out_infos, initializer=initializers)
    probe = helper.make_model(graph, opset_imports=list(model.opset_import),
                              ir_version=max(model.ir_version, 4))
    try:
        inferred = shape_inference.infer_shapes(probe, strict_mode=True, data_prop=True)
    except Exception as exc:  # onnx raises several types; all mean the model is inconsistent
        raise InputError(f"ONNX shape inference failed: {_first_line(exc)}") from None
    shapes: dict[str, tuple[int, ...]] = {}
    dtypes: dict[str, str] = {}
    infos = list(inferred.graph.input) + list(inferred.graph.value_info) + list(
        inferred.graph.output)
    for info in infos:
        ttype = info.type.tensor_type
        if not ttype.HasField("shape"):
            continue
        dims = [d.dim_value if d.HasField("dim_value") else None for d in ttype.shape.dim]
        if all(d is not None for d in dims):
            shapes[info.name] = tuple(int(d) for d in dims)
            dtypes[info.name] = helper.tensor_dtype_to_np_dtype(ttype.elem_type).name
    for name, value in constants.items():
        shapes[name] = tuple(value.shape)
        dtypes[name] = value.dtype.name
    return shapes, dtypes


def _first_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return text[-1] if text else type(exc).__name__


def _evaluate(node, constants, shapes, opset) -> list[np.ndarray] | None:
    """The outputs of ``node`` if they are known before inference, else None."""
    op = node.op_type
    if node.domain not in ("", "ai.onnx"):
        return None
    if op in ("Shape", "Size") and node.input[0] in shapes and node.input[0] not in constants:
        shape = shapes[node.input[0]]
        if op == "Size":
            return [np.array(int(np.prod(shape)), dtype=np.int64)]
        attrs = _attrs(node)
        start, end = attrs.get("start", 0), attrs.get("end", None)
        return [np.array(shape[start:end], dtype=np.int64)]
    if op in ("RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
              "Multinomial", "Bernoulli"):
        return None
    args = [constants.get(name) if name else None for name in node.input]
    if any(name and a is None for name, a in zip(node.input, args, strict=True)):
        return None
    fast = _NUMPY_OPS.get(op)
    try:
        if fast is not None:
            return fast(args, _attrs(node), opset)
        from onnx.reference import ReferenceEvaluator

        evaluator = ReferenceEvaluator(node)
        feeds = {name: value for name, value in zip(node.input, args, strict=True) if name}
        return list(evaluator.run(None, feeds))
    except Exception as exc:  # a constant subgraph the model's author got wrong
        raise InputError(f"cannot evaluate constant node '{node.name or node.output[0]}' "
                         f"({op}): {_first_line(exc)}") from None


def _attrs(node: onnx.NodeProto) -> dict:
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _constant(args, attrs, opset):
    if "value" in attrs:
        return [numpy_helper.to_array(attrs["value"])]
    for key, dtype in (("value_float", np.float32), ("value_floats", np.float32),
                       ("value_int", np.int64), ("value_ints", np.int64)):
        if key in attrs:
            return [np.array(attrs[key], dtype=dtype)]
    raise ValueError(f"unsupported Constant attribute {sorted(attrs)}")


def _constant_of_shape(args, attrs, opset):
    fill = numpy_helper.to_array(attrs["value"]) if "value" in attrs else np.zeros(1, np.float32)
    shape = tuple(int(d) for d in args[0])
    return [np.broadcast_to(fill.reshape(()), shape)]


def _axes(args, attrs, index=1):
    if len(args) > index and args[index] is not None:
        return [int(a) for a in args[index]]
    return list(attrs.get("axes", []))


def _unsqueeze(args, attrs, opset):
    x = args[0]
    axes = sorted(a % (x.ndim + len(_axes(args, attrs))) for a in _axes(args, attrs))
    for a in axes:
        x = np.expand_dims(x, a)
    return [x]


def _squeeze(args, attrs, opset):
    axes = _axes(args, attrs)
    x = args[0]
    return [np.squeeze(x, axis=tuple(a % x.ndim for a in axes)) if axes else np.squeeze(x)]


def _reshape(args, attrs, opset):
    x, shape = args[0], [int(d) for d in args[1]]
    if not attrs.get("allowzero", 0):
        shape = [x.shape[i] if d == 0 else d for i, d in enumerate(shape)]
    return [np.reshape(x, shape)]


def _slice(args, attrs, opset):
    x = args[0]
    if opset < 10:
        starts, ends = attrs["starts"], attrs["ends"]
        axes, steps = attrs.get("axes", list(range(len(starts)))), [1] * len(starts)
    else:
        starts, ends = list(args[1]), list(args[2])
        axes = list(args[3]) if len(args) > 3 and args[3] is not None else list(
            range(len(starts)))
        steps = list(args[4]) if len(args) > 4 and args[4] is not None else [1] * len(starts)
    index = [slice(None)] * x.ndim
    for s, e, a, st in zip(starts, ends, axes, steps, strict=True):
        index[int(a)] = slice(int(s), int(e), int(st))
    return [x[tuple(index)]]


def _div(args, attrs, opset):
    a, b = args
    if np.issubdtype(a.dtype, np.integer):
        return [np.trunc(a / b).astype(a.dtype)]
    return [(a / b).astype(np.result_type(a, b))]


def _cast(args, attrs, opset):
    return [args[0].astype(helper.tensor_dtype_to_np_dtype(attrs["to"]))]


def _gather(args, attrs, opset):
    return [np.take(args[0], args[1].astype(np.int64), axis=attrs.get("axis", 0))]


_NUMPY_OPS: dict[str, Callable] = {
    "Constant": _constant,
    "ConstantOfShape": _constant_of_shape,
    "Identity": lambda a, at, o: [a[0]],
    "Dropout": lambda a, at, o: [a[0], np.ones(a[0].shape, dtype=bool)],
    "Cast": _cast,
    "Gather": _gather,
    "Unsqueeze": _unsqueeze,
    "Squeeze": _squeeze,
    "Concat": lambda a, at, o: [np.concatenate(a, axis=at["axis"])],
    "Reshape": _reshape,
    "Flatten": lambda a, at, o: [a[0].reshape(
        int(np.prod(a[0].shape[: at.get("axis", 1)])), -1)],
    "Transpose": lambda a, at, o: [np.transpose(a[0], at.get("perm"))],
    "Slice": _slice,
    "Add": lambda a, at, o: [a[0] + a[1]],
    "Sub": lambda a, at, o: [a[0] - a[1]],
    "Mul": lambda a, at, o: [a[0] * a[1]],
    "Div": _div,
    "Sqrt": lambda a, at, o: [np.sqrt(a[0])],
    "Neg": lambda a, at, o: [-a[0]],
    "Range": lambda a, at, o: [np.arange(a[0], a[1], a[2]).astype(a[0].dtype)],
    "Equal": lambda a, at, o: [np.equal(a[0], a[1])],
    "Where": lambda a, at, o: [np.where(a[0], a[1], a[2])],
    "Expand": lambda a, at, o: [a[0] * np.ones(tuple(int(d) for d in a[1]), a[0].dtype)],
}
