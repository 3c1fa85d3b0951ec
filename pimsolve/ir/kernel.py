"""Kernels for near-bank DRAM-PIM (DCC's branch): loop nests, dimension sets and drafts.

A ``KernelSpec`` is an affine loop nest over named tensors (DCC Sec. 4.5): every index of a
tensor access is ``coeff * var + offset`` in at most one loop variable (``A[b+1][i*2]``). A
``DimensionSet`` groups the tensor dimensions that share loop variables (DCC Sec. 4.2 step 1);
a ``Draft`` gives each set its PIM groups, cores per group and representative mapping (step 2)
plus the tensor-index strategy (step 4). Units: elements, PIM groups, PIM cores.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

__all__ = [
    "DTYPE_BITS", "Affine", "Access", "Statement", "Loop", "TensorDecl", "KernelSpec",
    "DimRef", "DimensionSet", "DraftPart", "Draft", "IndexStrategy", "TensorRole",
    "StatementKind",
]

DTYPE_BITS = {"f16": 16, "bf16": 16, "f32": 32, "i8": 8, "i16": 16, "i32": 32}
"""Element types a kernel spec may declare, with their widths in bits."""

IndexStrategy = Literal["expand", "exact"]
"""DCC 4.2 step 4 (3): 'expand' widens non-contiguous indices to one contiguous range per core;
'exact' keeps only the required indices."""

TensorRole = Literal["input", "resident", "output", "temp"]
"""'input': produced by the host, rearranged into PIM layout on every call; 'resident': kept in
PIM layout between calls (weights, KV cache: DCC's ``preLoad``); 'output': rearranged back to
the host; 'temp': produced and consumed inside the kernel."""

StatementKind = Literal["mac", "reduce", "map", "softmax"]
"""'mac': ``t += a * b``; 'reduce': ``t += a``; 'map': elementwise ``t = f(a, ...)``;
'softmax': ``t = softmax(a, var)`` along one loop variable."""


@dataclass(frozen=True, order=True)
class Affine:
    """``coeff * var + offset``; ``var`` is None for a constant index."""

    var: str | None
    coeff: int = 1
    offset: int = 0

    def __str__(self) -> str:
        if self.var is None:
            return str(self.offset)
        text = self.var if self.coeff == 1 else f"{self.var}*{self.coeff}"
        if self.offset:
            text += f"+{self.offset}" if self.offset > 0 else f"-{-self.offset}"
        return text

    def __call__(self, value: int) -> int:
        return self.coeff * value + self.offset


@dataclass(frozen=True)
class Access:
    """One tensor reference, e.g. ``A[b+1][i*2]``."""

    tensor: str
    indices: tuple[Affine, ...]

    def __str__(self) -> str:
        return f"{self.tensor}[{','.join(str(i) for i in self.indices)}]"

    @property
    def variables(self) -> tuple[str, ...]:
        """Loop variables used, in index order, without repeats."""
        return tuple(dict.fromkeys(i.var for i in self.indices if i.var is not None))


@dataclass(frozen=True)
class Statement:
    """One statement of the loop body, classified by what a PIM unit must do."""

    target: Access
    kind: StatementKind
    operands: tuple[Access, ...]
    op: str
    """The elementwise function for 'map' ('add', 'sub', 'mul', 'relu', 'copy'); '' else."""
    axis: str | None = None
    """The loop variable softmax normalizes along ('softmax' only)."""
    text: str = field(default="", compare=False)
    """The statement as written (not part of equality: spacing may differ)."""

    @property
    def accesses(self) -> tuple[Access, ...]:
        return (self.target, *self.operands)

    @property
    def variables(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(v for a in self.accesses for v in a.variables))


@dataclass(frozen=True)
class Loop:
    """One loop of the nest: ``for var in range(size)``."""

    var: str
    size: int


@dataclass(frozen=True)
class TensorDecl:
    """A tensor: shape in elements, and its role (see ``TensorRole``)."""

    name: str
    shape: tuple[int, ...]
    role: TensorRole

    @property
    def elements(self) -> int:
        total = 1
        for n in self.shape:
            total *= n
        return total


@dataclass(frozen=True)
class KernelSpec:
    """An affine loop nest over tensors (DCC Sec. 4.5, ``@DCC_kernel``)."""

    name: str
    dtype: str
    loops: tuple[Loop, ...]
    tensors: tuple[TensorDecl, ...]
    statements: tuple[Statement, ...]

    @property
    def dtype_bits(self) -> int:
        return DTYPE_BITS[self.dtype]

    def tensor(self, name: str) -> TensorDecl:
        return next(t for t in self.tensors if t.name == name)

    def loop(self, var: str) -> Loop:
        return next(lp for lp in self.loops if lp.var == var)


@dataclass(frozen=True, order=True)
class DimRef:
    """One tensor dimension and its reference set (DCC Sec. 4.2 step 1), e.g. A_0 = {b, b+1}."""

    tensor: str
    axis: int
    size: int
    refs: tuple[Affine, ...]
    """The mapping functions of this dimension over all accesses, sorted."""

    @property
    def name(self) -> str:
        return f"{self.tensor}_{self.axis}"

    def __str__(self) -> str:
        return f"{self.name}={{{', '.join(str(r) for r in self.refs)}}}"


@dataclass(frozen=True)
class DimensionSet:
    """Tensor dimensions whose reference sets share loop variables (a complex dimension set
    when it has two or more members)."""

    name: str
    """E.g. 'b' or 'i+j': its loop variables joined by '+'."""
    members: tuple[DimRef, ...]
    variables: tuple[str, ...]

    def __str__(self) -> str:
        return f"({', '.join(str(m) for m in self.members)})"


@dataclass(frozen=True)
class DraftPart:
    """One part of a draft: DCC's ``[groups, cores, representative mapping]`` for one set."""

    dimension_set: str
    groups: int
    cores_per_group: int
    per_core_size: int
    """Data-tile size per core along the representative dimension:
    ceil(size / (groups * cores_per_group))."""
    representative: str
    """The representative mapping, e.g. 'A_0^b+1' (dimension, then mapping function)."""


@dataclass(frozen=True)
class Draft:
    """A tiling draft: one part per dimension set, and the tensor-index strategy."""

    kernel: str
    parts: tuple[DraftPart, ...]
    strategy: IndexStrategy

    @property
    def groups(self) -> int:
        """PIM groups the draft uses (product over parts)."""
        total = 1
        for p in self.parts:
            total *= p.groups
        return total

    @property
    def cores_per_group(self) -> int:
        """PIM cores per group the draft uses (product over parts)."""
        total = 1
        for p in self.parts:
            total *= p.cores_per_group
        return total
