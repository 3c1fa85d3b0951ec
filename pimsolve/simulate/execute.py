"""The functional executor: runs a Program on real numbers with numpy.

Each core executes its stream in program order (the order the verifier proves the timed
execution respects), with one local memory per core, the shared global memory, and FIFO
channels between cores; a ``recv`` waits for its send. ``mvm`` multiplies the input slice by
the AG's block of the unfolded weight matrix. With ``quantize``, as PIMCOMP's backend does,
weights become ``weight_bits`` fixed point per layer and are split into ``cell_bits`` slices
(one crossbar column each), inputs become ``activation_bits`` fixed point per mvm, and each
slice's integer product is shifted and summed: bit slicing is exact, so only rounding remains.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pimsolve.errors import InputError
from pimsolve.ir.program import Op, Program, VecOp

__all__ = ["Quantization", "execute", "sliced_product"]


@dataclass(frozen=True)
class Quantization:
    """Fixed-point formats of the backend."""

    weight_bits: int
    activation_bits: int
    cell_bits: int


def sliced_product(x_int: np.ndarray, w_int: np.ndarray, cell_bits: int,
                   weight_bits: int) -> np.ndarray:
    """``x_int @ w_int`` computed slice by slice: |w| split into ``cell_bits`` digits (one
    crossbar column each), the sign applied per weight, partial products shifted and added."""
    sign, magnitude = np.sign(w_int), np.abs(w_int).astype(np.int64)
    total = np.zeros(w_int.shape[1], dtype=np.int64)
    for k in range(-(-weight_bits // cell_bits)):
        digit = (magnitude >> (k * cell_bits)) & ((1 << cell_bits) - 1)
        total += (x_int @ (sign * digit)) << (k * cell_bits)
    return total


def _quantizer(blocks: Sequence[np.ndarray], layers: Sequence[str], q: Quantization):
    peak: dict[str, float] = {}
    for block, layer in zip(blocks, layers, strict=True):
        peak[layer] = max(peak.get(layer, 0.0), float(np.abs(block).max(initial=0.0)))
    top_w = (1 << (q.weight_bits - 1)) - 1
    top_x = (1 << (q.activation_bits - 1)) - 1
    ints, scales = [], []
    for block, layer in zip(blocks, layers, strict=True):
        scale = peak[layer] / top_w if peak[layer] > 0 else 1.0
        ints.append(np.rint(block / scale).astype(np.int64))
        scales.append(scale)

    def mvm(slot: int, x: np.ndarray) -> np.ndarray:
        sx = float(np.abs(x).max(initial=0.0)) / top_x
        if sx == 0:
            return np.zeros(ints[slot].shape[1])
        xi = np.rint(x / sx).astype(np.int64)
        return sliced_product(xi, ints[slot], q.cell_bits, q.weight_bits) * (sx * scales[slot])

    return mvm


def execute(program: Program, blocks: Sequence[np.ndarray], memory: np.ndarray, *,
            quantize: Quantization | None = None, cycles: int = 1) -> np.ndarray:
    """Run ``program`` ``cycles`` times with crossbar contents ``blocks`` (per AG slot) on global
    ``memory`` (modified in place and returned).

    An HT program is one cycle of the batch pipeline, in which every layer works on another
    inference: tensors between layers are double-buffered, so a cycle's loads see global memory
    as the previous cycle left it. Running ``pipeline_depth`` cycles on a constant input leaves
    that input's inference in the outputs. An LL program is one inference, whose loads see
    global memory as it is (a core loading back what it spilled reads its own store).
    """
    for _ in range(cycles):
        _cycle(program, blocks, memory, quantize,
               memory.copy() if program.mode == "ht" else memory)
    return memory


def _cycle(program: Program, blocks: Sequence[np.ndarray], memory: np.ndarray,
           quantize: Quantization | None, before: np.ndarray) -> None:
    n = len(program.cores)
    const = np.array(program.constants)
    local = []
    for s in program.cores:
        code = s.code
        top = int(max((code[:, 2] + code[:, 5]).max(initial=0),
                      (code[:, 3] + code[:, 5]).max(initial=0),
                      (code[:, 4] + code[:, 5]).max(initial=0))) if len(code) else 0
        top += max((b.shape[1] for b in blocks), default=0)
        local.append(np.zeros(top + 1))
    if quantize is not None:
        mvm = _quantizer(blocks, [g.layer for g in program.array_groups], quantize)
    rows = [s.code.tolist() for s in program.cores]
    pc = [0] * n
    channels: dict[tuple[int, int], deque] = {}
    barrier: dict[int, set[int]] = {}
    binary = {VecOp.ADD: np.add, VecOp.SUB: np.subtract, VecOp.MUL: np.multiply,
              VecOp.MAX: np.maximum, VecOp.MIN: np.minimum}
    progress = True
    while progress:
        progress = False
        for c in range(n):
            mem, code = local[c], rows[c]
            while pc[c] < len(code):
                op, a, b, cc, d, e = code[pc[c]]
                if op == Op.MVM:
                    g = program.array_groups[a]
                    block_rows = slice(d, d + e)
                    x = mem[cc:cc + e]
                    if quantize is None:
                        y = x @ blocks[a][block_rows]
                    elif d == 0 and e == g.rows:
                        y = mvm(a, x)
                    else:
                        raise InputError("quantized execution of partial-row mvm is not "
                                         "modelled")
                    mem[b:b + g.cols] = y
                elif op == Op.VEC:
                    if a == VecOp.RELU:
                        mem[b:b + e] = np.maximum(mem[cc:cc + e], 0.0)
                    elif a == VecOp.SCALE:
                        mem[b:b + e] = mem[cc:cc + e] * const[d]
                    elif a in binary:
                        mem[b:b + e] = binary[a](mem[cc:cc + e], mem[d:d + e])
                    else:
                        raise InputError(f"core {c} instruction {pc[c]}: vector op "
                                         f"{VecOp(a).name} has no numeric model")
                elif op == Op.COPY:
                    mem[b:b + e] = mem[cc:cc + e]
                elif op == Op.WRITE:
                    mem[b:b + e] = const[d]
                elif op == Op.LOAD:
                    mem[b:b + e] = before[cc:cc + e]
                elif op == Op.STORE:
                    memory[b:b + e] = mem[cc:cc + e]
                elif op == Op.SEND:
                    channels.setdefault((c, a), deque()).append(mem[cc:cc + e].copy())
                elif op == Op.RECV:
                    q = channels.get((a, c))
                    if not q:
                        break
                    mem[b:b + e] = q.popleft()
                elif op == Op.BARRIER:
                    waiting = barrier.setdefault(a, set())
                    waiting.add(c)
                    if len(waiting) < n:
                        break
                    for k in barrier.pop(a):
                        if k != c:
                            pc[k] += 1
                pc[c] += 1
                progress = True
    stuck = [c for c in range(n) if pc[c] < len(rows[c])]
    if stuck:
        raise InputError(f"functional execution blocked at core {stuck[0]} instruction "
                         f"{pc[stuck[0]]}")
