"""Typed identifiers shared by every part of pimsolve; imports nothing from pimsolve."""

from __future__ import annotations

from typing import NewType

__all__ = ["LayerId", "TensorName", "CoreId", "CrossbarId", "AgIndex"]

LayerId = NewType("LayerId", str)
"""Name of a layer in the Graph (the ONNX node name, made unique)."""

TensorName = NewType("TensorName", str)
"""Name of a tensor (an edge of the Graph), as in the ONNX file."""

CoreId = NewType("CoreId", int)
"""Global index of a core: chip * cores_per_chip + core."""

CrossbarId = NewType("CrossbarId", int)
"""Index of a crossbar within its core."""

AgIndex = NewType("AgIndex", int)
"""Index of an array group within one replica of a layer."""
