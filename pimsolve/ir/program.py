"""The codegen's output: one pseudo-instruction stream per core (PIMCOMP Table III, extended).

The instruction set (``Op``) is PIMCOMP's ``mvm, vec, copy, write, load, store, send, recv`` plus
``prog`` (program the crossbars of an array group: weight reload between partitions) and
``barrier``. Every instruction is six integers ``op, a, b, c, d, e``:

====== ============ =========== ========= ================= =======================
op     a            b (dst)     c (src)   d                 e (len)
====== ============ =========== ========= ================= =======================
mvm    AG slot      local dst   local src first row in AG   rows read (<= AG rows)
vec    ``VecOp``    local dst   src1      src2 / constant   elements
copy   -            local dst   local src -                 elements
write  -            local dst   -         constant index    elements
load   -            local dst   global    -                 elements
store  -            global dst  local src -                 elements
send   peer core    -           local src tag               elements
recv   peer core    local dst   -         tag               elements
prog   AG slot      -           -         -                 -
barrier barrier id  -           -         -                 -
====== ============ =========== ========= ================= =======================

Addresses and lengths count activation elements (``element_bits`` bits each), not bytes. An
``mvm`` reads ``e`` input elements at ``c`` into AG rows ``[d, d + e)`` and writes the AG's
``cols`` outputs at ``b``; CIM-MLC's granularities are expressed with it: crossbar mode drives one
AG per instruction, wordline mode issues one ``mvm`` per ``parallel_rows`` block of rows, and
core mode places whole operators per core. ``vec`` with ``SCALE`` multiplies ``src1`` by
``constants[d]``; ``write`` fills with ``constants[d]``.

Each instruction also lists the earlier instructions of its core it waits for (``deps``): the
producers of what it reads and the last readers of what it overwrites, as VTA-style dependency
tokens. Waiting on instruction ``j`` also covers every earlier instruction on ``j``'s unit,
because a unit completes its instructions in order; the verifier checks exactly this.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, field
from enum import IntEnum

import numpy as np

__all__ = ["Op", "VecOp", "ArrayGroupSlot", "CoreStream", "Program", "PROGRAM_SCHEMA_VERSION",
           "unit_of", "units", "FIXED_UNITS", "UNARY",
           "FIELDS"]

PROGRAM_SCHEMA_VERSION = 1
FIELDS = ("op", "a", "b", "c", "d", "e")


class Op(IntEnum):
    """Pseudo-instruction opcodes."""

    MVM = 0
    VEC = 1
    COPY = 2
    WRITE = 3
    LOAD = 4
    STORE = 5
    SEND = 6
    RECV = 7
    PROG = 8
    BARRIER = 9


class VecOp(IntEnum):
    """Operations of the vector unit; ``OTHER`` is timed like any op but has no numeric model."""

    ADD = 0
    SUB = 1
    MUL = 2
    MAX = 3
    MIN = 4
    RELU = 5
    SCALE = 6
    OTHER = 7


UNARY = frozenset({VecOp.RELU, VecOp.SCALE, VecOp.OTHER})


@dataclass(frozen=True)
class ArrayGroupSlot:
    """One array group placed on one core: rows ``[row_start, row_start + rows)`` and all
    columns of matrix ``matrix`` of one replica of ``layer``."""

    layer: str
    replica: int
    ag: int
    core: int
    matrix: int
    """Which of the unfolding's P matrices (the convolution group)."""
    row_start: int
    rows: int
    cols: int
    """Output elements (weights per crossbar row times crossbars, before bit slicing)."""
    crossbars: int
    preloaded: bool = True
    """Programmed at deployment, before the program runs (else a ``prog`` must come first)."""


@dataclass(frozen=True, eq=False)
class CoreStream:
    """The instructions of one core: ``code`` is an (n, 6) int64 array of ``FIELDS``; the deps
    of instruction i are ``deps[dep_ptr[i]:dep_ptr[i + 1]]``."""

    code: np.ndarray
    dep_ptr: np.ndarray
    deps: np.ndarray
    tags: np.ndarray
    """Per instruction, the index in ``Program.layers`` of the layer it works for (-1: none)."""

    def __len__(self) -> int:
        return len(self.code)

    def deps_of(self, i: int) -> np.ndarray:
        """Indices of the instructions instruction ``i`` waits for."""
        return self.deps[self.dep_ptr[i]:self.dep_ptr[i + 1]]

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, CoreStream) and np.array_equal(self.code, other.code)
                and np.array_equal(self.dep_ptr, other.dep_ptr)
                and np.array_equal(self.deps, other.deps)
                and np.array_equal(self.tags, other.tags))

    __hash__ = None  # type: ignore[assignment]

    @staticmethod
    def build(rows: list[tuple[int, ...]], deps: list[tuple[int, ...]],
              tags: list[int] | None = None) -> CoreStream:
        """A stream from instruction tuples and their dependency lists."""
        code = np.array(rows, dtype=np.int64).reshape(-1, 6)
        lengths = np.fromiter((len(d) for d in deps), dtype=np.int64, count=len(deps))
        ptr = np.zeros(len(deps) + 1, dtype=np.int64)
        np.cumsum(lengths, out=ptr[1:])
        flat = np.fromiter((j for d in deps for j in d), dtype=np.int64, count=int(ptr[-1]))
        tag = np.array(tags if tags is not None else [-1] * len(rows), dtype=np.int64)
        return CoreStream(code, ptr, flat, tag)


@dataclass(frozen=True, eq=False)
class Program:
    """Per-core instruction streams and the tables they refer to."""

    model: str
    target: str
    mode: str
    """'ht' (one steady-state cycle of the batch pipeline) or 'll' (one inference)."""
    element_bits: int
    cores: tuple[CoreStream, ...]
    array_groups: tuple[ArrayGroupSlot, ...]
    constants: tuple[float, ...] = (0.0,)
    global_elements: int = 0
    """Size of the global-memory address space the program uses."""
    pipeline_depth: int = 1
    """HT mode: pipeline stages (layer groups) before the first inference leaves the chip."""
    tensors: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Graph inputs, outputs and biases ('bias:<layer>'): name -> (global address, elements);
    activations are stored pixel-major (NHWC)."""
    layers: tuple[str, ...] = ()
    """Names the instruction tags refer to."""
    windows: dict[str, int] = field(default_factory=dict)
    """Crossbar layer -> windows each of its matrix rows must process (once per inference)."""
    schema_version: int = PROGRAM_SCHEMA_VERSION

    @property
    def instructions(self) -> int:
        """Instructions over all cores."""
        return sum(len(s) for s in self.cores)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Program) and self._header() == other._header() and all(
            a == b for a, b in zip(self.cores, other.cores, strict=True))

    __hash__ = None  # type: ignore[assignment]

    def _header(self) -> dict:
        return {"schema_version": self.schema_version, "model": self.model,
                "target": self.target, "mode": self.mode, "element_bits": self.element_bits,
                "constants": list(self.constants), "global_elements": self.global_elements,
                "pipeline_depth": self.pipeline_depth,
                "tensors": {k: list(v) for k, v in sorted(self.tensors.items())},
                "array_groups": [[g.layer, g.replica, g.ag, g.core, g.matrix, g.row_start,
                                  g.rows, g.cols, g.crossbars, g.preloaded]
                                 for g in self.array_groups],
                "cores": len(self.cores), "layers": list(self.layers),
                "windows": dict(sorted(self.windows.items()))}

    @staticmethod
    def _from_header(head: dict, cores: tuple[CoreStream, ...]) -> Program:
        if head.get("schema_version") != PROGRAM_SCHEMA_VERSION:
            raise ValueError(f"program schema_version {head.get('schema_version')!r} is not "
                             f"{PROGRAM_SCHEMA_VERSION}")
        groups = tuple(ArrayGroupSlot(*row) for row in head["array_groups"])
        return Program(head["model"], head["target"], head["mode"], head["element_bits"], cores,
                       groups, tuple(head["constants"]), head["global_elements"],
                       head["pipeline_depth"],
                       {k: (v[0], v[1]) for k, v in head["tensors"].items()},
                       tuple(head["layers"]), dict(head["windows"]))

    def to_jsonl(self) -> str:
        """JSON lines: a header, then one ``{"core", "i", "op", <fields>, "deps"}`` per line."""
        out = [json.dumps(self._header(), sort_keys=True)]
        for core, stream in enumerate(self.cores):
            for i, row in enumerate(stream.code.tolist()):
                rec = {"core": core, "i": i, "op": Op(row[0]).name.lower()}
                rec.update(zip(FIELDS[1:], row[1:], strict=True))
                rec["deps"] = stream.deps_of(i).tolist()
                tag = int(stream.tags[i])
                rec["layer"] = self.layers[tag] if tag >= 0 else None
                out.append(json.dumps(rec, sort_keys=True))
        return "\n".join(out) + "\n"

    @staticmethod
    def from_jsonl(text: str) -> Program:
        """Inverse of ``to_jsonl``; raises ValueError naming the bad line."""
        lines = text.splitlines()
        if not lines:
            raise ValueError("empty program")
        head = json.loads(lines[0])
        rows: list[list[tuple[int, ...]]] = [[] for _ in range(head["cores"])]
        deps: list[list[tuple[int, ...]]] = [[] for _ in range(head["cores"])]
        tags: list[list[int]] = [[] for _ in range(head["cores"])]
        index = {name: k for k, name in enumerate(head["layers"])}
        for number, line in enumerate(lines[1:], start=2):
            try:
                rec = json.loads(line)
                op = Op[rec["op"].upper()]
                rows[rec["core"]].append((int(op), *(int(rec[f]) for f in FIELDS[1:])))
                deps[rec["core"]].append(tuple(int(j) for j in rec["deps"]))
                tags[rec["core"]].append(index[rec["layer"]] if rec["layer"] else -1)
            except (KeyError, ValueError, TypeError, IndexError) as exc:
                raise ValueError(f"line {number}: bad instruction ({exc})") from None
        cores = tuple(CoreStream.build(r, d, t) for r, d, t in zip(rows, deps, tags, strict=True))
        return Program._from_header(head, cores)

    def to_npz(self) -> bytes:
        """The compact form: numpy arrays per core plus the JSON header."""
        arrays: dict[str, np.ndarray] = {
            "header": np.frombuffer(json.dumps(self._header()).encode(), dtype=np.uint8)}
        for k, s in enumerate(self.cores):
            arrays[f"code{k}"], arrays[f"ptr{k}"], arrays[f"deps{k}"] = s.code, s.dep_ptr, s.deps
            arrays[f"tags{k}"] = s.tags
        buffer = io.BytesIO()
        np.savez_compressed(buffer, **arrays)
        return buffer.getvalue()

    @staticmethod
    def from_npz(data: bytes) -> Program:
        """Inverse of ``to_npz``."""
        with np.load(io.BytesIO(data)) as z:
            head = json.loads(bytes(z["header"]).decode())
            cores = tuple(CoreStream(z[f"code{k}"], z[f"ptr{k}"], z[f"deps{k}"], z[f"tags{k}"])
                          for k in range(head["cores"]))
        return Program._from_header(head, cores)


UNIT_VFU, UNIT_LMEM, UNIT_GMEM, UNIT_TX, UNIT_RX, UNIT_SYNC = range(6)
FIXED_UNITS = 6
"""Per core: vector unit, local-memory port, global-memory port, network out, network in,
barrier; array group ``s`` is unit ``FIXED_UNITS + s`` (of its core)."""

_OP_UNIT = np.array([-1, UNIT_VFU, UNIT_LMEM, UNIT_LMEM, UNIT_GMEM, UNIT_GMEM, UNIT_TX, UNIT_RX,
                     -1, UNIT_SYNC], dtype=np.int64)


def unit_of(op: int, a: int) -> int:
    """The unit of one instruction; each unit runs its instructions in program order."""
    return FIXED_UNITS + a if op in (Op.MVM, Op.PROG) else int(_OP_UNIT[op])


def units(code: np.ndarray) -> np.ndarray:
    """``unit_of`` for every row of an (n, 6) code array."""
    ops = code[:, 0]
    return np.where((ops == Op.MVM) | (ops == Op.PROG), FIXED_UNITS + code[:, 1], _OP_UNIT[ops])
