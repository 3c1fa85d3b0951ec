"""The homes' packing cut (``home_packing``): it removes only option sets no placement has,
its weights hold for every pattern a core can take, and the decomposition proves the brute
force's optimum with it."""

from __future__ import annotations

import dataclasses
import itertools
from types import SimpleNamespace

import pytest
from hypothesis import event, example, given, settings
from hypothesis import strategies as st

from pimsolve.solve.options import SolveOptions
from pimsolve.solve.result import Status
from pimsolve.stages.placement.decompose import solve_decomposed
from pimsolve.stages.placement.evaluate import memory_per_core
from pimsolve.stages.placement.formulation import TICKS_PER_NS
from pimsolve.stages.placement.home_packing import home_cut
from pimsolve.stages.placement.instance import PlacementInstance
from tests.stages.placement.test_formulation import brute_force, instance, least_per_option_set


def test_the_cut_removes_only_sets_no_placement_has():
    """Tiny CNN on 2 cores of 4 crossbars, for several local memories: every option set the
    cut comes from has no placement (brute force), every set that has one satisfies every
    cut, and the cuts remove most of the sets that have none."""
    free = dataclasses.replace(instance(2, 4, "ht"), local_memory_bytes=None)
    least = least_per_option_set(free, lambda combo: memory_per_core(free, combo).max())
    removed = unplaceable = 0
    for memory in (1000, 1150, 1400, 1650):
        inst = dataclasses.replace(free, local_memory_bytes=memory)
        cuts = []
        for key, need in least.items():
            cut = home_cut(inst, [u for u, _ in key], [r for _, r in key])
            unplaceable += need > memory
            if cut is not None:
                assert need > memory, key
                assert cut.cores > inst.cores
                cuts.append(cut)
        removed += len(cuts)
        for key, need in least.items():
            if need <= memory:
                for cut in cuts:
                    assert sum(cut.weights.get((li, u), 0.0) * r
                               for li, (u, r) in enumerate(key)) <= inst.cores + 1e-9
    assert removed >= unplaceable / 2 > 0


def _fake(sizes, bars, most_r, memory, crossbars, cores):
    """An instance with only what ``home_cut`` reads: one layer per home type, one
    unfolding, replications 1..most_r."""
    layers = [SimpleNamespace(choices=[SimpleNamespace(ags=1, crossbars_per_ag=b)],
                              replications=list(range(1, most_r + 1))) for b in bars]
    fake = SimpleNamespace(local_memory_bytes=memory, crossbars_per_core=crossbars,
                           cores=cores, computing_mode="XM", layers=layers, sync=False,
                           mode="ht", replica_bytes=lambda li, ui: sizes[li])
    fake.home_least = lambda u: PlacementInstance.home_least(fake, u)
    return fake


def _patterns(sizes, bars, memory, crossbars, most_r):
    """Every multiset of home types one core holds (counts per type)."""
    ranges = [range(min(most_r, memory // s, crossbars // b) + 1)
              for s, b in zip(sizes, bars, strict=True)]
    for counts in itertools.product(*ranges):
        if (sum(n * s for n, s in zip(counts, sizes, strict=True)) <= memory
                and sum(n * b for n, b in zip(counts, bars, strict=True)) <= crossbars):
            yield counts


def _packs(homes, memory, crossbars, cores):
    """Whether the homes, (bytes, crossbars) each, fit the cores (brute force)."""
    for assign in itertools.product(range(cores), repeat=len(homes)):
        used = [[0, 0] for _ in range(cores)]
        for (s, b), k in zip(homes, assign, strict=True):
            used[k][0] += s
            used[k][1] += b
        if all(m <= memory and x <= crossbars for m, x in used):
            return True
    return False


@settings(max_examples=40, deadline=None)
@example([(60, 1), (30, 1)], 2, [3, 0]).via("three homes over half a core, two cores")
@given(st.lists(st.tuples(st.integers(20, 70), st.integers(1, 3)), min_size=2, max_size=3),
       st.integers(2, 3), st.lists(st.integers(0, 3), min_size=3, max_size=3))
def test_weights_hold_for_every_pattern_and_cut_only_what_does_not_pack(types, cores, reps):
    """Random home types (bytes of 100, crossbars of 4) and replications: the lifted weights
    sum to at most 1 over every pattern a core holds, and a cut means the homes do not fit
    (brute force over the homes' cores)."""
    sizes, bars = [s for s, _ in types], [b for _, b in types]
    reps = reps[:len(types)]
    inst = _fake(sizes, bars, 3, 100, 4, cores)
    cut = home_cut(inst, [0] * len(types), reps)
    homes = [(s, b) for s, b, r in zip(sizes, bars, reps, strict=True) for _ in range(r)]
    if cut is None:
        return
    event("cut")
    assert not _packs(homes, 100, 4, cores)
    for counts in _patterns(sizes, bars, 100, 4, 3):
        assert sum(cut.weights.get((li, 0), 0.0) * n for li, n in enumerate(counts)) <= 1 + 1e-9


def test_homes_over_half_a_core_each_need_a_core_each():
    """Three homes of 60 bytes in cores of 100 need three cores: cut on two, not on three."""
    assert home_cut(_fake([60], [1], 3, 100, 4, 2), [0], [3]).cores == pytest.approx(3)
    assert home_cut(_fake([60], [1], 3, 100, 4, 3), [0], [3]) is None


def test_a_fit_that_rounding_may_hide_is_checked_on_a_finer_axis():
    """Three homes of 334 bytes in one core of 1000: on 256 units of 4 bytes each rounds
    down to 83 units and the three fit (249 of 250); near the core's size, the LP runs again
    on bytes, where they do not (1.5 cores). In 1002 bytes they fit on both axes."""
    assert home_cut(_fake([334], [1], 3, 1000, 4, 1), [0], [3]).cores == pytest.approx(1.5)
    assert home_cut(_fake([334], [1], 3, 1002, 4, 1), [0], [3]) is None


def test_core_mode_homes_hold_all_their_crossbars():
    """In core mode a home holds its whole replica: three homes of 2 AGs x 1 crossbar need 6
    crossbars, 1.5 cores of 4, where in crossbar mode (one AG each at home) one core holds
    them."""
    cm = _fake([10], [1], 3, 100, 4, 1)
    cm.layers[0].choices[0].ags = 2
    assert home_cut(cm, [0], [3]) is None
    cm.computing_mode = "CM"
    assert home_cut(cm, [0], [3]).cores == pytest.approx(1.5)
    cm.cores = 2
    assert home_cut(cm, [0], [3]) is None


@pytest.mark.parametrize("engine", ["cpsat", "milp-highs"])
def test_decomposition_learns_the_cut_and_proves_the_optimum(engine, monkeypatch):
    """With 1000 bytes a core, the master's first option set has homes no two cores hold:
    the decomposition adds a home cut and still proves the brute force's optimum. (CP-SAT's
    master with presolve returns that set first; without, the default, a tied set that
    places.)"""
    from pimsolve.stages.placement import decompose

    monkeypatch.setattr(decompose, "MASTER_PARAMS",
                        decompose.MASTER_PARAMS.replace(" cp_model_presolve:false", ""))
    inst = dataclasses.replace(instance(2, 4, "ht"), local_memory_bytes=1000)
    want = brute_force(inst, "throughput")
    result, counts = solve_decomposed(inst, "throughput", engine, SolveOptions(relative_gap=0))
    assert result.status == Status.OPTIMAL
    assert result.stats["home_cuts"] == 1
    assert want * TICKS_PER_NS <= result.objective <= want * TICKS_PER_NS + 1
