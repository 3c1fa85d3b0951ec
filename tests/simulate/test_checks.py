"""Defect injection: the verifier must reject each kind of broken program, and say where.

The valid programs come from the reference pipeline (load, lower, reference mapping, codegen) on
a small CNN built here: conv 3x3 (16 -> 8 channels, 6x6, pad 1), relu, conv 3x3 (8 -> 8),
maxpool 2x2, global average pool, flatten, gemm (8 -> 10). With 16-bit weights on 2-bit cells a
weight takes 8 columns, so every array group is one crossbar; conv1's 144 matrix rows need two
array groups of a 128-row crossbar (rows 0-127 and 128-143).

On the real ISAAC and PUMA targets everything fits on core 0, so there is no communication.
The defects are therefore injected into programs for small variants of those targets (4 cores
of 1 crossbar each), where the reference placement puts conv1's two array groups on cores 0
and 1, conv2 on core 2 and fc on core 3: core 0 sends conv1's input slices to core 1 and gets
partial sums back, core 0 sends relu1 pixels to core 2, core 2 sends the pooled vector to core
3. ISAAC is out of order with async communication, PUMA in order with sync communication.

Each defect rebuilds the affected ``CoreStream`` (instructions removed, inserted, swapped or
edited, with the dependency indices renumbered) and checks the reported violation's kind, core,
instruction and layer, and that its message names them.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import re
from dataclasses import dataclass

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from pimsolve.codegen.generate import CodegenOptions, generate
from pimsolve.frontend.load import load_onnx
from pimsolve.ir.program import FIELDS, UNARY, UNIT_GMEM, CoreStream, Op, Program, units
from pimsolve.lowering import lower
from pimsolve.simulate.checks import CheckReport, Violation, verify
from pimsolve.simulate.simulator import Deadlock, run
from pimsolve.stages.placement import reference_mapping
from pimsolve.target import CrossbarTarget
from pimsolve.target.load import load_target

# ------------------------------------------------------------------------------- programs


def tiny_cnn() -> onnx.ModelProto:
    """The model of the module docstring, with fixed random weights."""
    rng = np.random.default_rng(0)

    def weight(name: str, *shape: int) -> onnx.TensorProto:
        return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)

    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], name="conv1", kernel_shape=[3, 3],
                         pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "w2"], ["c2"], name="conv2", kernel_shape=[3, 3],
                         pads=[1, 1, 1, 1]),
        helper.make_node("MaxPool", ["c2"], ["p"], name="pool", kernel_shape=[2, 2],
                         strides=[2, 2]),
        helper.make_node("GlobalAveragePool", ["p"], ["g"], name="gap"),
        helper.make_node("Flatten", ["g"], ["f"], name="flat"),
        helper.make_node("Gemm", ["f", "wf", "bf"], ["y"], name="fc", transB=1),
    ]
    graph = helper.make_graph(
        nodes, "tiny_cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 6, 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
        [weight("w1", 8, 16, 3, 3), weight("w2", 8, 8, 3, 3), weight("wf", 10, 8),
         weight("bf", 10)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@functools.cache
def target_of(name: str, small: bool) -> CrossbarTarget:
    """A bundled target, or its small variant (4 cores of 1 crossbar)."""
    target = load_target(name)
    if not small:
        return target
    data = target.model_dump()
    data["name"] = f"{name}-small"
    data["chip"]["cores"] = 4
    data["core"]["crossbars"] = 1
    return CrossbarTarget.model_validate(data)


@functools.cache
def compiled(name: str, small: bool, mode: str, ll_order: str = "timed") -> Program:
    """The reference program of the tiny CNN (cached: Programs are never modified in place)."""
    target = target_of(name, small)
    graph = load_onnx(tiny_cnn())
    workload = lower(graph, target)
    return generate(graph, workload, reference_mapping(workload, target, mode), target,
                    CodegenOptions(ll_order=ll_order))


def small_ll(name: str = "isaac", ll_order: str = "timed") -> tuple[Program, CrossbarTarget]:
    return compiled(name, True, "ll", ll_order), target_of(name, True)


# -------------------------------------------------------------------------- stream edits


@dataclass
class Ins:
    """One instruction while a stream is edited; ``deps`` and ``key`` use original indices."""

    row: list[int]
    deps: list[int]
    tag: int
    key: int


def unpack(stream: CoreStream) -> list[Ins]:
    code = stream.code.copy()
    return [Ins(code[i].tolist(), stream.deps_of(i).tolist(), int(stream.tags[i]), i)
            for i in range(len(stream))]


def pack(items: list[Ins]) -> CoreStream:
    """The edited stream; deps on removed instructions are dropped, the rest renumbered."""
    index = {item.key: k for k, item in enumerate(items)}
    rows, deps = [], []
    for k, item in enumerate(items):
        new = sorted(index[d] for d in item.deps if d in index)
        assert all(d < k for d in new), "an edit made an instruction wait for a later one"
        rows.append(item.row)
        deps.append(new)
    code = np.array(rows, dtype=np.int64).reshape(-1, 6)
    ptr = np.zeros(len(items) + 1, dtype=np.int64)
    np.cumsum([len(d) for d in deps], out=ptr[1:])
    flat = np.array([d for ds in deps for d in ds], dtype=np.int64)
    tags = np.array([item.tag for item in items], dtype=np.int64)
    return CoreStream(code, ptr, flat, tags)


def with_core(program: Program, core: int, items: list[Ins]) -> Program:
    cores = list(program.cores)
    cores[core] = pack(items)
    return dataclasses.replace(program, cores=tuple(cores))


def edited(program: Program, core: int, i: int, **fields: int) -> Program:
    """``program`` with fields (``FIELDS``: op, a .. e) of one instruction changed."""
    items = unpack(program.cores[core])
    for name, value in fields.items():
        items[i].row[FIELDS.index(name)] = value
    return with_core(program, core, items)


def without(program: Program, core: int, i: int) -> Program:
    items = unpack(program.cores[core])
    del items[i]
    return with_core(program, core, items)


_keys = itertools.count(1)


def fresh_key() -> int:
    """A key no original instruction has (for inserted instructions)."""
    return -next(_keys)

# ----------------------------------------------------------------- independent helpers


def local_reads(program: Program, row: list[int]) -> list[range]:
    op, a, _, c, d, e = row
    if op in (Op.MVM, Op.COPY, Op.STORE, Op.SEND):
        return [range(c, c + e)]
    if op == Op.VEC:
        return [range(c, c + e)] + ([] if a in UNARY else [range(d, d + e)])
    return []


def local_writes(program: Program, row: list[int]) -> list[range]:
    op, a, b, _, _, e = row
    if op == Op.MVM:
        return [range(b, b + program.array_groups[a].cols)]
    if op in (Op.VEC, Op.COPY, Op.WRITE, Op.LOAD, Op.RECV):
        return [range(b, b + e)]
    return []


def writers_read(program: Program, core: int) -> list[set[int]]:
    """Per instruction: the instructions that last wrote the local data it reads."""
    last: dict[int, int] = {}
    out = []
    for row in program.cores[core].code.tolist():
        out.append({last[x] for r in local_reads(program, row) for x in r if x in last})
        for r in local_writes(program, row):
            last.update(dict.fromkeys(r, len(out) - 1))
    return out


def last_reader(program: Program, core: int, before: int, addresses: range) -> int:
    """The latest instruction before ``before`` that read one of ``addresses`` since it was
    last written (-1: none)."""
    reader: dict[int, int] = {}
    for i, row in enumerate(program.cores[core].code.tolist()[:before]):
        for r in local_reads(program, row):
            reader.update(dict.fromkeys(r, i))
        for r in local_writes(program, row):
            for x in r:
                reader.pop(x, None)
    return max((reader.get(x, -1) for x in addresses), default=-1)


def ordered(stream: CoreStream, i: int, j: int) -> bool:
    """The documented rule: i waits for j if it waits for j or a later instruction of j's
    unit (or is on j's unit)."""
    unit = units(stream.code)
    return unit[i] == unit[j] or any(unit[d] == unit[j] and d >= j
                                     for d in stream.deps_of(i).tolist())


def ops(program: Program, core: int) -> list[int]:
    return program.cores[core].code[:, 0].tolist()


def layer_of(program: Program, core: int, i: int) -> str | None:
    tag = int(program.cores[core].tags[i])
    return program.layers[tag] if tag >= 0 else None


# ------------------------------------------------------------------------------ asserts


def kinds(report: CheckReport) -> set[str]:
    return {v.kind for v in report.violations}


def located(report: CheckReport, kind: str, core: int | None, instruction: int,
            layer: str | None) -> Violation:
    """The violation of ``kind`` at (core, instruction); checks that its message names the
    core, the instruction and the layer. ``core=None``: any core (windows violations, whose
    core is wrong; see ``test_windows_violation_names_the_core_of_the_layer``)."""
    hits = [v for v in report.violations if v.kind == kind and v.instruction == instruction
            and (core is None or v.core == core)]
    assert hits, (kind, core, instruction, [(v.kind, v.message) for v in report.violations])
    v = hits[0]
    assert v.layer == layer
    core = v.core
    where = f"core {core} instruction {instruction}" if instruction >= 0 else f"core {core}"
    assert re.match(rf"{where}\b", v.message), v.message
    if layer is not None:
        assert f"layer {layer})" in v.message, v.message
    return v


# ------------------------------------------------------------------------ valid programs


@pytest.mark.parametrize("mode", ["ht", "ll"])
@pytest.mark.parametrize("name", ["isaac", "puma"])
@pytest.mark.parametrize("small", [False, True], ids=["real", "small"])
def test_reference_programs_pass(name, mode, small):
    program, target = compiled(name, small, mode), target_of(name, small)
    assert program.mode == mode
    assert len(program.cores) == target.cores
    report = verify(program, target)
    assert report.passed, [v.message for v in report.violations]
    assert report.violations == ()
    assert run(program, target).makespan_ns > 0


def assert_timeline_keeps_the_rules(program: Program, target: CrossbarTarget) -> None:
    """What every simulated timeline obeys: an instruction starts after each of its deps
    ends; a unit serves its instructions one at a time in program order (the global-memory
    port: in program order); an in-order core
    starts them in program order; a recv ends no earlier than its send (FIFO per pair)
    started."""
    timeline = run(program, target)
    sends: dict[tuple[int, int], list[float]] = {}
    for c, stream in enumerate(program.cores):
        start, end = timeline.start[c], timeline.end[c]
        for i in range(len(stream)):
            deps = stream.deps_of(i)
            assert (start[i] >= end[deps] - 1e-6).all(), (c, i)
        unit = units(stream.code)
        for u in np.unique(unit):
            at = np.flatnonzero(unit == u)
            # a load or store ends its latency after it frees the global-memory port
            before = start[at[:-1]] if u == UNIT_GMEM else end[at[:-1]]
            assert (start[at[1:]] >= before - 1e-6).all(), (c, u)
        if target.core.execution == "in_order":
            assert (np.diff(start) >= -1e-6).all(), c
        for i in np.flatnonzero(stream.code[:, 0] == Op.SEND):
            sends.setdefault((c, int(stream.code[i, 1])), []).append(start[i])
    for c, stream in enumerate(program.cores):
        taken: dict[int, int] = {}
        for i in np.flatnonzero(stream.code[:, 0] == Op.RECV):
            src = int(stream.code[i, 1])
            k = taken[src] = taken.get(src, -1) + 1
            assert timeline.end[c][i] >= sends[(src, c)][k] - 1e-6, (c, i)


@pytest.mark.parametrize("mode", ["ht", "ll"])
@pytest.mark.parametrize("name", ["isaac", "puma", "arch-c"])
def test_timelines_keep_the_rules(name, mode):
    """On the reference programs of every execution and communication kind, and (ISAAC) on
    the swapped exchange, whose recv now comes before an unrelated send."""
    assert_timeline_keeps_the_rules(compiled(name, True, mode), target_of(name, True))
    if name == "isaac" and mode == "ll":
        swapped, target, _ = swapped_exchange(name)
        assert_timeline_keeps_the_rules(swapped, target)


def test_small_programs_have_the_expected_shape():
    """The layout the defects below rely on (see the module docstring)."""
    program, _ = small_ll()
    groups = [(g.layer, g.core, g.row_start, g.rows, g.crossbars) for g in program.array_groups]
    assert groups == [("conv1", 0, 0, 128, 1), ("conv1", 1, 128, 16, 1), ("conv2", 2, 0, 72, 1),
                      ("fc", 3, 0, 8, 1)]
    assert program.windows == {"conv1": 36, "conv2": 36, "fc": 1}
    comm = [[(Op(o).name, int(p)) for o, p in program.cores[c].code[:, :2].tolist()
             if o in (Op.SEND, Op.RECV)] for c in range(4)]
    assert set(comm[0]) == {("SEND", 1), ("RECV", 1), ("SEND", 2)}
    assert set(comm[1]) == {("RECV", 0), ("SEND", 0)}
    assert set(comm[2]) == {("RECV", 0), ("SEND", 3)}
    assert comm[3] == [("RECV", 2)]


# ------------------------------------------------------------------------------- defects


def test_crossbar_capacity():
    """conv1's first array group claims 2 crossbars on core 0, which has 1."""
    program, target = small_ll()
    groups = list(program.array_groups)
    groups[0] = dataclasses.replace(groups[0], crossbars=2)
    report = verify(dataclasses.replace(program, array_groups=tuple(groups)), target)
    assert kinds(report) == {"crossbar-capacity"}
    v = located(report, "crossbar-capacity", 0, -1, None)
    assert "2 crossbars placed, the core has 1" in v.message


def test_crossbar_capacity_on_the_real_target():
    """ISAAC cores have 96 crossbars; all four array groups (1 crossbar each) sit on core 0.
    Growing the first to 94 crossbars makes 97."""
    program, target = compiled("isaac", False, "ht"), target_of("isaac", False)
    assert [(g.core, g.crossbars) for g in program.array_groups] == [(0, 1)] * 4
    groups = (dataclasses.replace(program.array_groups[0], crossbars=94),
              *program.array_groups[1:])
    report = verify(dataclasses.replace(program, array_groups=groups), target)
    assert kinds(report) == {"crossbar-capacity"}
    assert "97 crossbars placed, the core has 96" in located(
        report, "crossbar-capacity", 0, -1, None).message


def test_local_memory_capacity():
    """fc's bias load on core 3 is moved to 5 elements before the end of the 64 KiB (32768
    16-bit elements) local memory; it loads 10."""
    program, target = small_ll()
    i = ops(program, 3).index(Op.LOAD)
    e = int(program.cores[3].code[i, 5])
    assert e > 5
    report = verify(edited(program, 3, i, b=32768 - 5), target)
    v = located(report, "local-memory-capacity", 3, i, "fc")
    assert f"up to {32768 - 5 + e}, the core has 32768 elements" in v.message


def test_negative_local_address():
    """fc's bias load on core 3 writes from local address -3, and its mvm's output goes to
    -1: each is named, in program order."""
    program, target = small_ll()
    i, j = ops(program, 3).index(Op.LOAD), ops(program, 3).index(Op.MVM)
    e = int(program.cores[3].code[i, 5])
    report = verify(edited(edited(program, 3, i, b=-3), 3, j, b=-1), target)
    assert not report.passed
    found = [v for v in report.violations if v.kind == "address"]
    assert [v.instruction for v in found] == sorted([i, j])
    assert f"negative local address or length (-3, {e})" in located(
        report, "address", 3, i, "fc").message
    located(report, "address", 3, j, "fc")


def test_local_memory_capacity_of_an_mvm_output():
    """fc's mvm writes its 10 outputs from 4 elements before the end of local memory."""
    program, target = small_ll()
    i = ops(program, 3).index(Op.MVM)
    report = verify(edited(program, 3, i, b=32768 - 4), target)
    located(report, "local-memory-capacity", 3, i, "fc")


def test_windows_mvm_deleted():
    """Without conv2's first mvm, its 72 rows are read 35 times for 36 windows."""
    program, target = small_ll()
    i = ops(program, 2).index(Op.MVM)
    report = verify(without(program, 2, i), target)
    v = located(report, "windows", None, -1, "conv2")
    assert "matrix 0 row 0 is read 35 times for 36 windows" in v.message
    assert [w.layer for w in report.violations if w.kind == "windows"] == ["conv2"]


def test_windows_mvm_duplicated():
    """conv1's second array group (rows 128-143, core 1) runs its first mvm twice in a row:
    rows 128-143 are read 37 times. The duplicate comes first, with the same dependencies, so
    the original stays the last writer of the output and nothing else is wrong."""
    program, target = small_ll()
    items = unpack(program.cores[1])
    i = next(k for k, item in enumerate(items) if item.row[0] == Op.MVM)
    twin = dataclasses.replace(items[i], row=list(items[i].row), key=fresh_key())
    items.insert(i, twin)
    report = verify(with_core(program, 1, items), target)
    assert kinds(report) == {"windows"}
    v = located(report, "windows", None, -1, "conv1")
    assert "matrix 0 row 128 is read 37 times for 36 windows" in v.message


def test_windows_violation_names_the_core_of_the_layer():
    """conv2 sits on core 2 only; the violation should name core 2 (and not '(, layer')."""
    program, target = small_ll()
    report = verify(without(program, 2, ops(program, 2).index(Op.MVM)), target)
    [v] = [w for w in report.violations if w.kind == "windows"]
    assert v.core == 2
    assert "(, " not in v.message


def find_dropped_dep(program: Program, core: int, recv: bool) -> tuple[int, int]:
    """An instruction i and a dependency j of i on another unit, where j last wrote data i
    reads, j is a recv iff ``recv``, and no other dependency of i covers j."""
    stream = program.cores[core]
    unit = units(stream.code)
    code = stream.code.tolist()
    for i, writers in enumerate(writers_read(program, core)):
        deps = stream.deps_of(i).tolist()
        for j in deps:
            if (j not in writers or unit[j] == unit[i] or (code[j][0] == Op.RECV) != recv
                    or max(d for d in deps if unit[d] == unit[j]) != j):
                continue
            return i, j
    raise AssertionError("no candidate")


@pytest.mark.parametrize(("core", "recv"), [(0, False), (2, False), (2, True), (1, True)])
def test_read_before_write_dependency_dropped(core, recv):
    """Drop the one dependency that orders a reader after the instruction (on another unit:
    a load, copy, write, mvm or recv) that wrote what it reads."""
    program, target = small_ll()
    i, j = find_dropped_dep(program, core, recv)
    items = unpack(program.cores[core])
    items[i].deps.remove(j)
    broken = with_core(program, core, items)
    assert not ordered(broken.cores[core], i, j)
    report = verify(broken, target)
    v = located(report, "read-before-write", core, i, layer_of(program, core, i))
    writer = re.search(r"reads what instruction (\d+) \((\w+)\) writes without waiting for it",
                       v.message)
    assert writer, v.message
    # the reported writer is j, or an earlier writer of j's unit that only j covered
    k = int(writer.group(1))
    assert k <= j and units(program.cores[core].code)[k] == units(program.cores[core].code)[j]
    assert writer.group(2) == Op(int(program.cores[core].code[k, 0])).name.lower()
    assert (writer.group(2) == "recv") == recv


def test_read_before_write_of_recv_data():
    """conv2's first copy on core 2 reads a pixel of relu1 received from core 0; without its
    dependency on that recv it may read the buffer before the data arrived."""
    program, target = small_ll()
    i, j = find_dropped_dep(program, 2, recv=True)
    assert program.cores[2].code[j, 0] == Op.RECV
    items = unpack(program.cores[2])
    items[i].deps.remove(j)
    report = verify(with_core(program, 2, items), target)
    assert kinds(report) == {"read-before-write"}
    v = located(report, "read-before-write", 2, i, "conv2")
    assert f"reads what instruction {j} (recv) writes without waiting for it" in v.message


def test_read_of_never_written_memory():
    """fc's bias add on core 3 reads its second operand from address 1000, never written."""
    program, target = small_ll()
    i = ops(program, 3).index(Op.VEC)
    assert all(1000 not in r for row in program.cores[3].code.tolist()
               for r in local_writes(program, row))
    report = verify(edited(program, 3, i, d=1000), target)
    assert kinds(report) == {"read-before-write"}
    v = located(report, "read-before-write", 3, i, "fc")
    assert "reads local address 1000, which nothing wrote before" in v.message


def test_unmatched_recv_deleted():
    """Core 3's only recv is deleted: core 2's last send to core 3 has no recv (core 3's mvm
    now reads what nothing wrote)."""
    program, target = small_ll()
    sent = [k for k, row in enumerate(program.cores[2].code.tolist())
            if row[0] == Op.SEND and row[1] == 3]
    assert len(sent) == 1
    broken = without(program, 3, ops(program, 3).index(Op.RECV))
    report = verify(broken, target)
    assert "unmatched" in kinds(report)
    v = located(report, "unmatched", 2, sent[0], layer_of(program, 2, sent[0]))
    assert "send to core 3 has no matching recv" in v.message
    assert [w.core for w in report.violations if w.kind == "unmatched"] == [2]


def test_unmatched_send_deleted():
    """Core 2's send to core 3 is deleted: core 3's recv has no send."""
    program, target = small_ll()
    k = next(k for k, row in enumerate(program.cores[2].code.tolist())
             if row[0] == Op.SEND and row[1] == 3)
    report = verify(without(program, 2, k), target)
    v = located(report, "unmatched", 3, 0, layer_of(program, 3, 0))
    assert "recv from core 2 has no matching send" in v.message


def test_unmatched_length():
    """Core 3 expects 9 elements where core 2 sends 8."""
    program, target = small_ll()
    assert program.cores[3].code[0, 0] == Op.RECV
    e = int(program.cores[3].code[0, 5])
    report = verify(edited(program, 3, 0, e=e + 1), target)
    v = located(report, "unmatched", 3, 0, layer_of(program, 3, 0))
    assert f"receives {e + 1} elements with tag 0 from core 2, whose matching send" in v.message
    assert f"sends {e}" in v.message


def test_unmatched_tag():
    """The reference codegen tags every transfer 0; core 3's recv now expects tag 1."""
    program, target = small_ll()
    assert program.cores[3].code[0, 0] == Op.RECV
    report = verify(edited(program, 3, 0, d=1), target)
    located(report, "unmatched", 3, 0, layer_of(program, 3, 0))


def swapped_exchange(name: str) -> tuple[Program, CrossbarTarget, int]:
    """Core 0 sends conv1's input slice to core 1 and later receives the partial sums back;
    core 1 receives the slice first. Core 0's recv is moved up before its send: both cores
    now start by receiving from each other. (PIMCOMP's passes: there, core 0's first send to
    core 1 is this slice; the timed order sends the next window's slice before the partial
    sums.)"""
    program, target = small_ll(name, "passes")
    items = unpack(program.cores[0])
    i = next(k for k, item in enumerate(items) if item.row[:2] == [Op.SEND, 1])
    j = next(k for k in range(i + 1, len(items)) if items[k].row[:2] == [Op.RECV, 1])
    assert not items[j].deps  # the recv waits for nothing, so it may move up
    assert program.cores[1].code[0, :2].tolist() == [Op.RECV, 0]
    items.insert(i, items.pop(j))
    return with_core(program, 0, items), target, i


def held_send(name: str) -> tuple[Program, CrossbarTarget, int]:
    """``swapped_exchange``, and core 0's send after the moved recv now waits for it."""
    program, target, i = swapped_exchange(name)
    items = unpack(program.cores[0])
    assert items[i].row[:2] == [Op.RECV, 1] and items[i + 1].row[:2] == [Op.SEND, 1]
    items[i + 1].deps.append(items[i].key)
    return with_core(program, 0, items), target, i


def test_recv_does_not_hold_back_a_later_send():
    """On an out-of-order core with async communication (ISAAC) each unit runs on its own:
    core 0's send to core 1, now behind a recv from core 1, still goes, so the swapped
    exchange is no deadlock there; the simulator runs it as far as the original."""
    swapped, target, _ = swapped_exchange("isaac")
    assert target.core.execution == "out_of_order"
    assert target.chip.interconnect.communication == "async"
    assert verify(swapped, target).passed
    assert run(swapped, target).makespan_ns == pytest.approx(
        run(small_ll("isaac", "passes")[0], target).makespan_ns)


@pytest.mark.parametrize("name", ["puma", "isaac"])
def test_deadlock(name):
    """Reported on both cores (the recv now at core 0's instruction i, core 1's first); the
    cores behind them (2 waits for 0, 3 for 2) are blocked too. The simulator agrees. On
    ISAAC (out-of-order, async) only once core 0's send waits for that recv."""
    broken, target, i = swapped_exchange(name) if name == "puma" else held_send(name)
    assert target.chip.interconnect.communication == ("sync" if name == "puma" else "async")
    report = verify(broken, target)
    assert kinds(report) == {"deadlock"}
    v0 = located(report, "deadlock", 0, i, "conv1")
    v1 = located(report, "deadlock", 1, 0, "conv1")
    assert "blocked forever waiting on core 1" in v0.message
    assert "blocked forever waiting on core 0" in v1.message
    assert {(v.core, v.instruction) for v in report.violations} == {
        (0, i), (1, 0), (2, 0), (3, 0)}
    with pytest.raises(Deadlock, match=f"4 cores blocked, e.g. core 0 at instruction {i} "
                       r"\(recv core 1\)"):
        run(broken, target)


def test_global_address_out_of_range():
    """conv1's first input load on core 0 reads from the end of the program's global memory."""
    program, target = small_ll()
    i = ops(program, 0).index(Op.LOAD)
    e = int(program.cores[0].code[i, 5])
    g = program.global_elements
    report = verify(edited(program, 0, i, c=g), target)
    assert kinds(report) == {"address"}
    v = located(report, "address", 0, i, "conv1")
    assert f"global range [{g}, {g + e}) outside the program's {g} elements" in v.message


def test_store_address_out_of_range():
    """fc's result store on core 3 writes one element past the end of global memory."""
    program, target = small_ll()
    i = ops(program, 3).index(Op.STORE)
    e = int(program.cores[3].code[i, 5])
    g = program.global_elements
    report = verify(edited(program, 3, i, b=g - e + 1), target)
    assert kinds(report) == {"address"}
    located(report, "address", 3, i, "fc")


def test_array_group_slot_out_of_range():
    """fc's mvm names slot 4 of a program with 4 slots (fc's rows are then read 0 times)."""
    program, target = small_ll()
    i = ops(program, 3).index(Op.MVM)
    report = verify(edited(program, 3, i, a=4), target)
    v = located(report, "address", 3, i, "fc")
    assert "AG slot 4 does not exist" in v.message
    assert "windows" in kinds(report)


def test_array_group_of_another_core():
    """fc's mvm on core 3 names conv2's slot 2, which sits on core 2."""
    program, target = small_ll()
    i = ops(program, 3).index(Op.MVM)
    report = verify(edited(program, 3, i, a=2), target)
    v = located(report, "address", 3, i, "conv2")
    assert "AG slot 2 (conv2 replica 0 AG 0) sits on core 2" in v.message


def test_overwrite_live():
    """On core 1, the recv after conv1's first mvm there is redirected onto that mvm's input,
    which the mvm (another unit, not waited for) may still be reading."""
    program, target = small_ll()
    stream = program.cores[1]
    code = stream.code.tolist()
    j = ops(program, 1).index(Op.MVM)
    i = next(k for k in range(j + 1, len(code)) if code[k][0] in (Op.RECV, Op.COPY, Op.WRITE))
    addresses = range(code[j][3], code[j][3] + code[i][5])
    assert last_reader(program, 1, i, addresses) == j
    broken = edited(program, 1, i, b=code[j][3])
    assert not ordered(broken.cores[1], i, j)
    report = verify(broken, target)
    v = located(report, "overwrite-live", 1, i, "conv1")
    assert f"overwrites local data instruction {j} (mvm) reads, without waiting for it" \
        in v.message


def test_overwrite_live_dependency_dropped():
    """Core 1's second recv into conv1's input buffer waits for the mvm that read the first
    slice from it; without that dependency it overwrites a live buffer."""
    program, target = small_ll()
    stream = program.cores[1]
    code = stream.code.tolist()
    for i, row in enumerate(code):
        j = last_reader(program, 1, i, range(row[2], row[2] + row[5])) if row[0] == Op.RECV \
            else -1
        if j >= 0 and j in stream.deps_of(i).tolist():
            break
    else:
        raise AssertionError("no recv overwrites a buffer read before")
    items = unpack(stream)
    items[i].deps.remove(j)
    report = verify(with_core(program, 1, items), target)
    assert kinds(report) == {"overwrite-live"}
    v = located(report, "overwrite-live", 1, i, "conv1")
    assert f"instruction {j} (mvm) reads" in v.message


def unprogrammed_conv2(prog_at: int | None) -> tuple[CheckReport, int, Program]:
    """conv2's slot is not preloaded; a ``prog`` of it is inserted before instruction
    ``prog_at`` of core 2 (None: no prog)."""
    program, target = small_ll()
    slot = next(s for s, g in enumerate(program.array_groups) if g.layer == "conv2")
    groups = list(program.array_groups)
    groups[slot] = dataclasses.replace(groups[slot], preloaded=False)
    items = unpack(program.cores[2])
    if prog_at is not None:
        items.insert(prog_at, Ins([int(Op.PROG), slot, 0, 0, 0, 0], [], -1, fresh_key()))
    broken = dataclasses.replace(with_core(program, 2, items), array_groups=tuple(groups))
    return verify(broken, target), slot, broken


def test_unprogrammed():
    """Every mvm of the not-preloaded slot is reported; the first names the layer and slot."""
    report, slot, program = unprogrammed_conv2(None)
    assert kinds(report) == {"unprogrammed"}
    mvms = [k for k, row in enumerate(program.cores[2].code.tolist())
            if row[0] == Op.MVM and row[1] == slot]
    assert len(mvms) == 36
    assert [(v.core, v.instruction) for v in report.violations] == [(2, k) for k in mvms]
    v = located(report, "unprogrammed", 2, mvms[0], "conv2")
    assert f"AG slot {slot} (conv2 replica 0 AG 0) is used before its weights are programmed" \
        in v.message


def test_prog_first_passes():
    """A prog of the slot at the start of core 2 makes the program valid again; the
    simulator spends ISAAC's 128 x 85.7 ns programming the crossbar."""
    report, _, program = unprogrammed_conv2(0)
    assert report.passed, [v.message for v in report.violations]
    timeline = run(program, target_of("isaac", True))
    assert timeline.end[2][0] - timeline.start[2][0] == pytest.approx(128 * 85.7, rel=1e-12)


def test_prog_after_the_first_mvm():
    """A prog placed right after the first mvm covers every later mvm, not the first."""
    _, slot, program = unprogrammed_conv2(None)
    first = next(k for k, row in enumerate(program.cores[2].code.tolist())
                 if row[0] == Op.MVM and row[1] == slot)
    report, _, _ = unprogrammed_conv2(first + 1)
    assert kinds(report) == {"unprogrammed"}
    assert [(v.core, v.instruction) for v in report.violations] == [(2, first)]
