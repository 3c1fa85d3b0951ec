"""The least floor (``diagram.py``): unmerged, the diagram is the brute-force least
``floor_latency`` over every option set that fits (the master's crossbar and memory cuts);
merged, it stays below it;
the restricted diagram's option set fits and has the floor it reports; the decomposition's
bound keeps it and still holds every placement."""

from __future__ import annotations

import functools
import itertools
import math
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import helper

from pimsolve.api import inspect_model
from pimsolve.errors import InfeasibleError
from pimsolve.frontend.load import load_onnx
from pimsolve.lowering import lower
from pimsolve.solve.clock import WORK_S, Clock
from pimsolve.solve.options import SolveOptions
from pimsolve.stages.placement import decompose, diagram
from pimsolve.stages.placement.baselines import BASELINES, check_counts
from pimsolve.stages.placement.diagram import (
    KEYS,
    diagram_bound,
    floor_bound,
    floor_options,
    meet_bound,
    pruned_bound,
)
from pimsolve.stages.placement.evaluate import (
    floor_latency,
    predict,
    replica_bounds,
    replica_done,
)
from pimsolve.stages.placement.formulation import objective_scale
from pimsolve.stages.placement.instance import build_instance
from tests.simulate.test_functional import _model
from tests.stages.placement.test_baselines import small_target
from tests.stages.placement.test_formulation import instance


def skip_block():
    """conv1 -> conv2, their sum -> conv3 (all 3x3, pad 1): conv3 reads both, conv1 over a
    skip edge, so the diagram keeps conv1's window times past conv2."""
    return _model([
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1],
                         kernel_shape=[3, 3]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], name="conv2", pads=[1, 1, 1, 1],
                         kernel_shape=[3, 3]),
        helper.make_node("Add", ["c2", "r1"], ["s"], name="add"),
        helper.make_node("Conv", ["s", "w3", "b3"], ["y"], name="conv3", pads=[1, 1, 1, 1],
                         kernel_shape=[3, 3])],
        {"x": [1, 16, 6, 6]}, ("y", [1, 16, 6, 6]),
        {"w1": [16, 16, 3, 3], "b1": [16], "w2": [16, 16, 3, 3], "b2": [16],
         "w3": [16, 16, 3, 3], "b3": [16]})


@functools.cache
def case(name: str):
    """LL instances small enough to enumerate every option set."""
    if name == "skip":  # a DAG: 9 options per layer, 729 option sets, 12 x 8 crossbars
        graph, target = load_onnx(skip_block()), small_target(12, 8)
        return build_instance(graph, lower(graph, target), target, "ll", max_replication=3)
    if name == "memory":  # the same on 2 cores of 3 KiB: local memory cuts option sets
        graph, target = load_onnx(skip_block()), small_target(2, 40)
        memory = target.core.local_memory.model_copy(update={"size_kib": 3})
        target = target.model_copy(update={"core": target.core.model_copy(
            update={"local_memory": memory})})
        return build_instance(graph, lower(graph, target), target, "ll", max_replication=3)
    if name == "vgg8":  # a chain of 8 layers, the codegen's default unfolding, r <= 3
        ins = inspect_model("vgg8-28", target=small_target(12, 64))
        return build_instance(ins.graph, ins.workload, ins.target, "ll", max_replication=3,
                              unfoldings="default")
    if name == "sync":
        return instance(2, 3, "ll", communication="sync", link_gb_per_s=0.2, issue_ns=1600)
    return instance(3, 4, "ll", chips=2)


CASES = ("skip", "memory", "vgg8", "sync", "chips")


def _crossbars(inst, picks) -> int:
    return sum(inst.layers[li].replications[ri] * inst.layers[li].choices[ui].ags
               * inst.layers[li].choices[ui].crossbars_per_ag for li, (ui, ri) in enumerate(picks))


def _fits(inst, picks, share: float = 1.0) -> bool:
    """The master's crossbar and local-memory cuts (summed over the cores, and on the core
    holding the most homes of a layer), which every placement meets; the summed ones
    within ``share`` of the cores."""
    if _crossbars(inst, picks) > int(share * inst.cores * inst.crossbars_per_core):
        return False
    top = inst.local_memory_bytes
    if top is None:
        return True
    total = 0
    for li, (ui, ri) in enumerate(picks):
        u, r = inst.layers[li].choices[ui], inst.layers[li].replications[ri]
        home = inst.replica_bytes(li, ui)
        if home * -(-r // inst.cores) > top:
            return False
        forced = max(0, u.ags - inst.crossbars_per_core // u.crossbars_per_ag)
        total += r * (home + forced * u.remote_bytes)
    return total <= int(share * inst.cores * top)


def _floor(inst, picks) -> float:
    return floor_latency(inst, [ui for ui, _ in picks],
                         [inst.layers[li].replications[ri] for li, (_, ri) in enumerate(picks)])


@functools.cache
def least_floor(name: str) -> float:
    """Brute force: the least floor over every option set that fits (``_fits``)."""
    inst = case(name)
    per_layer = [[(ui, ri) for ui in range(len(layer.choices))
                  for ri in range(len(layer.replications))] for layer in inst.layers]
    return min(_floor(inst, picks) for picks in itertools.product(*per_layer)
               if _fits(inst, picks))


def _baseline_latencies(inst) -> list[float]:
    """``predict``'s latency (ns) of every baseline that places the instance."""
    out = []
    for baseline in BASELINES.values():
        try:
            out.append(predict(inst, baseline(inst, "latency")).latency_ns)
        except InfeasibleError:
            continue
    return out


@pytest.mark.parametrize("name", CASES)
def test_unmerged_diagram_is_the_least_floor(name):
    inst = case(name)
    least = least_floor(name)
    assert floor_bound(inst, 10**9) == pytest.approx(least, abs=1e-6)
    value, picks = floor_options(inst, 10**9)
    assert value == pytest.approx(least, abs=1e-6)
    assert _floor(inst, picks) == pytest.approx(value, abs=1e-6)
    assert _fits(inst, picks)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(CASES), cells=st.integers(1, 5000),
       upper=st.sampled_from([math.inf, 0.9, 1.0, 1.1]), by=st.sampled_from(KEYS))
def test_merged_diagram_stays_below_the_least_floor(name, cells, upper, by):
    """Merging keeps the least of each value, so the bound stays below the least floor
    whatever orders the groups, and below ``upper`` (ns, here a share of the least floor)
    when it is given; the restricted diagram's option set fits and has the floor it
    reports."""
    inst = case(name)
    least = least_floor(name)
    cap = upper * least if upper != math.inf else math.inf
    with mock.patch.object(diagram, "MIN_NODES", 1):  # down to one node a layer
        bound = floor_bound(inst, cells, upper=cap, by=by)
        value, picks = floor_options(inst, cells)
    assert bound <= least + 1e-6 and bound <= cap
    assert value >= least - 1e-6
    assert _floor(inst, picks) == pytest.approx(value, abs=1e-6)
    assert _fits(inst, picks)


def _price(inst, least: float, crossbars: float, memory: float) -> tuple[float, float]:
    """ns a crossbar and a byte: the shares ``crossbars`` and ``memory`` of the least floor
    for the whole room of each."""
    room = diagram._room(inst)
    return (crossbars * least / int(room[0]),
            memory * least / int(room[1]) if room[1] else 0.0)


@pytest.mark.parametrize("shares", [(0.5, 0.0), (0.0, 0.5), (2.0, 2.0)])
@pytest.mark.parametrize("name", CASES)
def test_unmerged_priced_diagram_is_the_least_floor(name, shares):
    """Unmerged, a node is one prefix and its most lift is its own, so the prices come off
    again exactly: the least floor at any price."""
    inst = case(name)
    least = least_floor(name)
    price = _price(inst, least, *shares)
    assert floor_bound(inst, 10**9, price=price) == pytest.approx(least, abs=1e-6)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(CASES), cells=st.integers(1, 5000),
       upper=st.sampled_from([math.inf, 0.9, 1.1]), by=st.sampled_from(KEYS),
       crossbars=st.floats(0, 3), memory=st.floats(0, 3))
def test_priced_diagram_stays_below_the_least_floor(name, cells, upper, by, crossbars, memory):
    """Merged down to one node a layer, the priced diagram stays below the least floor (and
    below ``upper``) at every price: a merged node's times are at most each of its option
    sets' times plus that set's lift, which is at most the node's most lift and at most the
    room's price. Fails with the node's least lift taken off in place of its most."""
    inst = case(name)
    least = least_floor(name)
    cap = upper * least if upper != math.inf else math.inf
    with mock.patch.object(diagram, "MIN_NODES", 1):
        bound = floor_bound(inst, cells, upper=cap, by=by,
                            price=_price(inst, least, crossbars, memory))
    assert bound <= least + 1e-6 and bound <= cap


def test_pricing_the_room_lifts_the_merged_vgg8_chain():
    """At one node a layer the vgg8 chain's diagram gives 857.9 us against a least floor of
    1029.9; with its crossbars priced at a quarter of the least floor for the whole room,
    864.1 (merged with the cheap, the fast and costly children lose less)."""
    inst = case("vgg8")
    least = least_floor("vgg8")
    with mock.patch.object(diagram, "MIN_NODES", 1):
        plain = floor_bound(inst, 1, by="middle")
        priced = floor_bound(inst, 1, by="middle", price=_price(inst, least, 0.25, 0.0))
    assert plain + 5e3 < priced <= least + 1e-6


@pytest.mark.parametrize("budgets, starved, plain", [((1, 2), True, 1), ((1, 10**9), False, 2)])
def test_diagram_bound_prices_the_room_where_the_next_budget_keeps_too_few_nodes(
        budgets, starved, plain):
    """On the vgg8 chain at one node a layer: where the next budget would still keep one
    node on some layer (2 cells), this budget is the last, and starved: after its plain
    diagram, the diagram at it again, priced at each of ``PRICE_SHARES`` (crossbars: memory
    is unlimited here), the best bound kept; where the next budget keeps every child (10^9
    cells), no prices and both budgets' plain diagrams. Fails with the condition dropped
    (prices at 10^9 cells too)."""
    inst, prices, plains = case("vgg8"), [], []
    forward = diagram._diagram

    def spy(*args, **kw):
        found = forward(*args, **kw)
        if kw.get("price") is not None:
            prices.append((kw["price"], found.ns))
        elif not kw["restricted"] and kw.get("completion") is None and kw.get("stop") is None:
            plains.append(found.ns)  # the budgets' plain diagrams, not the meeting's
        return found

    with (mock.patch.object(diagram, "BUDGETS", budgets),
          mock.patch.object(diagram, "MIN_NODES", 1),
          mock.patch.object(diagram, "MEET_CELLS", 10**12),
          mock.patch.object(diagram, "_diagram", spy)):
        found = diagram_bound(inst, 60.0)
    assert found.starved == starved
    assert len(prices) == (len(diagram.PRICE_SHARES) if starved else 0) and len(plains) == plain
    assert all(memory == 0 and crossbars > 0 for (crossbars, memory), _ in prices)
    if starved:
        assert found.bound_ns == pytest.approx(max(*plains, *(ns for _, ns in prices)))


@pytest.mark.parametrize("name", CASES)
def test_unmerged_met_diagrams_are_the_least_floor(name):
    """Met at any cut, the unmerged forward and backward diagrams give the least floor: the
    pipeline's longest path crosses every cut, done before it and ``out`` after it."""
    inst = case(name)
    least = least_floor(name)
    for cut in range(len(inst.layers) - 1):
        assert meet_bound(inst, 10**12, cut) == pytest.approx(least, abs=1e-6), cut


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(CASES), cells=st.integers(1, 5000), cut=st.integers(0, 6),
       upper=st.sampled_from([math.inf, 0.9, 1.0, 1.1]), by=st.sampled_from(KEYS))
def test_met_diagrams_stay_below_the_least_floor(name, cells, cut, upper, by):
    """Merged on both sides down to one node a layer, at any cut, with any grouping: the
    met bound stays below the least floor, and below ``upper`` when it is given."""
    inst = case(name)
    least = least_floor(name)
    cap = upper * least if upper != math.inf else math.inf
    with mock.patch.object(diagram, "MIN_NODES", 1):
        bound = meet_bound(inst, cells, min(cut, len(inst.layers) - 2), upper=cap, by=by)
    assert bound <= least + 1e-6 and bound <= cap


@pytest.mark.parametrize("name", CASES)
def test_unmerged_pruned_diagram_is_the_least_floor(name):
    """Unmerged, pruning drops no child on the way to the least floor: with or without an
    ``upper`` above it, the pruned diagram is the least floor, and the guided restricted
    diagram's option set has it."""
    inst = case(name)
    least = least_floor(name)
    for upper in (math.inf, 1.1 * least):
        assert pruned_bound(inst, 10**9, 10**9, upper=upper) == pytest.approx(least, abs=1e-6)
    options = diagram._layer_options(inst)
    value, picks = diagram._restricted(inst, options, 10**9, None, 1.0, True, Clock(),
                                       _completions(inst, 10**9), 1.1 * least)
    assert value == pytest.approx(least, abs=1e-6)
    assert _floor(inst, picks) == pytest.approx(value, abs=1e-6) and _fits(inst, picks)


def _completions(inst, cells):
    """The backward diagram's nodes at every cut, as ``_completed`` reads them."""
    return diagram._completions(inst, diagram._layer_options(inst), cells, None, Clock())


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(CASES), cells=st.integers(1, 5000),
       back_cells=st.integers(1, 5000), upper=st.sampled_from([math.inf, 0.9, 1.0, 1.1]),
       by=st.sampled_from(KEYS))
def test_pruned_diagram_stays_below_the_least_floor(name, cells, back_cells, upper, by):
    """Merged on both sides down to one node a layer, the completion bound of a child is
    below the floor of every option set it stands for, so dropping those at or above
    ``upper`` keeps the bound below the least floor (and ``upper``); the guided restricted
    diagram's option set, if it finds one, fits and has the floor it reports (which may be
    above ``upper``: the bound that kept its prefixes is below it)."""
    inst = case(name)
    least = least_floor(name)
    cap = upper * least if upper != math.inf else math.inf
    with mock.patch.object(diagram, "MIN_NODES", 1):
        bound = pruned_bound(inst, cells, back_cells, upper=cap, by=by)
        found = diagram._restricted(inst, diagram._layer_options(inst), cells, None, 1.0,
                                    True, Clock(), _completions(inst, back_cells), cap)
    assert bound <= least + 1e-6 and bound <= cap
    if found is not None:
        value, picks = found
        assert value >= least - 1e-6
        assert _floor(inst, picks) == pytest.approx(value, abs=1e-6) and _fits(inst, picks)


def test_pruning_lifts_the_vgg8_chain_to_its_least_floor():
    """vgg8 chain, one node a layer on both sides: the forward diagram gives 857.9 us; pruned
    below 1.01 times the least floor (1029.9 us) by the backward diagram's nodes, it gives
    the least floor, and the restricted diagram guided by them finds an option set with it,
    where unguided it ends with one of 1057.1 us."""
    inst = case("vgg8")
    least = least_floor("vgg8")
    options = diagram._layer_options(inst)
    with mock.patch.object(diagram, "MIN_NODES", 1):
        assert floor_bound(inst, 1) == pytest.approx(FORWARD_NS, abs=0.01)
        assert pruned_bound(inst, 1, 1, upper=1.01 * least) == pytest.approx(least, abs=1e-6)
        guided = diagram._restricted(inst, options, 1, None, 1.0, True, Clock(),
                                     _completions(inst, 1), math.inf)
        alone = diagram._restricted(inst, options, 1, None, 1.0, True, Clock())
    assert guided[0] == pytest.approx(least, abs=1e-6)
    assert alone[0] == pytest.approx(1_057_070, abs=100)


def test_meeting_merges_less_than_the_forward_diagram():
    """vgg8 chain, one node a layer: the forward diagram merges all eight layers (857.9 us);
    met after the first layer, the backward one merges seven and the forward none: 930.7 us,
    of a least floor of 1029.9 us."""
    inst = case("vgg8")
    with mock.patch.object(diagram, "MIN_NODES", 1):
        forward = floor_bound(inst, 1, by="middle")
        met = meet_bound(inst, 1, 0)
    assert forward == pytest.approx(857_871.07, abs=0.01)
    assert met == pytest.approx(930_670, abs=100)
    assert met <= least_floor("vgg8")


def _meetings(budgets, meet_cells, fits=diagram.BACKWARD_FITS, prune=False):
    """``diagram_bound`` on the vgg8 chain at one node a layer (``MIN_NODES``; more where a
    budget holds them), pruning or not (``PRUNE``): its bound, the (cells, cuts) of each
    backward diagram it ran and how many times it met two diagrams."""
    inst = case("vgg8")
    calls, met = [], []
    backwards, meet = diagram._backwards, diagram._meet

    def spy(instance, options, cells, cuts, *rest):
        calls.append((cells, cuts))
        yield from backwards(instance, options, cells, cuts, *rest)

    def count(*args):
        met.append(1)
        return meet(*args)

    with (mock.patch.object(diagram, "BUDGETS", budgets),
          mock.patch.object(diagram, "MIN_NODES", 1),
          mock.patch.object(diagram, "MEET_CELLS", meet_cells),
          mock.patch.object(diagram, "_backwards", spy),
          mock.patch.object(diagram, "_meet", count),
          mock.patch.object(diagram, "BACKWARD_FITS", fits),
          mock.patch.object(diagram, "PRUNE", prune),
          mock.patch.object(diagram, "PRICE_SHARES", ())):  # the meetings alone
        found = diagram_bound(inst, 60.0)
    return found.bound_ns, calls, len(met)


FORWARD_NS = 857_871.07  # the vgg8 chain, one node a layer: the forward diagram
MET_AT_CONV_1_NS = 883_471.07  # met after Conv_1, the last layer of the most windows
MET_AT_CONV_0_NS = 981_869.27  # met after Conv_0, its options unmerged


def test_diagram_bound_meets_at_its_budget():
    """``diagram_bound`` meets the diagrams after the forward one at ``MEET_CELLS`` (here
    its only budget): the backward diagram to the first layer, met on its way after
    Conv_1 (883.5 us) and after Conv_0 with its options unmerged (981.9 us), where the
    forward diagram gives 857.9 us and the least floor is 1029.9 us; the best is kept."""
    bound, calls, met = _meetings((1,), 1)
    assert calls == [(1, (1, 0))] and met == 2
    with mock.patch.object(diagram, "MIN_NODES", 1):
        assert meet_bound(case("vgg8"), 1, 1) == pytest.approx(MET_AT_CONV_1_NS, abs=0.01)
    assert bound == pytest.approx(MET_AT_CONV_0_NS, abs=0.01)
    assert bound <= least_floor("vgg8")


def test_diagram_bound_meets_at_its_last_budget():
    """Where its budgets end below ``MEET_CELLS`` it meets after the last one, the
    backward diagram at ``MEET_CELLS`` (here one node a layer as well)."""
    bound, calls, _ = _meetings((1,), 2)
    assert calls == [(2, (1, 0))]
    assert bound == pytest.approx(MET_AT_CONV_0_NS, abs=0.01)


def test_diagram_bound_meets_once_and_each_forward_diagram_after():
    """One backward diagram, met with the forward diagram of its budget and again with
    every later one (at Conv_1, whose nodes the backward diagram kept)."""
    bound, calls, met = _meetings((1, 300), 1)
    assert calls == [(1, (1, 0))] and met == 3
    assert bound >= MET_AT_CONV_0_NS - 0.01


def test_diagram_bound_prunes_after_its_meeting():
    """Pruning (``PRUNE``), the one backward diagram passes every cut to the first layer and
    meets as before; its nodes there then prune the forward diagram of the same budget,
    which reaches the least floor (1029.9 us) where the meetings gave 981.9 us."""
    bound, calls, met = _meetings((1,), 1, prune=True)
    assert calls == [(1, tuple(range(len(case("vgg8").layers) - 1)))] and met == 2
    assert bound == pytest.approx(least_floor("vgg8"), abs=1e-6)


def test_diagram_bound_does_not_meet_without_the_time():
    """Where the time left does not hold what the backward diagram would charge, the
    forward bound alone."""
    bound, calls, met = _meetings((1,), 1, fits=1e9)
    assert calls == [] and met == 0
    assert bound == pytest.approx(FORWARD_NS, abs=0.01)


def _steps(budgets, seconds):
    """``diagram_bound`` on the vgg8 chain (``_meetings``' setting, ``MEET_CELLS`` above
    every budget) on a work clock of ``seconds``: the forward budgets it finished and the
    backward diagrams it started, in order."""
    inst, steps = case("vgg8"), []
    forward = diagram._diagram

    def spy_forward(instance, options, nodes, *rest, **kw):
        found = forward(instance, options, nodes, *rest, **kw)
        if not kw["restricted"] and found is not None:
            steps.append("forward")
        return found

    def spy_backward(*args):  # recorded, not run: it takes no time of the clock
        steps.append("backward")
        yield from ()

    with (mock.patch.object(diagram, "BUDGETS", budgets),
          mock.patch.object(diagram, "MIN_NODES", 1),
          mock.patch.object(diagram, "MEET_CELLS", 10**9),
          mock.patch.object(diagram, "BACKWARD_FITS", 1e-12),
          mock.patch.object(diagram, "_diagram", spy_forward),
          mock.patch.object(diagram, "_backwards", spy_backward),
          mock.patch.object(diagram, "PRICE_SHARES", ())):
        diagram_bound(inst, seconds, clock=Clock(limit=math.inf, work=True))
    return steps


def test_diagram_bound_meets_before_a_budget_that_may_not_finish():
    """After a budget that took ``c`` (its restricted and forward diagrams), with between
    2c and 4c left (``NEXT_COST``), the next budget may not finish: the backward diagram
    meets first, then the next budget runs; with more than 4c left the next budget runs
    first and the meeting follows the last one; with less than 2c the next is not tried."""
    clock = Clock(limit=math.inf, work=True)
    with (mock.patch.object(diagram, "BUDGETS", (1,)),
          mock.patch.object(diagram, "MIN_NODES", 1),
          mock.patch.object(diagram, "BACKWARD_FITS", 1e9),  # no meeting: its cost alone
          mock.patch.object(diagram, "PRICE_SHARES", ())):
        diagram_bound(case("vgg8"), 60.0, clock=clock)
    c = clock.now()
    assert c > 0
    assert _steps((1, 300), 4 * c) == ["forward", "backward", "forward"]
    assert _steps((1, 300), 6 * c) == ["forward", "forward", "backward"]
    assert _steps((1, 300), 2.9 * c) == ["forward", "backward"]  # 1.9c left: neither


def test_the_restricted_diagram_is_charged_at_its_own_price():
    """The restricted diagram's window times cost ``restricted_cell`` each (it merges no
    nodes), not the merged diagram's ``cell``: ``floor_options`` charges only the first."""
    inst = case("vgg8")
    charged = {}
    for kind in ("restricted_cell", "cell"):
        with mock.patch.dict(WORK_S, {"restricted_cell": 0.0, "cell": 0.0} | {kind: 1.0}):
            clock = Clock(limit=math.inf, work=True)
            floor_options(inst, 64, clock=clock)
            charged[kind] = clock.now()
    assert charged["restricted_cell"] > 0 and charged["cell"] == 0


@pytest.mark.parametrize("meet_cells, below_whole", [(2000, (1000, (1, 0))), (1000, (1000, (1,)))])
def test_the_meeting_takes_the_deepest_cut_and_largest_budget_the_time_holds(meet_cells,
                                                                             below_whole):
    """``MEET_CELLS`` to the first layer, else half of it, else ``MEET_CELLS`` to the cut
    alone, by what each would charge at most (``BACKWARD_FITS`` of ``_backward_cells``).
    On the vgg8 chain at one node a layer: with 2000 cells the half budget charges less
    than the whole to the cut (18,682 cells against 25,639), so it comes next; with 1000
    cells the half holds as many nodes as the whole (18,682 cells both), so the cut does."""
    inst = case("vgg8")
    options = diagram._layer_options(inst)
    with (mock.patch.object(diagram, "MIN_NODES", 1),
          mock.patch.object(diagram, "MEET_CELLS", meet_cells)):
        def charge(budget, cut):
            return (diagram.BACKWARD_FITS * diagram._backward_cells(inst, options, budget, cut)
                    * WORK_S["cell"])

        whole, half, near = (charge(meet_cells, 0), charge(meet_cells // 2, 0),
                             charge(meet_cells, 1))
        assert diagram._meeting(inst, options, 1, whole) == (meet_cells, (1, 0))
        assert diagram._meeting(inst, options, 1, math.nextafter(whole, 0)) == below_whole
        least = min(half, near)
        assert diagram._meeting(inst, options, 1, math.nextafter(least, 0)) == ()


@pytest.mark.parametrize("name", CASES)
def test_backward_cells_bounds_what_the_backward_diagram_charges(name):
    """``_backward_cells`` is at least what ``_backward`` charges, at any cut and budget,
    and equal where every child fits (the unmerged skip block on 12 cores)."""
    inst = case(name)
    options = diagram._layer_options(inst)
    for cut, cells in itertools.product(range(len(inst.layers) - 1), (1, 10**3, 10**12)):
        clock = Clock.named("work", None)
        assert diagram._backward(inst, options, cells, cut, None, clock, "middle") is not None
        charged = clock.now() / WORK_S["cell"]
        estimate = diagram._backward_cells(inst, options, cells, cut)
        assert charged <= estimate * (1 + 1e-9), (cut, cells)
        if name == "skip" and cells == 10**12:
            assert charged == pytest.approx(estimate)


@pytest.mark.parametrize("name", CASES)
def test_the_backward_diagram_passes_each_cut_as_if_it_stopped_there(name):
    """One backward diagram to the first layer yields, at each cut on its way, the nodes a
    backward diagram to that cut ends with."""
    inst = case(name)
    options = diagram._layer_options(inst)
    cuts = tuple(range(len(inst.layers) - 1, -1, -1))
    for cells in (1, 10**3):
        passed = list(diagram._backwards(inst, options, cells, cuts, None, Clock(), "middle"))
        assert [c for c, _ in passed] == list(cuts)
        for cut, back in passed:
            alone = diagram._backward(inst, options, cells, cut, None, Clock(), "middle")
            assert (back.resources == alone.resources).all()
            assert back.vectors.keys() == alone.vectors.keys()
            for p, vectors in back.vectors.items():
                assert (vectors == alone.vectors[p]).all()


def test_edges_of_one_pattern_share_their_readers():
    """conv3 reads conv1 and conv2 (through their Add) with one pattern: one readers object
    for both, so the backward diagram gathers once, with the same out vectors as when
    each edge gathers its own."""
    inst = case("skip")
    into = diagram._into(inst)
    (_, first), (_, second) = into[2]
    assert first is second
    options = diagram._layer_options(inst)
    shared = diagram._backward(inst, options, 10**12, 0, None, Clock(), "middle")
    with mock.patch.object(diagram, "_shared", lambda edges: edges):
        alone = diagram._backward(inst, options, 10**12, 0, None, Clock(), "middle")
    assert shared.vectors.keys() == alone.vectors.keys()
    for p, vectors in shared.vectors.items():
        assert (vectors == alone.vectors[p]).all()


def test_the_frontier_at_a_cut_is_the_one_the_diagram_stops_at():
    """The merged nodes ``_diagram`` keeps after its ``cut`` on the way to the end are
    those it returns when it stops there."""
    inst = case("vgg8")
    options = diagram._layer_options(inst)
    nodes = diagram._nodes(inst, options, 5000)
    for cut in range(len(inst.layers) - 1):
        found = diagram._diagram(inst, options, nodes, math.inf, None, restricted=False,
                                 clock=Clock(), by="middle", cut=cut)
        stopped = diagram._diagram(inst, options, nodes, math.inf, None, restricted=False,
                                   clock=Clock(), by="middle", stop=cut)
        assert (found.front.resources == stopped.resources).all()
        assert (found.front.finish == stopped.finish).all()
        assert found.front.vectors.keys() == stopped.vectors.keys()
        for p, vectors in stopped.vectors.items():
            assert (found.front.vectors[p] == vectors).all()


@pytest.mark.parametrize("share", [0.9, 0.7])
@pytest.mark.parametrize("name", CASES)
def test_unmerged_restricted_diagram_within_a_share_is_the_least_floor_there(name, share):
    """Held to a share of the crossbars and of the local memory, the unmerged restricted
    diagram gives the least floor of the option sets within that share (brute force), or
    nothing when none is."""
    inst = case(name)
    per_layer = [[(ui, ri) for ui in range(len(layer.choices))
                  for ri in range(len(layer.replications))] for layer in inst.layers]
    within = [_floor(inst, picks) for picks in itertools.product(*per_layer)
              if _fits(inst, picks, share)]
    found = floor_options(inst, 10**9, share=share)
    if not within:
        assert found is None
        return
    value, picks = found
    assert value == pytest.approx(min(within), abs=1e-6)
    assert _fits(inst, picks, share) and _floor(inst, picks) == pytest.approx(value, abs=1e-6)


def test_least_floor_places_a_roomier_option_set_when_the_best_does_not(monkeypatch):
    """When no greedy placement fits the restricted diagram's option set (here: refused),
    the restricted diagram runs again within each of ``ROOM_SHARES`` in turn, and the
    first new set that places is the incumbent: within that share of the crossbars and of
    the local memory."""
    inst = case("memory")  # held to 0.95 of the room, its best set differs (measured)
    real, offered = decompose._placed, []

    def placed(instance, objective, picks, known, clock):
        offered.append(picks)
        return None if len(offered) == 1 else real(instance, objective, picks, known, clock)

    monkeypatch.setattr(decompose, "_placed", placed)
    monkeypatch.setattr(decompose, "_packed", lambda *args: None)  # nor the packing model
    stats: dict[str, float] = {}
    ticks, found = decompose._least_floor(inst, None, {}, stats, 5.0)
    assert found is not None and len(offered) >= 2
    assert len(set(offered)) == len(offered)  # a set already tried is not offered again
    share = stats["room_share"]
    picks = decompose.picks_of(inst, found[1])
    assert picks == offered[-1] and _fits(inst, picks, share)
    assert ticks <= found[0]


def test_least_floor_packs_the_best_set_when_no_greedy_places_it(monkeypatch):
    """The same refusal with the packing model (``packing.pack_exact``) at hand: it places
    the restricted diagram's own option set, which beats the roomier set's placement."""
    inst = case("memory")
    real, offered = decompose._placed, []

    def placed(instance, objective, picks, known, clock):
        offered.append(picks)
        return None if len(offered) == 1 else real(instance, objective, picks, known, clock)

    monkeypatch.setattr(decompose, "_placed", placed)
    stats: dict[str, float] = {}
    ticks, found = decompose._least_floor(inst, None, {}, stats, 5.0)
    assert found is not None and stats["packing_s"] > 0
    assert decompose.picks_of(inst, found[1]) == offered[0]
    assert check_counts(inst, found[1]) is None
    roomy = real(inst, "latency", offered[-1], {}, Clock())
    assert ticks <= found[0] <= roomy[0]


def test_an_unknown_grouping_is_refused():
    with pytest.raises(ValueError, match="by: one of middle, finish"):
        floor_bound(case("skip"), 4, by="start")


def test_a_passed_deadline_gives_no_bound():
    inst = case("vgg8")
    assert floor_bound(inst, 64, deadline=0.0) is None
    assert floor_options(inst, 64, deadline=0.0) is None
    found = diagram_bound(inst, 0.0)
    assert found.bound_ns == 0 and found.cells == 0 and found.picks is None


@pytest.mark.parametrize("target", ["arch-c", "isaac"])
def test_diagram_bound_meets_the_best_option_set_of_vgg8(target):
    """vgg8-28 (LL, all unfoldings): the restricted diagram finds an option set whose floor
    (163.86 us on Arch-C, 258.13 us on ISAAC, measured) no merged diagram can beat: the
    bound reaches it (the decomposition's bounds before the diagram, from the benchmark's
    gaps: 121.6 and 201.0 us)."""
    ins = inspect_model("vgg8-28", target=target)
    inst = build_instance(ins.graph, ins.workload, ins.target, "ll")
    found = diagram_bound(inst, 60.0)
    assert found.picks is not None and found.cells > 0
    assert _floor(inst, found.picks) == pytest.approx(found.picks_ns)
    assert found.bound_ns == pytest.approx(found.picks_ns)
    assert min(_baseline_latencies(inst)) >= found.bound_ns - 1e-6  # all at or above it


def test_decomposition_bound_keeps_the_least_floor():
    """The decomposition's bound (model ticks) is at least the diagram's, and still at
    most every baseline placement's latency."""
    inst = case("vgg8")
    start = BASELINES["balance"](inst, "latency")
    result, counts = decompose.solve_decomposed(inst, "latency", "cpsat",
                                                SolveOptions(time_limit_s=5.0), start=start)
    scale = objective_scale("latency")
    assert result.stats["diagram_bound"] >= math.floor(least_floor("vgg8") * scale) - 1
    assert result.bound >= result.stats["diagram_bound"]
    assert result.bound <= min(_baseline_latencies(inst)) * scale + 1
    assert predict(inst, counts).latency_ns * scale >= result.bound - 1


def test_decomposition_places_the_diagram_option_set_with_sync_communication():
    """With sync communication too, the least floor's restricted option set is placed
    (``_seed``, which tries ``even_search`` in LL) as an incumbent of the decomposition."""
    inst = case("sync")
    assert inst.sync
    known = {}
    ticks, placed = decompose._least_floor(inst, None, known, {}, 2.0)
    found = diagram_bound(inst, 2.0)
    assert ticks == math.floor(found.bound_ns * objective_scale("latency") - 1e-6)
    assert placed is not None and list(known) == [found.picks]
    value, counts = placed
    assert decompose.picks_of(inst, counts) == found.picks
    assert value >= predict(inst, counts).latency_ns * objective_scale("latency")


@settings(max_examples=60, deadline=None)
@given(windows=st.integers(1, 40), replication=st.integers(1, 12), rows=st.integers(1, 4),
       periods=st.lists(st.integers(0, 50), min_size=1, max_size=12),
       data=st.data())
def test_an_options_done_times_are_replica_done(windows, replication, rows, periods, data):
    """``_Option.done``, the diagram's three-pass step with the replicas' offsets fixed by
    the spread of the ready times, is ``evaluate.replica_done`` exactly, and ``last`` each
    row's latest done time (a replica's windows finish in order)."""
    replication = min(replication, windows)
    bounds = replica_bounds(windows, replication)
    replica = np.repeat(np.arange(replication), np.diff(bounds))
    k = np.arange(windows) - bounds[replica]
    w = np.array([periods[j % len(periods)] for j in range(replication)])[replica]
    ready = np.array(data.draw(st.lists(st.lists(st.integers(0, 10**6), min_size=windows,
                                                 max_size=windows),
                                        min_size=rows, max_size=rows)), dtype=np.int32)
    option = diagram._Option(0, 0, 0, 0, k, w, replica)
    done = option.done(ready, int(ready.max()) - int(ready.min()))
    assert np.array_equal(done, replica_done(ready.astype(np.int64), k, w, replica))
    assert np.array_equal(option.last(done), done.max(axis=1))


@settings(max_examples=60, deadline=None)
@given(data=st.data(), windows=st.integers(1, 6), groups=st.integers(1, 8),
       rank_most=st.sampled_from([0, 2, 128]), lifted=st.booleans())
def test_least_rows_is_reduceat(data, windows, groups, rank_most, lifted):
    """``_least_rows``, rank by rank or a group at a time, is ``np.minimum.reduceat`` of the
    gathered rows (each plus its lift) along the first axis."""
    sizes = data.draw(st.lists(st.integers(1, 5), min_size=groups, max_size=groups))
    starts = np.cumsum([0, *sizes[:-1]])
    a = np.array(data.draw(st.lists(st.lists(st.integers(-10**6, 10**6), min_size=windows,
                                             max_size=windows), min_size=1, max_size=9)),
                 dtype=np.int32)
    rows = np.array(data.draw(st.lists(st.integers(0, len(a) - 1), min_size=sum(sizes),
                                       max_size=sum(sizes))))
    lift = np.array(data.draw(st.lists(st.integers(0, 10**6), min_size=len(rows),
                                       max_size=len(rows)))) if lifted else None
    gathered = a[rows] if lift is None else a[rows] + lift[:, None]
    with mock.patch.object(diagram, "RANK_MOST", rank_most):
        least = diagram._least_rows(a, rows, starts, lift)
    assert np.array_equal(least, np.minimum.reduceat(gathered, starts, axis=0))


@settings(max_examples=60, deadline=None)
@given(data=st.data(), crossbars=st.integers(1, 3), options=st.integers(1, 4),
       per=st.integers(1, 4))
def test_children_of_one_option_are_grouped_together(data, crossbars, options, per):
    """``_groups`` orders children by crossbars, then by their option, then by the key: with
    as many groups as (crossbars, option) pairs, each of ``per`` children, every group is
    one pair. Fails with the option left out of the order (groups then follow the key)."""
    pairs = [(c, o) for c in range(crossbars) for o in range(options)]
    children = [pair for pair in pairs for _ in range(per)]
    order = data.draw(st.permutations(range(len(children))))
    used = np.array([[children[i][0], 0] for i in order])
    option = np.array([children[i][1] for i in order])
    key = np.array(data.draw(st.lists(st.integers(0, 100), min_size=len(children),
                                      max_size=len(children))))
    sorted_children, starts = diagram._groups(used, key, len(pairs), option)
    for start in starts:
        group = sorted_children[start:start + per]
        assert len({(used[i, 0], option[i]) for i in group}) == 1
        assert list(key[group]) == sorted(key[group])


def test_the_diagrams_group_children_by_their_option():
    """The merged and the restricted diagram hand ``_groups`` each child's option of the
    layer it extends (an index into that layer's options), one per child."""
    inst = case("skip")
    options = diagram._layer_options(inst)
    seen = []
    real = diagram._groups

    def spy(used, key, nodes, option=None):
        seen.append((len(key), option))
        return real(used, key, nodes, option)

    with mock.patch.object(diagram, "MIN_NODES", 1), mock.patch.object(diagram, "_groups", spy):
        floor_bound(inst, 200)
        floor_options(inst, 200)
    assert seen
    for children, option in seen:
        assert option is not None and len(option) == children
        assert option.min() >= 0 and option.max() < max(len(o) for o in options)
