"""Exactness of the placement model: CP-SAT and both MILP engines find the brute-force optimum.

Tiny instances (3 crossbar layers, 2-3 cores of 2-3 crossbars, 128x128 crossbars): the brute
force enumerates every unfolding, replication and per-core placement (AGs per core, replica
homes; each home keeps as many of its AGs as it can, which never costs more, and at least
``home_least`` of them) and scores each
with ``evaluate.predict``, the function the model encodes.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
from fractions import Fraction
from unittest import mock

import numpy as np
import pytest

from pimsolve.frontend.load import load_onnx
from pimsolve.lowering import lower
from pimsolve.solve.model import check_values, solve_model
from pimsolve.stages.placement import evaluate, formulation
from pimsolve.stages.placement.evaluate import (
    LayerCounts,
    chip_crossings,
    counts_of,
    decode,
    memory_per_core,
    per_core,
    pipeline,
    predict,
    window_ns,
)
from pimsolve.stages.placement.formulation import TICKS_PER_NS, build_model, decode_values
from pimsolve.stages.placement.instance import build_instance
from pimsolve.target import CrossbarTarget, load_target
from tests.simulate.test_checks import tiny_cnn


@functools.cache
def instance(cores: int, crossbars: int, mode: str, chips: int = 1,
             communication: str = "async", link_gb_per_s: float | None = None,
             issue_ns: float | None = None):
    data = load_target("isaac").model_dump()
    data.update(name=f"tiny-{cores}x{crossbars}")
    data["chip"]["cores"] = cores
    if chips > 1:  # a slow link, so that crossing chips costs what the model can see
        data.update(chips=chips, off_chip={"bandwidth_gb_per_s": 0.005, "latency_ns": 5,
                                           "energy_pj_per_byte": 100})
    data["chip"]["interconnect"]["communication"] = communication
    if link_gb_per_s is not None:
        data["chip"]["interconnect"]["bandwidth_gb_per_s"] = link_gb_per_s
    if issue_ns is not None:
        data["core"]["mvm_issue_interval_ns"] = issue_ns
    data["core"]["crossbars"] = crossbars
    target = CrossbarTarget.model_validate(data)
    graph = load_onnx(tiny_cnn())
    return build_instance(graph, lower(graph, target), target, mode, max_replication=2)


def _spreads(total: int, cores: int, cap: int):
    """Every vector of ``cores`` non-negative ints <= cap summing to ``total``."""
    for v in itertools.product(range(min(total, cap) + 1), repeat=cores):
        if sum(v) == total:
            yield np.array(v, dtype=np.int64)


def _layer_options(inst, li):
    layer = inst.layers[li]
    for ui, u in enumerate(layer.choices):
        for r in layer.replications:
            for y in _spreads(r * u.ags, inst.cores, inst.crossbars_per_core // u.crossbars_per_ag):
                for rho in _spreads(r, inst.cores, r):
                    ell = np.minimum(y, u.ags * rho)
                    if (ell < inst.home_least(u) * rho).any():
                        continue
                    yield LayerCounts(ui, r, y, rho, ell)


def least_per_option_set(inst, value) -> dict[tuple, float]:
    """Per option set ((choice, replication) per layer) that some placement fits on the
    crossbars, the least ``value(placement)`` over its placements."""
    per_layer = [list(_layer_options(inst, li)) for li in range(len(inst.layers))]
    least: dict[tuple, float] = {}
    for combo in itertools.product(*per_layer):
        used = sum(c.y * inst.layers[i].choices[c.choice].crossbars_per_ag
                   for i, c in enumerate(combo))
        if (used > inst.crossbars_per_core).any():
            continue
        key = tuple((c.choice, c.replication) for c in combo)
        least[key] = min(least.get(key, math.inf), value(list(combo)))
    return least


def brute_force(inst, objective: str) -> float:
    """The smallest ``predict`` objective over every valid placement."""
    best = float("inf")
    per_layer = [list(_layer_options(inst, li)) for li in range(len(inst.layers))]
    for combo in itertools.product(*per_layer):
        used = sum(c.y * inst.layers[i].choices[c.choice].crossbars_per_ag
                   for i, c in enumerate(combo))
        if (used > inst.crossbars_per_core).any():
            continue
        if inst.local_memory_bytes is not None and (
                memory_per_core(inst, list(combo)) > inst.local_memory_bytes).any():
            continue
        best = min(best, predict(inst, list(combo)).objective(objective))
    return best


CASES = [(2, 2, "ht"), (2, 3, "ht"), (3, 2, "ht"), (2, 2, "ll"), (3, 2, "ll")]


@pytest.mark.parametrize(("cores", "crossbars", "mode"), CASES)
@pytest.mark.parametrize("engine", ["cpsat", "milp", "milp-highs"])
def test_exact_engines_find_the_brute_force_optimum(cores, crossbars, mode, engine):
    inst = instance(cores, crossbars, mode)
    objective = "throughput" if mode == "ht" else "latency"
    want = brute_force(inst, objective)
    pm = build_model(inst, objective)
    result, values = solve_model(pm.model, engine)
    assert result.status.value == "optimal"
    assert check_values(pm.model, values)
    # the model rounds each resource up to the tick: within one tick of the brute force
    assert want * TICKS_PER_NS <= result.objective <= want * TICKS_PER_NS + 1
    counts = decode_values(pm, values)
    assert predict(inst, counts).objective(objective) == pytest.approx(want, abs=0.01)


def test_the_chain_under_the_global_memory_binds_and_the_engines_see_it(monkeypatch):
    """HT: an AG chain waits for a share beta of the global memory's busy time (``chain``:
    t^ag m + beta G, one chip: G its global memory), and the memory for a share gamma of the
    longest chain (``gm``: G + gamma t^ag m). On 2 cores of 2 crossbars each sets the
    optimum, which rises with beta and with gamma, and CP-SAT finds the brute force's at
    each."""
    from pimsolve.stages.placement import evaluate, formulation

    inst = instance(2, 2, "ht")
    seen = {}
    for beta, gamma in ((0.0, 0.0), (0.3, 0.0), (3.0, 0.0), (0.0, 2.0)):
        for module in (evaluate, formulation):
            monkeypatch.setattr(module, "CHAIN_GM_SHARE", beta)
            monkeypatch.setattr(module, "CHAIN_TAIL_SHARE", gamma)
        want = brute_force(inst, "throughput")
        pm = build_model(inst, "throughput")
        result, values = solve_model(pm.model, "cpsat")
        # T and G are rounded up to the tick, beta G so to within beta ticks
        assert want * TICKS_PER_NS <= result.objective <= want * TICKS_PER_NS + 1 + beta
        counts = decode_values(pm, values)
        p = predict(inst, counts)
        memory = per_core(inst, counts)["gport"].sum()
        assert p.resources["chain"] == pytest.approx(p.resources["ag"] + beta * memory)
        assert p.resources["gm"] == pytest.approx(memory + gamma * p.resources["ag"])
        seen[beta, gamma] = want
    assert seen[0.0, 0.0] < seen[0.3, 0.0] < seen[3.0, 0.0]
    assert seen[0.0, 0.0] < seen[0.0, 2.0]


SYNC_HT = {"communication": "sync", "link_gb_per_s": 1.0, "issue_ns": 1600}
"""PUMA-like links and issue on 2 cores of 3 crossbars: a home that sends two of its three AGs
elsewhere evens out the cores' serial work, which ``home_least`` forbids in HT."""


@pytest.mark.parametrize("engine", ["cpsat", "milp", "milp-highs"])
def test_sync_ht_homes_keep_their_share(engine):
    """HT with sync communication: a home keeps ceil(3/4 min(A, C/X)) of its AGs (3 of conv1's
    3). Without that rule the brute force would find a faster placement, 90.88 us, that
    scatters conv1's AGs; the engines find the brute force's optimum under it, 115.2 us."""
    inst = instance(2, 3, "ht", **SYNC_HT)
    assert [inst.home_least(u) for u in inst.layers[0].choices] == [3, 3, 2]
    want = brute_force(inst, "throughput")
    with mock.patch.object(type(inst), "home_least", lambda self, u: 1):
        assert brute_force(inst, "throughput") == pytest.approx(90880.0)
    assert want == pytest.approx(115200.0)
    # the master's floor of conv1's one replica of 3 AGs: its home issues all 3 AGs' MVMs
    # for its 36 windows (119.2 us if it could keep one and send two away)
    assert inst.layers[0].choices[1].ags == 3 and inst.layers[0].windows == 36
    assert evaluate.home_floor(inst, 0, 1, 0) == pytest.approx(3 * 1600 * 36)
    pm = build_model(inst, "throughput")
    result, values = solve_model(pm.model, engine)
    assert result.status.value == "optimal"
    assert want * TICKS_PER_NS <= result.objective <= want * TICKS_PER_NS + 1
    counts = decode_values(pm, values)
    for layer, c in zip(inst.layers, counts, strict=True):
        assert (c.ell >= inst.home_least(layer.choices[c.choice]) * c.rho).all()
    assert predict(inst, counts).time_ns == pytest.approx(want, abs=0.01)


@pytest.mark.parametrize(("cores", "crossbars", "communication"),
                         [(2, 2, "sync"), (2, 3, "async"), (2, 3, "sync")])
@pytest.mark.parametrize("engine", ["cpsat", "milp", "milp-highs"])
def test_ll_link_bound_is_exact(cores, crossbars, communication, engine):
    """LL on a slow link (0.05 GB/s): a core's inbound and outbound pixels (and, sync, its
    serialized transfers) bound the latency; the model counts them as ``predict`` does."""
    inst = instance(cores, crossbars, "ll", communication=communication, link_gb_per_s=0.05)
    want = brute_force(inst, "latency")
    pm = build_model(inst, "latency")
    result, values = solve_model(pm.model, engine)
    assert result.status.value == "optimal"
    assert want * TICKS_PER_NS <= result.objective <= want * TICKS_PER_NS + 1
    assert predict(inst, decode_values(pm, values)).latency_ns == pytest.approx(want, abs=0.01)


@pytest.mark.parametrize(("chips", "crossbars", "mode"),
                         [(2, 3, "ht"), (2, 2, "ll"), (3, 2, "ll")])
@pytest.mark.parametrize("engine", ["cpsat", "milp", "milp-highs"])
def test_off_chip_link_is_exact(chips, crossbars, mode, engine):
    """Chips of one core and a slow off-chip link: the brute force, which scores the link,
    agrees; in LL the link is what bounds the optimum."""
    inst = instance(1, crossbars, mode, chips=chips)
    assert inst.offchip_bytes_per_ns == 0.005 and inst.cores == chips
    objective = "throughput" if mode == "ht" else "latency"
    want = brute_force(inst, objective)
    if mode == "ll":
        free = brute_force(dataclasses.replace(inst, offchip_bytes_per_ns=None), objective)
        assert want > free
    pm = build_model(inst, objective)
    result, values = solve_model(pm.model, engine)
    assert result.status.value == "optimal"
    assert want * TICKS_PER_NS <= result.objective <= want * TICKS_PER_NS + 1
    assert predict(inst, decode_values(pm, values)).objective(objective) == pytest.approx(
        want, abs=0.01)


def test_chip_crossings_by_hand():
    """conv1 (3 AGs, 1 replica) homed on chip 0 with one AG on chip 1; conv2 and fc on
    chip 1: 36 AG-windows cross, and all 576 bytes conv1 makes for conv2 (16 per window)."""
    inst = instance(1, 3, "ll", chips=2)
    conv1, conv2, fc = inst.layers
    three = [u.ags for u in conv1.choices].index(3)
    one = [u.ags for u in conv2.choices].index(1)
    counts = [LayerCounts(three, 1, np.array([2, 1]), np.array([1, 0]), np.array([2, 0])),
              LayerCounts(one, 1, np.array([0, 1]), np.array([0, 1]), np.array([0, 1])),
              LayerCounts(0, 1, np.array([0, 1]), np.array([0, 1]), np.array([0, 1]))]
    crossings = chip_crossings(inst, counts)
    assert crossings.ag_windows == {(0, 0): 0, (0, 1): 36, (1, 0): 0, (1, 1): 0,
                                    (2, 0): 0, (2, 1): 0}
    assert inst.edge_rates(inst.edges[0]) == (16, 16, 1)  # 576 bytes over 36 windows each
    assert inst.edge_rates(inst.edges[1]) == (4, 144, 9)  # 16 bytes: 4/9 per conv2 window
    assert crossings.edge_bytes == {0: 576, 1: 0}
    u = conv1.choices[three]
    nbytes = 36 * (u.in_bytes + u.out_bytes) + 576
    assert crossings.total_bytes(inst, counts) == nbytes
    assert predict(inst, counts).resources["offchip"] == pytest.approx(nbytes / 0.005)
    # decoding keeps to these counts: conv1's third AG is the only one off its chip
    mapping = decode(inst, counts, engine="test")
    assert mapping.layers[0].cores == ((0, 0, 1),)


def _three_chips():
    """Three chips of one core: conv1's two replicas (2 AGs) homed on chips 0 and 1, conv2's
    two (1 AG) on chips 1 and 2, fc on chip 2; and the index of conv2's 1-AG unfolding."""
    inst = instance(1, 3, "ll", chips=3)
    conv1, conv2, _ = inst.layers
    two = [u.ags for u in conv1.choices].index(2)
    one = [u.ags for u in conv2.choices].index(1)
    counts = [LayerCounts(two, 2, np.array([2, 2, 0]), np.array([1, 1, 0]),
                          np.array([2, 2, 0])),
              LayerCounts(one, 2, np.array([0, 1, 1]), np.array([0, 1, 1]),
                          np.array([0, 1, 1])),
              LayerCounts(0, 1, np.array([0, 0, 1]), np.array([0, 0, 1]), np.array([0, 0, 1]))]
    return inst, counts, one


def test_edge_crossings_follow_the_window_ranges():
    """Three chips: conv1's two replicas on chips 0 and 1 make windows [0, 18) and [18, 36),
    conv2's on chips 1 and 2 take [0, 18) and [18, 36); chip 1 makes the second half and
    takes the first, so all 576 bytes cross (moving shares alone would count 288), and each
    of conv2's replicas reads 4 of the 6 input rows (fan-out 4/3 over its two home cores):
    768 bytes."""
    inst, counts, one = _three_chips()
    crossings = chip_crossings(inst, counts)
    assert inst.fanout(1, 2) == Fraction(4, 3)
    assert crossings.edge_bytes[0] == 768
    # conv2's second replica (chip 2) feeds fc on chip 2: half its 16 bytes stay
    assert crossings.edge_bytes[1] == 8
    # the same placement with conv2's replicas swapped to chips 0 and 1 shares everything
    counts[1] = LayerCounts(one, 2, np.array([1, 1, 0]), np.array([1, 1, 0]),
                            np.array([1, 1, 0]))
    assert chip_crossings(inst, counts).edge_bytes[0] == 0
    # both of conv2's replicas homed on chip 1's core: codegen sends that core each pixel
    # once (fan-out 1), and chip 1 makes half of them: 288 bytes
    counts[1] = LayerCounts(one, 2, np.array([0, 2, 0]), np.array([0, 2, 0]),
                            np.array([0, 2, 0]))
    assert inst.fanout(1, 1) == 1
    assert chip_crossings(inst, counts).edge_bytes[0] == 288


def test_layer_sending_over_the_off_chip_link_takes_at_least_its_bytes_time():
    """LL: conv1 sends the 768 crossing bytes above over the one 0.005 B/ns link all chips
    share: it cannot finish before 153.6 us after its first input (time 0), however fast
    its windows run (10 ns each here)."""
    inst, counts, _ = _three_chips()
    off = evaluate.offchip_floors(inst, counts)
    assert off[0] == pytest.approx(768 / 0.005) and off[1] == pytest.approx(8 / 0.005)
    _, finish = pipeline(inst, [c.replication for c in counts], lambda i, size: 10.0, off)
    assert finish[0] == pytest.approx(768 / 0.005)
    _, free = pipeline(inst, [c.replication for c in counts], lambda i, size: 10.0)
    assert free[0] == 180.0  # 18 windows in each of its two replicas
    alone = dataclasses.replace(inst, offchip_bytes_per_ns=None)
    assert evaluate.offchip_floors(alone, counts) == [0.0] * 3


def test_prediction_gives_each_layers_finish_in_ll():
    """LL: the prediction keeps every layer's finish F_l by name (the latency is the largest);
    conv1's is its off-chip floor above, 768 B at 0.005 B/ns after its first input. HT has
    none (every layer runs throughout the cycle)."""
    inst, counts, _ = _three_chips()
    p = predict(inst, counts)
    assert list(p.layer_finish_ns) == [layer.name for layer in inst.layers]
    assert p.layer_finish_ns[inst.layers[0].name] == pytest.approx(768 / 0.005)
    assert max(p.layer_finish_ns.values()) == p.resources["path"]
    ht = dataclasses.replace(inst, mode="ht")
    assert predict(ht, counts).layer_finish_ns == {}


@pytest.mark.parametrize("objective", ["energy"])
def test_cpsat_and_milp_agree_on_energy(objective):
    inst = instance(2, 3, "ht")
    values = {}
    for engine in ("cpsat", "milp"):
        pm = build_model(inst, objective)
        result, vals = solve_model(pm.model, engine)
        assert result.status.value == "optimal"
        values[engine] = result.objective
    assert values["cpsat"] == values["milp"]


@pytest.mark.parametrize(("objective", "chips", "mode"),
                         [("energy", 1, "ht"), ("edp", 1, "ht"), ("energy", 2, "ll"),
                          ("edp", 2, "ll")])
def test_energy_and_edp_optima_match_brute_force(objective, chips, mode):
    """Energy enters the model in nJ rounded up per term, so within 0.1% of the brute force;
    on two chips a byte over the off-chip link costs its energy."""
    inst = instance(2, 2, "ht") if chips == 1 else instance(1, 2, mode, chips=chips)
    want = brute_force(inst, objective)
    pm = build_model(inst, objective)
    result, values = solve_model(pm.model, "cpsat")
    assert result.status.value == "optimal"
    got = predict(inst, decode_values(pm, values)).objective(objective)
    assert got == pytest.approx(want, rel=1e-3)


def test_decoded_mapping_has_the_counts_the_model_chose():
    inst = instance(3, 2, "ht")
    pm = build_model(inst, "throughput")
    _, values = solve_model(pm.model, "cpsat")
    counts = decode_values(pm, values)
    mapping = decode(inst, counts, engine="cpsat")
    again = counts_of(inst, mapping)
    placed = {p.layer: p for p in mapping.layers}
    for layer, a, b in zip(inst.layers, counts, again, strict=True):
        assert (a.choice, a.replication) == (b.choice, b.replication)
        assert (a.y == b.y).all() and (a.rho == b.rho).all() and (a.ell == b.ell).all()
        assert all(len(replica) == layer.choices[b.choice].ags
                   for replica in placed[layer.name].cores)


def test_replication_is_exact_not_approximated():
    """m_l takes exactly ceil(W_l / r) for the chosen r (one boolean per admissible r)."""
    inst = instance(2, 3, "ht")
    pm = build_model(inst, "throughput")
    _, values = solve_model(pm.model, "cpsat")
    for li, layer in enumerate(inst.layers):
        m = next(i for i, n in enumerate(pm.model.names) if n == f"m[{layer.name}]")
        (_, _, ri), = [k for k, v in pm.z.items() if k[0] == li and values[v.index]]
        assert values[m] == -(-layer.windows // layer.replications[ri])


def test_the_window_pipeline_by_hand():
    """conv1 -> conv2 (3x3, pad 1, 6x6 windows), 10 ns per window. One replica each: conv2's
    window a reads up to conv1's pixel one row and one column on (window a + 7, done at
    (a + 8) x 10), so it is done at (a + 9) x 10 and conv2 ends 80 ns after conv1 (440).
    Two replicas each: conv2's second replica starts at window 18 (row 3), which reads the row
    above, made by conv1's first replica (window 13 at 140 ns, while conv1's second replica
    made its own rows by 80 ns); paced by that row up to 200 ns, it then runs its last 12
    windows: 320 ns."""
    inst = instance(1, 3, "ll", chips=3)
    edge = inst.edges[0]
    assert (edge.producer, edge.consumer) == (0, 1) and edge.reads.shape == (36, 9)
    assert sorted(edge.reads[0][edge.reads[0] >= 0]) == [0, 1, 6, 7]  # the pad is not read
    assert inst.edges[1].reads is None  # fc reads every window of conv2
    done, finish = pipeline(inst, (1, 1, 1), lambda i, size: 10.0)
    assert finish[0] == 360.0 and list(done[1][:3]) == [90.0, 100.0, 110.0]
    assert done[1][28] == 370.0 and finish[1] == 440.0
    assert finish[2] == 450.0  # fc: one window once conv2's last is done
    done, finish = pipeline(inst, (2, 2, 1), lambda i, size: 10.0)
    assert done[0][13] == 140.0 and done[0][25] == 80.0
    assert list(done[1][18:24]) == [150.0, 160.0, 170.0, 180.0, 190.0, 200.0]
    assert finish[1] == 320.0


@pytest.mark.parametrize("engine", ["cpsat", "milp", "milp-highs"])
def test_replicas_on_one_core_share_its_issue_slots(engine, monkeypatch):
    """LL with PUMA's issue interval (one MVM at a time per core, as long as the MVM): a
    layer's windows take at least t^is P^y on each core, so two replicas on one core take
    twice as long. Brute force and every engine agree on the optimum, which the floor
    raises (59.2 -> 78.4 us): without it two replicas sharing a core look as fast as two
    apart."""
    inst = instance(3, 3, "ll", issue_ns=1600.0)
    want = brute_force(inst, "latency")
    pm = build_model(inst, "latency")
    result, values = solve_model(pm.model, engine)
    assert result.status.value == "optimal"
    assert check_values(pm.model, values)
    assert want * TICKS_PER_NS <= result.objective <= want * TICKS_PER_NS + 1
    assert predict(inst, decode_values(pm, values)).objective("latency") == pytest.approx(
        want, abs=0.01)
    monkeypatch.setattr(evaluate, "core_floors",
                        lambda inst, counts, *ticks: [0.0] * len(counts))
    assert brute_force(inst, "latency") < want


@pytest.mark.parametrize("link", [None, 0.05], ids=["isaac", "slow"])
def test_floor_span_is_below_every_placements_span(link):
    """LL on one chip with async links (``inputs_ahead``): the homes' input pixels leave the
    window period (``core_floors``) for the span (``span_floors``), and an option's
    ``floor_span`` is at most the span of every placement of it; on the slow link the span
    outlasts some placement's windows (the case tests something)."""
    inst = instance(2, 3, "ll", link_gb_per_s=link)
    assert inst.inputs_ahead
    others = [next(_layer_options(inst, li)) for li in range(len(inst.layers))]
    longer = 0
    for li, layer in enumerate(inst.layers):
        for c in _layer_options(inst, li):
            counts = [*others[:li], c, *others[li + 1:]]
            span = evaluate.span_floors(inst, counts)[li]
            ri = layer.replications.index(c.replication)
            assert evaluate.floor_span(inst, li, c.choice, ri) <= span + 1e-9
            inbound = evaluate.core_inbound(inst, li, c)
            assert span == pytest.approx(inbound.max(), abs=0.01)  # up to the tick
            assert (evaluate.core_inbound(inst, li, c, inputs=False) < inbound).any()
            longer += span > evaluate.whole_ns(inst, counts)[li]
    assert longer or link is None


@pytest.mark.parametrize("kwargs", [{}, {"link_gb_per_s": 0.05},
                                    {"communication": "sync", "link_gb_per_s": 0.2,
                                     "issue_ns": 1600}], ids=["isaac", "slow", "sync"])
def test_home_floor_is_below_every_placement(kwargs):
    """The master's floor of an option (no placement known) is at most the floor of every
    placement of it, in ns and in the model's ticks."""
    inst = instance(2, 3, "ll", **kwargs)
    ticks = formulation._floor_ticks(inst)
    others = [next(_layer_options(inst, li)) for li in range(len(inst.layers))]
    binding = 0
    for li, layer in enumerate(inst.layers):
        for c in _layer_options(inst, li):
            counts = [*others[:li], c, *others[li + 1:]]
            ri = layer.replications.index(c.replication)
            for scale in ((), ticks):
                floor = evaluate.home_floor(inst, li, c.choice, ri, *scale[:2])
                assert floor <= evaluate.core_floors(inst, counts, *scale[:2])[li]
            binding += evaluate.home_floor(inst, li, c.choice, ri) > window_ns(
                inst, li, c.choice) * layer.windows_per_replica(c.replication)
    assert binding or not inst.sync, "the floor never exceeds tau: the case tests nothing"


@pytest.mark.parametrize("kwargs", [{}, {"link_gb_per_s": 0.05},
                                    {"communication": "sync", "link_gb_per_s": 0.2,
                                     "issue_ns": 1600}], ids=["isaac", "slow", "sync"])
@pytest.mark.parametrize("cores", [2, 3])
def test_home_floor_is_the_least_floor_of_the_layer_alone(kwargs, cores):
    """With as many cores as replicas or more, the floor counts how many AGs a core with h
    homes can hold within a time (``_counted_floor``): on these instances it is the least
    busiest-core time of the layer over every placement of it (brute force), and with sync
    links above the sums alone for some option (the case tests something)."""
    inst = instance(cores, 3, "ll", **kwargs)
    others = [next(_layer_options(inst, li)) for li in range(len(inst.layers))]
    above = 0
    for li, layer in enumerate(inst.layers):
        least: dict[tuple[int, int], float] = {}
        for c in _layer_options(inst, li):  # core_floors[li] reads layer li's counts only
            key = (c.choice, layer.replications.index(c.replication))
            floor = evaluate.core_floors(inst, [*others[:li], c, *others[li + 1:]])[li]
            least[key] = min(least.get(key, math.inf), floor)
        for (ui, ri), want in least.items():
            assert evaluate.home_floor(inst, li, ui, ri) == pytest.approx(want, rel=1e-5)
            with mock.patch.object(evaluate, "_counted_floor", lambda *args: args[4]):
                above += evaluate.home_floor(inst, li, ui, ri) < want * (1 - 1e-6)
    assert above or not inst.sync, "the sums alone were exact: the case tests nothing"


def _alone_busiest(inst, li: int, c: LayerCounts) -> float:
    """HT: the busiest per-core resource of layer ``li``'s placement ``c`` alone (no other
    layer, no vector layers)."""
    alone = dataclasses.replace(inst, layers=(inst.layers[li],), edges=(),
                                vector_core_ns=dict.fromkeys(inst.vector_core_ns, 0.0))
    return max(float(v.max()) for v in evaluate.per_core(alone, [c]).values())


@pytest.mark.parametrize("kwargs", [{}, {"link_gb_per_s": 0.05},
                                    {"communication": "sync", "link_gb_per_s": 0.2,
                                     "issue_ns": 1600}], ids=["isaac", "slow", "sync"])
@pytest.mark.parametrize("cores", [2, 3])
def test_ht_home_floor_is_the_least_busiest_core_of_the_layer_alone(kwargs, cores):
    """HT: a core's time sums the layers it holds, so the busiest core of one layer's
    placement alone bounds the cycle. The floor (the home's AGs, slices and partial sums on
    the link; its loads go through the global memory port) is the least of that over every
    placement of the layer (brute force) on these instances; the master's, without the count
    of AGs a core holds, is no more, and on a sync target above the master's issue floors for
    some option (the case tests something)."""
    inst = instance(cores, 3, "ht", **kwargs)
    above = 0
    for li, layer in enumerate(inst.layers):
        least: dict[tuple[int, int], float] = {}
        for c in _layer_options(inst, li):
            key = (c.choice, layer.replications.index(c.replication))
            least[key] = min(least.get(key, math.inf), _alone_busiest(inst, li, c))
        for (ui, ri), want in least.items():
            floor = evaluate.home_floor(inst, li, ui, ri)
            assert floor == pytest.approx(want, rel=1e-5)
            # the master's, without the count, is no more
            assert evaluate.home_floor(inst, li, ui, ri, counted=False) <= floor * (1 + 1e-9)
            u, r = layer.choices[ui], layer.replications[ri]
            m = layer.windows_per_replica(r)
            crowded = u.issue_ns * m * -(-u.ags * r // inst.cores)
            above += evaluate.home_floor(inst, li, ui, ri, counted=False) > max(
                crowded, u.ag_ns * m) * (1 + 1e-6)
    assert above or not inst.sync, "the floor never passed the issue floors: tests nothing"


def test_issue_floor_by_hand():
    """conv1 in two replicas of 2 AGs: both on core 0, it issues 4 AG-windows per window
    step, m = 18 steps: 4 x 18 x 1.6 us = 115.2 us; one replica per core: 57.6 us."""
    inst = instance(3, 4, "ll", issue_ns=1600.0)
    conv1 = inst.layers[0]
    two = [u.ags for u in conv1.choices].index(2)
    m = conv1.windows_per_replica(2)
    rest = [LayerCounts(0, 1, np.array([0, 0, u.ags]), np.array([0, 0, 1]),
                        np.array([0, 0, u.ags]))
            for u in (layer.choices[0] for layer in inst.layers[1:])]
    together = LayerCounts(two, 2, np.array([4, 0, 0]), np.array([2, 0, 0]), np.array([4, 0, 0]))
    apart = LayerCounts(two, 2, np.array([2, 2, 0]), np.array([1, 1, 0]), np.array([2, 2, 0]))
    assert m == 18
    assert evaluate.core_floors(inst, [together, *rest])[0] == 4 * 18 * 1600.0
    assert evaluate.core_floors(inst, [apart, *rest])[0] == 2 * 18 * 1600.0


@pytest.mark.parametrize("link_gb_per_s", [None, 0.05])
def test_homes_per_core_holds_for_every_placement_below_upper(link_gb_per_s):
    """HT: a placement whose busiest core is within ``upper`` puts at most
    ``_homes_per_core(upper)`` homes of a layer on any core. On a slow link the bound is
    the link's: h homes keep at most C / X of their h A AGs, the others' partial sums and
    input slices cross the home core's link."""
    inst = instance(2, 3, "ht", link_gb_per_s=link_gb_per_s)
    fast = instance(2, 3, "ht", link_gb_per_s=1e6)
    empty = [evaluate.LayerCounts(0, 1, *(np.zeros(inst.cores, dtype=np.int64),) * 3)
             for _ in inst.layers]
    checked = tighter = 0
    for li, layer in enumerate(inst.layers):
        for c in _layer_options(inst, li):
            counts = [*empty[:li], c, *empty[li + 1:]]
            busy = max(v.max() for v in evaluate.per_core(inst, counts).values())
            upper = math.ceil(busy * TICKS_PER_NS)
            ri = layer.replications.index(c.replication)
            most = formulation._homes_per_core(inst, li, c.choice, ri, upper)
            assert c.rho.max() <= most
            tighter += most < formulation._homes_per_core(fast, li, c.choice, ri, upper)
            checked += 1
    assert checked
    assert bool(tighter) == (link_gb_per_s is not None), "the link term never binds"


@pytest.mark.parametrize("kwargs", [{}, {"communication": "sync", "link_gb_per_s": 0.2,
                                         "issue_ns": 1600}], ids=["isaac", "sync"])
def test_floor_latency_is_below_every_placement(kwargs):
    """``floor_latency`` of an option set (the pipeline at the options' floors) is at most
    the latency of every valid placement of it; with ISAAC's fast async link the best
    placement of some option set reaches it (on the slow sync link, where transfers block
    the cores, none does: the home floor is a relaxation)."""
    inst = instance(2, 3, "ll", **kwargs)
    least = least_per_option_set(inst, lambda combo: predict(inst, combo).latency_ns)
    reached = 0
    for key, latency in least.items():
        floor = evaluate.floor_latency(inst, *zip(*key, strict=True))
        assert floor <= latency + 1e-9
        reached += floor == pytest.approx(latency)
    assert len(least) > 1
    assert bool(reached) == (not inst.sync)
