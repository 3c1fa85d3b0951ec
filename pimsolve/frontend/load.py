"""ONNX file -> ``ir.Graph``: parse, check, fix input shapes, fold constants, convert ops."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

import onnx
from google.protobuf.message import DecodeError

from pimsolve.errors import InputError
from pimsolve.frontend.fold import fold
from pimsolve.frontend.ops import NodeContext, converter_for, supported_ops
from pimsolve.frontend.passes import fold_batchnorm, fuse_activation, fuse_erf_gelu
from pimsolve.ir import Graph, LayerId, Tensor, TensorName

__all__ = ["load_onnx", "read_model", "parse_input_shape"]


def parse_input_shape(text: str) -> tuple[str, tuple[int, ...]]:
    """Parse ``NAME=1x3x224x224`` into ``("NAME", (1, 3, 224, 224))``."""
    name, sep, dims = text.rpartition("=")
    if not sep or not name or not re.fullmatch(r"\d+(x\d+)*", dims):
        raise InputError(f"--input-shape '{text}': expected NAME=DxDx..., e.g. "
                         f"input=1x3x224x224")
    shape = tuple(int(d) for d in dims.split("x"))
    if 0 in shape:
        raise InputError(f"--input-shape '{text}': dimensions must be positive")
    return name, shape


def read_model(source: str | Path | onnx.ModelProto) -> onnx.ModelProto:
    """Read and check an ONNX model; every failure is an ``InputError`` naming the file."""
    if isinstance(source, onnx.ModelProto):
        model, origin = source, source.graph.name or "<model>"
    else:
        path = Path(source)
        origin = str(path)
        if not path.is_file():
            raise InputError(f"{origin}: no such model file")
        data = path.read_bytes()
        if not data:
            raise InputError(f"{origin}: empty file, not an ONNX model")
        try:
            model = onnx.load_model_from_string(data)
        except (DecodeError, ValueError, RuntimeError) as exc:
            raise InputError(f"{origin}: not a valid ONNX model (protobuf parse failed: "
                             f"{_one_line(exc)})") from None
        if not model.graph.node and not model.graph.input and not model.graph.output:
            raise InputError(f"{origin}: not a valid ONNX model (no graph in the file)")
        try:
            onnx.load_external_data_for_model(model, str(path.parent))
        except (OSError, ValueError) as exc:
            raise InputError(f"{origin}: cannot load external weights: {_one_line(exc)}") from None
    try:
        onnx.checker.check_model(model)
    except (onnx.checker.ValidationError, ValueError) as exc:
        raise InputError(f"{origin}: invalid ONNX model: {_one_line(exc)}") from None
    return model


def _one_line(exc: Exception) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__


def load_onnx(source: str | Path | onnx.ModelProto, *,
              input_shapes: Mapping[str, tuple[int, ...]] | None = None,
              name: str | None = None) -> Graph:
    """Load an ONNX model as a ``Graph`` of layers with static shapes.

    Parameters
    ----------
    source
        A path to an ``.onnx`` file, or a loaded ``onnx.ModelProto``.
    input_shapes
        Static shapes for model inputs, by input name; needed where the file has symbolic
        dimensions (e.g. ``{"input": (1, 3, 224, 224)}``).
    name
        The graph's name; default: the file's stem or the ONNX graph name.

    Raises
    ------
    InputError
        For a missing, empty, corrupt or invalid file, an unsupported op, or a dimension left
        symbolic.
    """
    model = read_model(source)
    model = _with_static_inputs(model, dict(input_shapes or {}))
    _reject_foreign_ops(model)
    folded = fold(model)
    seen: dict[str, int] = {}
    layers = []
    for index, node in enumerate(folded.nodes):
        converter = converter_for(node.op_type)
        label = node.name or (node.output[0] if node.output else f"{node.op_type}_{index}")
        if converter is None:
            raise InputError(f"unsupported op '{node.op_type}' at node '{label}'; supported "
                             f"ops: {', '.join(supported_ops())}")
        count = seen.get(label, 0)
        seen[label] = count + 1
        unique = LayerId(label if count == 0 else f"{label}#{count}")
        layers.append(converter(NodeContext(node, unique, folded)))
    outputs = set(folded.outputs)
    layers = fuse_erf_gelu(fuse_activation(fold_batchnorm(layers, outputs), outputs), outputs)
    graph_name = name or (Path(source).stem if not isinstance(source, onnx.ModelProto)
                          else model.graph.name or "model")
    return Graph(
        name=graph_name,
        inputs=tuple(_tensor(folded, n) for n in folded.inputs),
        outputs=tuple(_tensor(folded, n) for n in folded.outputs if n not in folded.constants),
        layers=tuple(layers))


def _tensor(folded, name: str) -> Tensor:
    return Tensor(TensorName(name), folded.shapes[name], folded.dtypes.get(name, "float32"))


def _with_static_inputs(model: onnx.ModelProto, shapes: dict[str, tuple[int, ...]]):
    """A copy of ``model`` whose real inputs all have static shapes."""
    initializers = {init.name for init in model.graph.initializer}
    real = [i for i in model.graph.input if i.name not in initializers]
    names = [i.name for i in real]
    unknown = sorted(set(shapes) - set(names))
    if unknown:
        raise InputError(f"--input-shape names no model input: {', '.join(unknown)}; model "
                         f"inputs: {', '.join(names)}")
    model = onnx.ModelProto.FromString(model.SerializeToString()) if shapes else model
    for info in model.graph.input:
        if info.name in initializers:
            continue
        dims = info.type.tensor_type.shape.dim
        if info.name in shapes:
            shape = shapes[info.name]
            if len(shape) != len(dims) and len(dims) > 0:
                raise InputError(f"--input-shape {info.name}: rank {len(shape)} given, the "
                                 f"model's input has rank {len(dims)}")
            info.type.tensor_type.shape.Clear()
            for d in shape:
                info.type.tensor_type.shape.dim.add().dim_value = d
            continue
        if not info.type.tensor_type.HasField("shape"):
            raise InputError(f"model input '{info.name}' has no shape; give it with "
                             f"--input-shape {info.name}=Dx...")
        for axis, d in enumerate(dims):
            if not d.HasField("dim_value") or d.dim_value <= 0:
                symbol = d.dim_param or "?"
                raise InputError(f"model input '{info.name}' has symbolic dimension "
                                 f"'{symbol}' (axis {axis}); give its size with "
                                 f"--input-shape {info.name}=" +
                                 "x".join(str(x.dim_value) if x.dim_value > 0 else "N"
                                          for x in dims))
    return model


def _reject_foreign_ops(model: onnx.ModelProto) -> None:
    """Ops outside the standard ONNX domain cannot even be shape-inferred: name them now."""
    for index, node in enumerate(model.graph.node):
        if node.domain not in ("", "ai.onnx"):
            label = node.name or (node.output[0] if node.output else f"node {index}")
            raise InputError(f"unsupported op '{node.domain}.{node.op_type}' at node "
                             f"'{label}'; supported ops: {', '.join(supported_ops())}")
