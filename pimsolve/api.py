"""The public pipeline, one typed call per arrow of the flow.

>>> from pimsolve.api import inspect_model
>>> result = inspect_model("vgg8-28", target="isaac")
>>> result.workload.fits
True
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import onnx

from pimsolve.errors import InputError
from pimsolve.frontend import load_onnx, zoo
from pimsolve.ir import Graph, Workload
from pimsolve.lowering import lower
from pimsolve.target import CrossbarTarget, DramPimTarget, load_target

__all__ = ["Inspection", "inspect_model", "resolve_model"]


@dataclass(frozen=True)
class Inspection:
    """What a model asks of a target: the graph, and its lowering if a target was given."""

    graph: Graph
    target: CrossbarTarget | DramPimTarget | None
    workload: Workload | None


def resolve_model(spec: str | Path) -> Path | onnx.ModelProto:
    """An ONNX file path, or a bundled model name (``pimsolve models``) built in memory."""
    path = Path(spec)
    if path.exists() or path.suffix == ".onnx" or path.parent != Path("."):
        return path
    if str(spec) in zoo.MODELS:
        return zoo.build(str(spec))
    raise InputError(f"{spec}: no such model file, and not a bundled model name; bundled "
                     f"models: {', '.join(zoo.names())}")


def inspect_model(model: str | Path | onnx.ModelProto, *,
                  target: str | Path | CrossbarTarget | DramPimTarget | None = None,
                  input_shapes: Mapping[str, tuple[int, ...]] | None = None) -> Inspection:
    """Load ``model`` and, given a crossbar ``target``, lower it to array groups.

    Parameters
    ----------
    model
        An ONNX file, a bundled model name (e.g. ``"resnet18"``) or an ``onnx.ModelProto``.
    target
        A bundled target name (e.g. ``"isaac"``), a target YAML file, or a loaded target.
    input_shapes
        Static shapes for inputs with symbolic dimensions, by input name.

    Raises
    ------
    InputError
        For a bad model or target file, or a DRAM-PIM target (which has no crossbars).
    """
    if isinstance(model, (str, Path)):
        name = Path(model).stem
        source = resolve_model(model)
    else:
        name, source = model.graph.name or "model", model
    graph = load_onnx(source, input_shapes=input_shapes, name=name)
    if target is None:
        return Inspection(graph, None, None)
    loaded = target if isinstance(target, (CrossbarTarget, DramPimTarget)) else load_target(
        target)
    if isinstance(loaded, DramPimTarget):
        raise InputError(f"target '{loaded.name}' is a DRAM-PIM target: it has no crossbars "
                         f"to map layers onto; use a crossbar target (see `pimsolve targets`)")
    return Inspection(graph, loaded, lower(graph, loaded))
