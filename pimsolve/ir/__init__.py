"""The typed data that flows forward through pimsolve; no solver, no I/O."""

from pimsolve.ir.graph import (
    DTYPE_BYTES,
    VIEW_OPS,
    Graph,
    Layer,
    LayerKind,
    MvmGeometry,
    Tensor,
    pixel_elements,
)
from pimsolve.ir.ids import AgIndex, CoreId, CrossbarId, LayerId, TensorName
from pimsolve.ir.workload import (
    CrossbarGeometry,
    Dependency,
    MvmLayer,
    PartitionUnit,
    Unfolding,
    VectorLayer,
    Workload,
)

__all__ = [
    "AgIndex", "CoreId", "CrossbarGeometry", "CrossbarId", "DTYPE_BYTES", "Dependency", "Graph",
    "Layer", "LayerId", "LayerKind", "MvmGeometry", "MvmLayer", "PartitionUnit", "Tensor",
    "TensorName", "Unfolding", "VIEW_OPS", "VectorLayer", "Workload", "pixel_elements",
]
