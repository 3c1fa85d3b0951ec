"""Codegen: HT replicas homed on one core share their loads (PIMCOMP Fig. 8c), as the placement
model counts them, and still compute the right numbers; HT split replicas on in-order cores
run at the model's cycle; LL's timed list scheduler overlaps the
windows of split replicas and keeps received pixels within local memory."""

from __future__ import annotations

import functools
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import helper

import pimsolve.codegen.generate as generate_module
from pimsolve import parallel
from pimsolve.api import (
    PlacementSettings,
    check_program,
    functional_check,
    inspect_model,
    load_target,
    map_model,
)
from pimsolve.codegen.generate import CodegenOptions, generate
from pimsolve.frontend.load import load_onnx
from pimsolve.ir.program import ArrayGroupSlot, Op
from pimsolve.lowering import lower
from pimsolve.simulate.checks import verify
from pimsolve.simulate.metrics import measure
from pimsolve.simulate.simulator import run
from pimsolve.stages.placement.baselines import BASELINES
from pimsolve.stages.placement.evaluate import LayerCounts, counts_of, decode, predict
from pimsolve.stages.placement.instance import _vector_gm_bytes, build_instance
from pimsolve.stages.placement.reference import reference_mapping
from tests.simulate.test_checks import small_ll, target_of, tiny_cnn
from tests.simulate.test_functional import FLOAT_TOLERANCE, NETWORKS, _model
from tests.stages.placement.test_diagram import skip_block

pytest.importorskip("onnxruntime")

ONE_CORE = PlacementSettings(engine="one-layer-per-core")
"""Every replica of a layer on one core: the homes of a layer always share it."""


def _input_loads(program, layer: str, bias_bytes: int) -> np.ndarray:
    """Bytes core k loads from global memory for ``layer``, its bias loads left out."""
    tag = program.layers.index(layer)
    eb = program.element_bits / 8
    out = np.zeros(len(program.cores))
    for k, core in enumerate(program.cores):
        sel = (core.code[:, 0] == Op.LOAD) & (core.tags == tag)
        loads = core.code[sel, 5] * eb
        out[k] = loads.sum() - (bias_bytes if len(loads) else 0)
    return out


@pytest.mark.parametrize("network", sorted(NETWORKS))
def test_colocated_replicas_load_each_pixel_once(network: str) -> None:
    """h replicas (of r) homed on a core load what one replica of r / h would: the distinct
    input pixels of their joint window range, i.e. lam at r / h (the whole input at h = r)."""
    result = map_model(NETWORKS[network](), target="isaac", objective="throughput",
                       settings=ONE_CORE)
    target = load_target("isaac")
    inspection = inspect_model(NETWORKS[network](), target=target)
    instance = build_instance(inspection.graph, inspection.workload, target, "ht")
    shared = 0
    for layer, c in zip(instance.layers, counts_of(instance, result.mapping), strict=True):
        if not any(layer.overlap_bytes) or c.rho.max() < 2:
            continue
        homes = c.rho[c.rho > 0]
        assert (homes == homes[0]).all() and c.replication % homes[0] == 0
        shared += 1
        emitted = _input_loads(result.program, layer.name, int(layer.store_bytes))
        joint = layer.load_bytes[layer.replications.index(c.replication // homes[0])]
        assert (emitted[c.rho > 0] == joint).all()
        assert emitted[c.rho > 0].sum() < c.replication * layer.load_bytes[
            layer.replications.index(c.replication)]
        if homes[0] == c.replication:  # the model's lam h - delta (h - 1) is exact, rounded up
            ri = layer.replications.index(c.replication)
            model = layer.core_load_bytes(ri, c.rho).sum()
            assert joint <= model <= joint + 2 * c.replication
    assert shared, "the mapping co-locates no replicas of an overlapping layer"


@pytest.mark.parametrize("network", sorted(NETWORKS))
def test_colocated_replicas_load_neighbouring_pixels_together(network: str) -> None:
    """h replicas homed on a core cover h neighbouring windows per round: their new pixels
    that are neighbours in memory come in one load, so a conv's home issues fewer loads than
    it loads pixels (and no load splits a pixel)."""
    result = map_model(NETWORKS[network](), target="isaac", objective="throughput",
                       settings=ONE_CORE)
    program = result.program
    graph = inspect_model(NETWORKS[network]()).graph
    runs = 0
    for lp in result.mapping.layers:
        homes = {cores[0] for cores in lp.cores}
        if len(homes) == len(lp.cores):
            continue  # no core is home to two replicas
        tag = program.layers.index(lp.layer)
        layer = graph.layer(lp.layer)
        channels, bias = layer.inputs[0].shape[1], layer.outputs[0].shape[1]
        for k in homes:
            core = program.cores[k]
            sel = (core.code[:, 0] == Op.LOAD) & (core.tags == tag)
            lengths = list(core.code[sel, 5])
            lengths.remove(bias)  # one bias load per home
            lengths = np.array(lengths)
            assert (lengths % channels == 0).all()
            runs += len(lengths) < (lengths // channels).sum()
    assert runs, "no home loads two pixels at once"


@pytest.mark.parametrize("network", sorted(NETWORKS))
def test_colocated_replicas_compute_the_same(network: str) -> None:
    result = functional_check(NETWORKS[network](), target="isaac", mode="ht",
                              settings=ONE_CORE)
    assert result.max_rel_error < FLOAT_TOLERANCE


def test_global_pool_streams_its_pixels() -> None:
    """A global pool's task reads every pixel of its input once: each pixel is loaded into a
    slot that is freed after its read, so a few slots (shared with the other buffers of its
    size) serve all of them; held until the task's end, each pixel would need its own."""
    network = NETWORKS["residual"]()
    result = map_model(network, target="isaac", objective="throughput", settings=ONE_CORE)
    program = result.program
    tag = program.layers.index("gap")
    pixels = inspect_model(network).graph.layer("gap").inputs[0].shape[2:]
    slots = set()
    loads = 0
    for core in program.cores:
        sel = (core.code[:, 0] == Op.LOAD) & (core.tags == tag)
        slots |= {(id(core), a) for a in core.code[sel, 2]}
        loads += int(sel.sum())
    assert loads == int(np.prod(pixels))
    assert len(slots) <= loads // 4


def test_vector_buffers_are_kept_from_crossbar_layers() -> None:
    """mu^v comes off every core's local memory; a core too small for it is infeasible."""
    from pimsolve.errors import InfeasibleError

    target = load_target("isaac")
    inspection = inspect_model(NETWORKS["residual"](), target=target)
    instance = build_instance(inspection.graph, inspection.workload, target, "ht")
    memory = int(target.core.local_memory.size_kib * 1024)
    assert 0 < instance.vector_reserve_bytes < memory
    assert instance.local_memory_bytes == memory - instance.vector_reserve_bytes
    lm = target.core.local_memory.model_copy(
        update={"size_kib": instance.vector_reserve_bytes / 1024})
    small = target.model_copy(update={"core": target.core.model_copy(
        update={"local_memory": lm})})
    with pytest.raises(InfeasibleError, match="vector layers"):
        build_instance(inspection.graph, inspection.workload, small, "ht")


def _conv_then_whole_pool(channels: int = 256):
    """Conv 3x3 (pad 1) on a 7x7 input -> AveragePool 7x7: a global pool written as a pool
    whose kernel covers its input (as ONNX's light Inception-v2 ends)."""
    return _model([
        helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1],
                         kernel_shape=[3, 3]),
        helper.make_node("AveragePool", ["c"], ["y"], name="pool", kernel_shape=[7, 7])],
        {"x": [1, 16, 7, 7]}, ("y", [1, channels, 1, 1]),
        {"w": [channels, 16, 3, 3], "b": [channels]})


@pytest.mark.parametrize("objective", ["throughput", "latency"])
def test_a_pool_over_its_whole_input_reserves_one_pixel(objective: str) -> None:
    """A pool of one output pixel reads each input pixel once and lets it go once read (HT
    frees it; LL leaves it to be spilled), so mu^v counts one input pixel, as for a
    GlobalAveragePool. With local memory below what its 49 pixels would need, both modes
    map and their programs pass the verifier's local-memory check; with less memory than
    mu^v, the error names the pool. Fails with the window counted (the instance refused)."""
    from pimsolve.errors import InfeasibleError

    target = load_target("isaac")
    model = _conv_then_whole_pool()
    inspection = inspect_model(model, target=target)
    mode = "ht" if objective == "throughput" else "ll"
    reserve = build_instance(inspection.graph, inspection.workload, target,
                             mode).vector_reserve_bytes
    eb = target.numerics.activation_bits / 8

    def with_memory(nbytes: float):
        lm = target.core.local_memory.model_copy(update={"size_kib": nbytes / 1024})
        return target.model_copy(update={"core": target.core.model_copy(
            update={"local_memory": lm})})

    small = with_memory(reserve + 24 * 256 * eb)  # half the 48 pixels more the window holds
    result = map_model(model, target=small, objective=objective, settings=ONE_CORE)
    assert result.report["checks"]["passed"]
    with pytest.raises(InfeasibleError, match="vector layers.*AveragePool pool, holds 1 x 256"):
        build_instance(inspection.graph, inspection.workload, with_memory(reserve), mode)


# ---- LL: the timed list scheduler ------------------------------------------------------------


@pytest.mark.parametrize("ll_order", ["timed", "passes"])
@pytest.mark.parametrize("network", sorted(NETWORKS))
def test_both_ll_orders_compute_the_same(network: str, ll_order: str) -> None:
    result = functional_check(NETWORKS[network](), target="puma", mode="ll",
                              codegen=CodegenOptions(ll_order=ll_order))
    assert result.max_rel_error < FLOAT_TOLERANCE


def test_ll_overlaps_the_windows_of_a_split_replica() -> None:
    """conv1's AGs sit on cores 0 and 1. In PIMCOMP's passes core 0 sends window 1's input
    slice, waits for its partial sums, then sends window 2's; the timed order emits window 2's
    slice before window 1's partial sums, so core 1's AG does not idle for a round trip."""
    def first(program, op, peer: int) -> list[int]:
        code = program.cores[0].code
        return [i for i in range(len(code)) if code[i, 0] == op and code[i, 1] == peer][:2]

    for order, overlapped in (("timed", True), ("passes", False)):
        program, target = small_ll("isaac", order)
        assert verify(program, target).passed
        sends, recvs = first(program, Op.SEND, 1), first(program, Op.RECV, 1)
        assert sends[0] < recvs[0]
        assert (sends[1] < recvs[0]) is overlapped


def two_convs(hw: int = 16, channels: int = 32):
    return _model([
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1],
                         kernel_shape=[3, 3]),
        helper.make_node("Conv", ["c1", "w2", "b2"], ["y"], name="conv2", pads=[1, 1, 1, 1],
                         kernel_shape=[3, 3])],
        {"x": [1, channels, hw, hw]}, ("y", [1, channels, hw, hw]),
        {"w1": [channels, channels, 3, 3], "b1": [channels],
         "w2": [channels, channels, 3, 3], "b2": [channels]})


def _two_convs_on(target_name: str, kib: float, mode: str):
    """``two_convs`` on the target with ``kib`` KiB of local memory per core: the model, its
    inspection, the target and the placement instance in ``mode``."""
    target = load_target(target_name)
    lm = target.core.local_memory.model_copy(update={"size_kib": kib})
    target = target.model_copy(update={"core": target.core.model_copy(
        update={"local_memory": lm})})
    model = two_convs()
    inspection = inspect_model(model, target=target)
    return model, inspection, target, build_instance(inspection.graph, inspection.workload,
                                                     target, mode)


def _flooded_core(target_name: str = "isaac"):
    """conv1 (8 replicas, cores 0-7) makes its 256 output pixels 8x faster than conv2
    (1 replica, core 8) takes them; cores have 16 KiB (8,192 elements) of local memory."""
    model, inspection, target, instance = _two_convs_on(target_name, 16, "ll")
    counts, core = [], 0
    for layer, replication in zip(instance.layers, (8, 1), strict=True):
        choice = min(range(len(layer.choices)), key=lambda i: layer.choices[i].ags)
        y = np.zeros(instance.cores, dtype=np.int64)
        rho, ell = y.copy(), y.copy()
        for _ in range(replication):
            y[core] = ell[core] = layer.choices[choice].ags
            rho[core] = 1
            core += 1
        counts.append(LayerCounts(choice, replication, y, rho, ell))
    return model, inspection, target, decode(instance, counts, engine="test")


def test_received_pixels_wait_for_room(monkeypatch) -> None:
    """Sent as soon as they are made, conv1's 256 pixels (8,192 elements) land in conv2's
    local memory; held at their producers while conv2's core is half full, they fit, and
    conv2 is not slower for it (spilling off, so only the flow control keeps them in)."""
    _, inspection, target, mapping = _flooded_core()
    no_spill = CodegenOptions(ll_spill=False)

    def compiled():
        program = generate(inspection.graph, inspection.workload, mapping, target, no_spill)
        return verify(program, target), run(program, target).makespan_ns

    held, held_ns = compiled()
    monkeypatch.setattr(generate_module, "LL_RECEIVE_SHARE", 1e9)
    flooded, flooded_ns = compiled()
    assert {v.kind for v in flooded.violations} == {"local-memory-capacity"}
    assert {v.core for v in flooded.violations} == {8}
    assert held.passed
    assert held_ns <= flooded_ns


@pytest.mark.parametrize("target_name", ["isaac", "puma"])
def test_a_full_core_spills_to_global_memory(monkeypatch, target_name: str) -> None:
    """Flow control off, conv1's pixels flood conv2's core. Without spilling its buffers pass
    the local memory; with it the core stores the pixels it got last to global memory and
    loads them back when conv2 needs them: the program fits, only core 8 stores and loads
    anything beyond the layout's tensors, and the output is still onnxruntime's."""
    model, inspection, target, mapping = _flooded_core(target_name)
    monkeypatch.setattr(generate_module, "LL_RECEIVE_SHARE", 1e9)
    over = generate(inspection.graph, inspection.workload, mapping, target,
                    CodegenOptions(ll_spill=False))
    spilled = generate(inspection.graph, inspection.workload, mapping, target)
    assert not verify(over, target).passed
    assert verify(spilled, target).passed
    assert spilled.global_elements > over.global_elements
    for k, core in enumerate(spilled.cores):
        code = core.code
        stores = (code[:, 0] == Op.STORE) & (code[:, 2] >= over.global_elements)
        loads = (code[:, 0] == Op.LOAD) & (code[:, 3] >= over.global_elements)
        assert bool(stores.any() and loads.any()) is (k == 8)
    for program in (spilled, over):
        check = check_program(model, inspection.graph, program, target)
        assert check.max_rel_error < FLOAT_TOLERANCE


def test_a_full_ht_core_drops_cached_pixels() -> None:
    """HT, conv1's 3 replicas homed on core 0 share one input cache, and cores have 5 KiB of
    local memory: caching every pixel until its last window passes the memory; dropping the
    pixels no task of the round reads (and loading them again later) keeps the program
    within it, at the cost of more loads, with onnxruntime's numbers."""
    model, inspection, target, instance = _two_convs_on("isaac", 5, "ht")
    counts = []
    for core, (layer, replication) in enumerate(zip(instance.layers, (3, 1), strict=True)):
        choice = min(range(len(layer.choices)), key=lambda i: layer.choices[i].ags)
        y = np.zeros(instance.cores, dtype=np.int64)
        rho = y.copy()
        y[core], rho[core] = replication * layer.choices[choice].ags, replication
        counts.append(LayerCounts(choice, replication, y, rho, y.copy()))
    mapping = decode(instance, counts, engine="test")
    kept, dropped = (generate(inspection.graph, inspection.workload, mapping, target,
                              CodegenOptions(ht_drop=drop)) for drop in (False, True))
    assert {v.kind for v in verify(kept, target).violations} == {"local-memory-capacity"}
    assert verify(dropped, target).passed
    loaded = [measure(p, target, run(p, target)).global_memory_bytes for p in (kept, dropped)]
    assert loaded[1] > loaded[0]
    assert check_program(model, inspection.graph, dropped, target).max_rel_error < FLOAT_TOLERANCE


@pytest.mark.parametrize(("target", "in_order"), [("puma", True), ("isaac", False)])
def test_ll_clock_keeps_an_in_order_core_in_program_order(target: str, in_order: bool) -> None:
    """An MVM task of three row blocks emitted on core 0 holds core 0's issue for three
    intervals; on an in-order core (PUMA) a send emitted after it starts no earlier than its
    last MVM, on an out-of-order one (ISAAC) at once."""
    t = load_target(target)
    rows = 3 * t.crossbar.parallel_rows
    slot = ArrayGroupSlot("conv", 0, 0, 0, 0, 0, rows, 8, 1)
    clock = generate_module._Clock(t, [slot])
    worker = SimpleNamespace(core=0, slots=[0], tasks_of=SimpleNamespace(kind="mvm", channels=8,
                                                                  activation=None))
    clock.run(worker, 1, 0.0)
    arrived = clock.send(0, 1, 64, 0.0)
    link = 64 * t.numerics.activation_bits / 8 / t.chip.interconnect.bandwidth_gb_per_s
    first = 2 * t.core.mvm_issue_interval_ns if in_order else 0.0
    assert arrived == pytest.approx(first + link)


def test_ht_split_replicas_on_in_order_cores_meet_once_per_round() -> None:
    """PUMA (in-order cores, paired send/recv), HT: conv1 sits on core 0 with one AG on core
    1, conv2 on core 1 with one AG on core 2. Each round sends every window's input slices
    before the MVMs, so core 1 does not wait for core 0's MVMs to reach each slice: the cycle
    is the model's (core 1's serial issue and network time) within 2%. Sending each slice
    between the home core's MVMs took 66% longer."""
    target = load_target("puma")
    model = two_convs(channels=64)
    inspection = inspect_model(model, target=target)
    instance = build_instance(inspection.graph, inspection.workload, target, "ht")
    counts = []
    for layer, home in zip(instance.layers, (0, 1), strict=True):
        choice = max(range(len(layer.choices)), key=lambda i: layer.choices[i].ags)
        y = np.zeros(instance.cores, dtype=np.int64)
        rho, ell = y.copy(), y.copy()
        y[home] = ell[home] = layer.choices[choice].ags - 1
        rho[home] = y[home + 1] = 1
        counts.append(LayerCounts(choice, 1, y, rho, ell))
    mapping = decode(instance, counts, engine="test")
    assert [sorted(set(p.cores[0])) for p in mapping.layers] == [[0, 1], [1, 2]]
    program = generate(inspection.graph, inspection.workload, mapping, target)
    assert verify(program, target).passed
    cycle = measure(program, target, run(program, target)).cycle_s * 1e9
    predicted = predict(instance, counts)
    assert predicted.bottleneck == "serial"
    assert cycle == pytest.approx(predicted.time_ns, rel=0.02)


def test_ll_clock_books_a_split_task_on_each_of_its_cores() -> None:
    """PUMA (in-order, paired send/recv): a window whose second AG sits on core 1 first
    sends core 1 its input slice (both cores wait for it), then each AG issues on its own
    core; the partial sums come back after the MVMs and are added on core 0. The clock books
    each step where the program has it, so it agrees with the simulator."""
    t = load_target("puma")
    rows, cols = t.crossbar.parallel_rows, 8
    slots = [ArrayGroupSlot("conv", 0, g, g, 0, g * rows, rows, cols, 1) for g in (0, 1)]
    clock = generate_module._Clock(t, slots)
    channels = 8
    worker = SimpleNamespace(core=0, slots=[0, 1],
                             tasks_of=SimpleNamespace(kind="mvm", channels=channels,
                                                      activation=None))
    link = t.numerics.activation_bits / 8 / t.chip.interconnect.bandwidth_gb_per_s
    done = clock.run(worker, 1, 0.0)
    assert done == pytest.approx(rows * link + t.crossbar.mvm_latency_ns)
    interval = t.core.mvm_issue_interval_ns
    assert clock.issue[:2] == pytest.approx([rows * link + interval] * 2)
    vec = t.core.vector_unit
    add = vec.op_latency_ns * -(-channels // vec.lanes)
    assert clock.gather(worker, done) == pytest.approx(done + cols * link + 2 * add)


@pytest.mark.parametrize(("network", "within"), [("tiny", 0.05), ("vgg8-28", 0.01)])
def test_ll_keeps_the_priority_the_clock_finds_faster(network: str, within: float) -> None:
    """PUMA (in-order, paired send/recv), LL: where program order is the schedule, the
    clock's estimate of each priority's program is the simulator's (vgg8-28 with balance's
    placement within 1%; the tiny CNN on 4 cores within 5%, its loads' latency unbooked),
    and 'best' keeps the faster one."""
    if network == "tiny":
        target = target_of("puma", True)
        graph = load_onnx(tiny_cnn())
        workload = lower(graph, target)
        mapping = reference_mapping(workload, target, "ll")
    else:
        target = load_target("puma")
        inspection = inspect_model(network, target=target)
        graph, workload = inspection.graph, inspection.workload
        instance = build_instance(graph, workload, target, "ll")
        mapping = decode(instance, BASELINES["balance"](instance, "latency"), engine="test")
    simulated = {}
    for priority in ("arrival", "layer"):
        generator = generate_module._Generator(graph, workload, mapping, target,
                                               CodegenOptions(ll_priority=priority))
        program = generator.program()
        simulated[priority] = run(program, target).makespan_ns
        assert generator.estimated_ns == pytest.approx(simulated[priority], rel=within)
    best = generate(graph, workload, mapping, target)
    assert run(best, target).makespan_ns == min(simulated.values())


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 40), st.booleans(), st.integers(0, 3)), min_size=1,
                max_size=8))
def test_ht_rounds_are_the_paced_dues(spec) -> None:
    """``_ht_rounds`` lists per round the workers with tasks and how many: exactly where
    ``_due`` (tasks due by the end of a round) grows, for paced workers and pools on 4 cores."""
    generator = SimpleNamespace(cores=4)
    generator._due = functools.partial(generate_module._Generator._due, generator)
    workers = [SimpleNamespace(tasks=list(range(n)), core=core,
                               tasks_of=SimpleNamespace(kind="pool" if pool else "conv"))
               for n, pool, core in spec]
    rounds = max(len(w.tasks) for w in workers)
    per_round = generate_module._Generator._ht_rounds(generator, workers, rounds)
    for t in range(rounds):
        due = [generate_module._Generator._due(generator, w, t, rounds)
               - (generate_module._Generator._due(generator, w, t - 1, rounds) if t else 0)
               for w in workers]
        assert per_round[t] == [(i, n) for i, n in enumerate(due) if n]
    assert sum(n for r in per_round for _, n in r) == sum(len(w.tasks) for w in workers)


def test_best_in_a_second_process_is_the_same_program(monkeypatch) -> None:
    """PUMA LL 'best' with the 'layer' priority generated in a forked process (from 0
    windows times array groups on) is the program generated one priority after the other;
    with one core to run on, nothing forks."""
    target = target_of("puma", True)
    graph = load_onnx(tiny_cnn())
    workload = lower(graph, target)
    mapping = reference_mapping(workload, target, "ll")
    forked = []
    real = parallel.can_fork

    def counted() -> bool:
        forked.append(real())
        return forked[-1]

    monkeypatch.setattr(parallel, "can_fork", counted)
    monkeypatch.setattr(parallel, "cores_to_run_on", lambda: 2)  # a 1-core CI too
    alone = generate(graph, workload, mapping, target, CodegenOptions(parallel_from=10**9))
    assert forked == []  # not wanted: not even asked
    both = generate(graph, workload, mapping, target, CodegenOptions(parallel_from=0))
    assert forked == [True]
    assert both == alone
    monkeypatch.setattr(parallel, "cores_to_run_on", lambda: 1)
    assert generate(graph, workload, mapping, target, CodegenOptions(parallel_from=0)) == alone
    assert forked == [True, False]


def _vector_moved(network, names: tuple[str, ...],
                  engine: str = "balance") -> tuple[dict, dict]:
    """HT on isaac: per vector layer, the bytes the program loads and stores for it, and the
    model's count."""
    target = load_target("isaac")
    inspection = inspect_model(network, target=target)
    program = map_model(network, target="isaac", objective="throughput",
                        settings=PlacementSettings(engine=engine)).program
    eb = target.numerics.activation_bits / 8
    moved = dict.fromkeys(program.layers, 0)
    for core in program.cores:
        sel = (core.code[:, 0] == Op.LOAD) | (core.code[:, 0] == Op.STORE)
        for tag, length in zip(core.tags[sel], core.code[sel, 5], strict=True):
            moved[program.layers[tag]] += int(length) * eb
    vector = {v.layer: v for v in inspection.workload.vector_layers}
    model = {name: _vector_gm_bytes(inspection.graph.layer(name), vector[name], target.cores,
                                    eb) for name in names}
    return {name: moved[name] for name in names}, model


def test_vector_gm_bytes_are_what_codegen_moves() -> None:
    """HT: the model's global-memory bytes of each vector layer (a 3 x 3 stride-1 pool, a
    Concat, a Relu) are the bytes the generated program loads and stores for it."""
    moved, model = _vector_moved(NETWORKS["concat"](), ("pool", "concat", "relu"))
    assert moved == model


def test_a_pools_windows_on_one_core_share_their_pixels() -> None:
    """576 windows of a 3 x 3 stride-1 pool on 168 cores, paced over the 576 rounds of an
    unreplicated convolution: each core runs its 3 or 4 neighbouring windows in one round
    and loads the pixels they share once, which is what the model counts (more than the
    input once: each core also loads its windows' halo)."""
    network = _model([
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1],
                         kernel_shape=[3, 3]),
        helper.make_node("MaxPool", ["c1"], ["p1"], name="pool", kernel_shape=[3, 3],
                         pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["p1", "w2", "b2"], ["y"], name="conv2", kernel_shape=[1, 1])],
        {"x": [1, 4, 24, 24]}, ("y", [1, 8, 24, 24]),
        {"w1": [8, 4, 3, 3], "b1": [8], "w2": [8, 8, 1, 1], "b2": [8]})
    moved, model = _vector_moved(network, ("pool",), engine="no-replication")
    pixel_bytes = 8 * 2
    assert moved == model
    assert 576 * pixel_bytes * 2 < moved["pool"] < 576 * pixel_bytes * (9 + 1) * 0.6


def test_ht_energy_charges_the_vector_layers_global_memory() -> None:
    """HT: the model's energy counts the vector layers' loads and stores (in the inception
    block a pool, a Concat and a Relu move 29% of its energy through global memory): the
    prediction is within 3% of the simulator's. LL keeps vector layers on the cores and
    charges no such bytes."""
    network, target = NETWORKS["concat"](), load_target("isaac")
    result = map_model(network, target="isaac", objective="throughput",
                       settings=PlacementSettings(engine="balance"))
    inspection = inspect_model(network, target=target)
    ht = build_instance(inspection.graph, inspection.workload, target, "ht")
    predicted = predict(ht, counts_of(ht, result.mapping)).energy_pj
    metrics = measure(result.program, target, run(result.program, target))
    simulated = sum(metrics.energy_by_component_j.values()) * 1e12
    assert abs(predicted / simulated - 1) < 0.03
    ll = build_instance(inspection.graph, inspection.workload, target, "ll")
    assert ht.constant_energy_pj - ll.constant_energy_pj == pytest.approx(
        ht.vector_gm_bytes * ht.gm_pj_per_byte)


def _join_on(conv1_cores: tuple[int, int]) -> set[int]:
    """The skip block (conv1 -> conv2, add(conv2, conv1) -> conv3) in LL on ISAAC, one
    replica a layer of two AGs: conv1's on ``conv1_cores`` (home first), conv2's on core 1,
    conv3's on core 3. The cores the add's vector operations run on."""
    target = load_target("isaac")
    inspection = inspect_model(skip_block(), target=target)
    instance = build_instance(inspection.graph, inspection.workload, target, "ll")
    counts = []
    for layer, cores in zip(instance.layers, (conv1_cores, (1, 1), (3, 3)), strict=True):
        choice = next(i for i, u in enumerate(layer.choices) if u.ags == 2)
        y = np.zeros(instance.cores, dtype=np.int64)
        rho, ell = y.copy(), y.copy()
        for core in cores:
            y[core] += 1
        rho[cores[0]] = 1
        ell[cores[0]] = y[cores[0]]
        counts.append(LayerCounts(choice, 1, y, rho, ell))
    program = generate(inspection.graph, inspection.workload,
                       decode(instance, counts, engine="test"), target)
    assert verify(program, target).passed
    tag = program.layers.index("add")
    return {k for k, stream in enumerate(program.cores)
            if ((stream.tags == tag) & (stream.code[:, 0] == Op.VEC)).any()}


def test_a_join_goes_next_to_the_producer_that_takes_in_less() -> None:
    """Each window of the add reads conv1's output on core 0 and conv2's on core 1: a tie.
    With conv1's second AG on core 2, core 0 takes in its 36 windows' partial sums, more
    than all the add's inputs, so every window runs on core 1 (on core 0, the lowest id,
    before); with both of conv1's AGs at home the two cores take turns, each window on
    the one that has taken in less."""
    assert _join_on((0, 2)) == {1}
    assert _join_on((0, 0)) == {0, 1}
