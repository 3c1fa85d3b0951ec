"""The lowering's output: what each layer asks of a given crossbar target.

For each crossbar layer, every valid unfolding (PIMCOMP Table IV) is listed with its array
groups and crossbars per replica, and the layer is cut into COMPASS partition units. Vector and
data layers carry their operation counts and bytes. Units: elements, bytes, crossbars.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from pimsolve.ir.ids import LayerId, TensorName

__all__ = [
    "CrossbarGeometry",
    "Unfolding",
    "PartitionUnit",
    "MvmLayer",
    "VectorLayer",
    "Dependency",
    "Workload",
]


@dataclass(frozen=True)
class CrossbarGeometry:
    """The facts of the target that lowering used, kept for traceability."""

    rows: int
    cols: int
    cell_bits: int
    weight_bits: int
    activation_bits: int
    column_slices: int
    """Crossbar columns one weight occupies: ceil(weight_bits / cell_bits), doubled for
    differential (positive / negative column) encoding of signed weights."""
    crossbars_per_core: int
    cores: int
    """All cores of all chips."""

    @property
    def weights_per_crossbar_row(self) -> int:
        """Weights one crossbar row holds side by side."""
        return self.cols // self.column_slices


@dataclass(frozen=True)
class Unfolding:
    """One way to reshape a layer's weights into P matrices of H x W (PIMCOMP Sec. V-B).

    ``cycles``, ``load_elements`` and ``extra_memory_elements`` are Table IV's computation
    cycles, global-memory load volume and additional local memory for one replica and one
    inference, generalized to rectangular kernels, padding and groups.
    """

    name: str
    """Table IV's tuple, e.g. 'IK2,O,1'."""
    height: int
    """H: rows of one matrix (the accumulated direction; never contains O)."""
    width: int
    """W: columns of one matrix (in weights, before bit slicing)."""
    parallel: int
    """P: independent matrices (times the number of groups)."""
    cycles: int
    load_elements: int
    extra_memory_elements: int
    array_groups: int
    """Array groups per replica: P * ceil(H / rows)."""
    crossbars_per_ag: int
    """Crossbars in one array group: ceil(W / floor(cols / column_slices))."""

    @property
    def crossbars(self) -> int:
        """Crossbars one replica occupies."""
        return self.array_groups * self.crossbars_per_ag


@dataclass(frozen=True)
class PartitionUnit:
    """The smallest slice of a layer that fits one core (COMPASS Sec. III-B).

    A unit is a block of the layer's array-group grid under its default unfolding: array groups
    (row blocks) ``[ag_start, ag_stop)`` by crossbar columns ``[col_start, col_stop)``. Units cut
    along the output (column) dimension first; only when one column of crossbars does not fit a
    core are rows cut too, and then partial sums cross units.
    """

    ag_start: int
    ag_stop: int
    col_start: int
    col_stop: int

    @property
    def crossbars(self) -> int:
        """Crossbars in this unit."""
        return (self.ag_stop - self.ag_start) * (self.col_stop - self.col_start)


@dataclass(frozen=True)
class MvmLayer:
    """A crossbar layer, lowered onto a target's crossbar geometry."""

    layer: LayerId
    op: str
    weights: int
    windows: int
    """Input vectors (output pixels) per inference."""
    input_bytes_per_window: int
    output_bytes_per_window: int
    unfoldings: tuple[Unfolding, ...]
    """Every valid unfolding; duplicates (e.g. all five for a 1x1 kernel) appear once."""
    default_unfolding: int
    """Index into ``unfoldings`` of the common (IK2, O, 1) im2col format."""
    partition_units: tuple[PartitionUnit, ...]

    @property
    def unfolding(self) -> Unfolding:
        """The default unfolding."""
        return self.unfoldings[self.default_unfolding]


@dataclass(frozen=True)
class VectorLayer:
    """A layer for the vector units, or a pure data movement (``ops == 0``)."""

    layer: LayerId
    op: str
    kind: str
    """'vector' or 'data' (see ``ir.graph.LayerKind``)."""
    ops: int
    input_bytes: int
    output_bytes: int


@dataclass(frozen=True)
class Dependency:
    """Layer ``consumer`` reads tensor ``tensor`` (``bytes`` long) that ``producer`` writes."""

    producer: LayerId
    consumer: LayerId
    tensor: TensorName
    bytes: int


@dataclass(frozen=True)
class Workload:
    """A model lowered onto one crossbar target."""

    model: str
    target: str
    geometry: CrossbarGeometry
    mvm_layers: tuple[MvmLayer, ...]
    vector_layers: tuple[VectorLayer, ...]
    dependencies: tuple[Dependency, ...]
    order: tuple[LayerId, ...]
    """All layers in topological order."""

    @property
    def weights(self) -> int:
        """Total crossbar weight elements."""
        return sum(m.weights for m in self.mvm_layers)

    @property
    def crossbars_needed(self) -> int:
        """Crossbars for one replica of every layer in its default unfolding."""
        return sum(m.unfolding.crossbars for m in self.mvm_layers)

    @property
    def crossbars_available(self) -> int:
        """Crossbars on the whole target."""
        return self.geometry.crossbars_per_core * self.geometry.cores

    @property
    def fits(self) -> bool:
        """Whether one replica of every layer fits on the target at once (else: partition)."""
        return self.crossbars_needed <= self.crossbars_available

    def mvm_layer(self, name: str) -> MvmLayer:
        """The crossbar layer called ``name``."""
        return self._mvm_by_name[name]

    @cached_property
    def _mvm_by_name(self) -> dict[str, MvmLayer]:
        return {m.layer: m for m in self.mvm_layers}
