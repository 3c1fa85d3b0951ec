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

from pimsolve.solve.clock import Clock
from pimsolve.solve.options import SolveOptions
from pimsolve.solve.result import Status
from pimsolve.stages.placement import home_packing
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


def _fake(sizes, bars, most_r, memory, crossbars, cores, ags=None, remote=None):
    """An instance with only what ``home_cut`` reads: one layer per home type, one
    unfolding of ``ags`` AGs (1 each by default) whose AGs away from home take ``remote``
    bytes (0), replications 1..most_r."""
    ags = ags or [1] * len(sizes)
    remote = remote or [0] * len(sizes)
    layers = [SimpleNamespace(choices=[SimpleNamespace(ags=a, crossbars_per_ag=b,
                                                       remote_bytes=m)],
                              replications=list(range(1, most_r + 1)))
              for b, a, m in zip(bars, ags, remote, strict=True)]
    fake = SimpleNamespace(local_memory_bytes=memory, crossbars_per_core=crossbars,
                           cores=cores, computing_mode="XM", layers=layers, sync=False,
                           mode="ht", replica_bytes=lambda li, ui: sizes[li])
    fake.home_least = lambda u: PlacementInstance.home_least(fake, u)
    return fake


def _packs(replicas, memory, crossbars, cores):
    """Whether the replicas, (home bytes, crossbars of an AG, AGs, bytes of an AG away from
    home) each, fit the cores, every home keeping one of its AGs at least (brute force over
    each replica's home core and its AGs' counts per core)."""
    def places(size, bars, ags, away):
        for home in range(cores):
            for split in itertools.product(range(ags + 1), repeat=cores):
                if sum(split) == ags and split[home] >= 1:
                    yield [(size * (k == home) + away * n * (k != home), bars * n)
                           for k, n in enumerate(split)]

    for choice in itertools.product(*(list(places(*r)) for r in replicas)):
        if all(sum(c[k][0] for c in choice) <= memory
               and sum(c[k][1] for c in choice) <= crossbars for k in range(cores)):
            return True
    return False


@settings(max_examples=40, deadline=None)
@example([(60, 1, 1, 0), (30, 1, 1, 0)], 2, [3, 0]).via("three homes over half a core, two cores")
@example([(60, 1, 3, 30), (90, 1, 1, 0)], 2, [1, 1]).via("AGs away from home fill the memory")
@given(st.lists(st.tuples(st.integers(20, 70), st.integers(1, 3), st.integers(1, 2),
                          st.integers(0, 40)), min_size=2, max_size=2),
       st.integers(2, 3), st.lists(st.integers(0, 2), min_size=2, max_size=2))
def test_a_cut_means_the_replicas_do_not_pack(types, cores, reps):
    """Random home types (bytes of 100; crossbars of an AG, of 4; AGs; an AG's bytes away
    from home) and replications, the AGs in the LP whatever the memory: where the cut comes,
    it needs more than the cores, and the homes and their AGs do not fit them (brute
    force)."""
    sizes, bars, ags, remote = (list(column) for column in zip(*types, strict=True))
    inst = _fake(sizes, bars, 2, 100, 4, cores, ags, remote)
    with pytest.MonkeyPatch.context() as patch:  # the AGs in the LP, whatever the memory
        patch.setattr(home_packing, "AG_MEMORY_SHARE", 0.0)
        cut = home_cut(inst, [0] * len(types), reps)
    replicas = [t for t, r in zip(types, reps, strict=True) for _ in range(r)]
    if cut is None:
        return
    event("cut")
    assert cut.cores > cores
    assert not _packs(replicas, 100, 4, cores)


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


def test_a_fit_both_coarser_axes_hide_is_checked_on_the_finest():
    """Three homes of 1334 bytes in one core of 4000 fit on 256 units (16 bytes: 83 each, 249
    of 250) and on 1024 (4 bytes: 999 of 1000), not in bytes, the third axis."""
    assert home_cut(_fake([1334], [1], 3, 4000, 4, 1), [0], [3]).cores == pytest.approx(1.5)
    assert home_cut(_fake([1334], [1], 3, 4002, 4, 1), [0], [3]) is None


def test_a_cut_out_of_time_is_still_valid_and_unlifted():
    """Three homes of 60 bytes on two cores of 100 with a second unfolding of 70: the cut
    lifts the second unfolding's homes; with no time, the first LP still proves the cut, and
    the lifting stops before the other unfolding, which then weighs nothing."""
    fake = _fake([60], [1], 3, 100, 4, 2)
    fake.layers[0].choices.append(SimpleNamespace(ags=1, crossbars_per_ag=1, remote_bytes=0))
    fake.replica_bytes = lambda li, ui: (60, 70)[ui]
    lifted = home_cut(fake, [0], [3])
    assert lifted.cores == pytest.approx(3)
    assert lifted.weights[0, 1] == pytest.approx(1.0)  # one such home a core, too
    hurried = home_cut(fake, [0], [3], Clock(), seconds=0.0)
    assert hurried.cores == pytest.approx(3)
    assert (0, 1) not in hurried.weights


def test_core_mode_homes_hold_all_their_crossbars():
    """Three replicas of 2 AGs x 2 crossbars, cores of 6: in crossbar mode two cores hold
    them (a core takes three AGs; one replica's home keeps one AG and sends the other to the
    next core); in core mode a home keeps both, so no core takes two homes (8 crossbars)
    and they need three."""
    cm = _fake([10], [2], 3, 100, 6, 2, ags=[2])
    assert home_cut(cm, [0], [3]) is None
    cm.computing_mode = "CM"
    assert home_cut(cm, [0], [3]).cores == pytest.approx(3)
    cm.cores = 3
    assert home_cut(cm, [0], [3]) is None


def test_ags_away_from_home_take_memory(monkeypatch):
    """A replica of 3 AGs (1 crossbar each) with a home of 60 bytes, beside one of 1 AG with
    a home of 90, on two cores of 100 bytes and 2 crossbars: the homes fit a core each, but
    an AG of the first must sit with the second home. At 30 bytes it does not fit there
    (2.5 cores' worth of patterns); at 10 it does. Where the memory is not that full, the LP
    leaves the AGs out."""
    monkeypatch.setattr(home_packing, "AG_MEMORY_SHARE", 0.0)
    tight = _fake([60, 90], [1, 1], 1, 100, 2, 2, ags=[3, 1], remote=[30, 0])
    assert home_cut(tight, [0, 0], [1, 1]).cores == pytest.approx(2.5)
    assert home_cut(_fake([60, 90], [1, 1], 1, 100, 2, 2, ags=[3, 1], remote=[10, 0]),
                    [0, 0], [1, 1]) is None
    monkeypatch.setattr(home_packing, "AG_MEMORY_SHARE", 0.95)  # this set takes 0.9
    assert home_cut(tight, [0, 0], [1, 1]) is None


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
