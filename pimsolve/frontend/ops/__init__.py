"""ONNX op converters, one module per op family, registered by op type.

A converter turns one ONNX node (with static shapes and folded constants) into one
``ir.Layer``. To support a new op, write ``@register("OpType")`` on a function taking a
``NodeContext``; ``supported_ops()`` lists every registered op.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
from onnx import helper

from pimsolve.errors import InputError
from pimsolve.frontend.fold import FoldedModel
from pimsolve.ir import Layer, LayerId, Tensor, TensorName

__all__ = ["NodeContext", "Converter", "register", "converter_for", "supported_ops"]


@dataclass
class NodeContext:
    """One ONNX node with everything a converter needs: shapes, constants, attributes."""

    node: onnx.NodeProto
    name: LayerId
    model: FoldedModel

    @property
    def op(self) -> str:
        return self.node.op_type

    @property
    def attrs(self) -> dict[str, Any]:
        return {a.name: helper.get_attribute_value(a) for a in self.node.attribute}

    def is_const(self, name: str) -> bool:
        return name in self.model.constants

    def const(self, name: str) -> np.ndarray:
        return self.model.constants[name]

    def tensor(self, name: str) -> Tensor:
        """The tensor ``name`` with its static shape."""
        if name not in self.model.shapes:
            raise InputError(f"cannot infer a static shape for tensor '{name}' of node "
                             f"'{self.name}' ({self.op}); give input shapes with --input-shape")
        return Tensor(TensorName(name), self.model.shapes[name],
                      self.model.dtypes.get(name, "float32"))

    def shape(self, name: str) -> tuple[int, ...]:
        return self.tensor(name).shape

    @property
    def activations(self) -> tuple[Tensor, ...]:
        """Non-constant inputs, in order."""
        return tuple(self.tensor(n) for n in self.node.input if n and not self.is_const(n))

    @property
    def outputs(self) -> tuple[Tensor, ...]:
        return tuple(self.tensor(n) for n in self.node.output if n)

    def error(self, message: str) -> InputError:
        return InputError(f"node '{self.name}' ({self.op}): {message}")


Converter = Callable[[NodeContext], Layer]
_REGISTRY: dict[str, Converter] = {}


def register(*op_types: str) -> Callable[[Converter], Converter]:
    """Register the decorated function as the converter of ``op_types``."""

    def decorate(fn: Converter) -> Converter:
        for op in op_types:
            _REGISTRY[op] = fn
        return fn

    return decorate


def converter_for(op_type: str) -> Converter | None:
    """The converter of ``op_type``, or None if unsupported."""
    _load_builtins()
    return _REGISTRY.get(op_type)


def supported_ops() -> list[str]:
    """Every supported ONNX op type, sorted."""
    _load_builtins()
    return sorted(_REGISTRY)


def _load_builtins() -> None:
    from pimsolve.frontend.ops import conv, data, eltwise, gemm, norm, pool  # noqa: F401
