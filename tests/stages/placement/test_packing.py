"""``packing.pack_exact``: it places an option set exactly when some placement of it exists
(the exact subproblem says which), also where no greedy does, and keeps AGs on their home's
chip at least as well as ``pack``."""

from __future__ import annotations

import functools
import itertools

from pimsolve.frontend.load import load_onnx
from pimsolve.lowering import lower
from pimsolve.solve.model import solve_model
from pimsolve.solve.options import SolveOptions
from pimsolve.solve.result import Status
from pimsolve.stages.placement.baselines import check_counts, fill, level_search, pack, spread
from pimsolve.stages.placement.evaluate import chip_crossings
from pimsolve.stages.placement.formulation import build_model
from pimsolve.stages.placement.instance import build_instance
from pimsolve.stages.placement.packing import pack_exact
from tests.simulate.test_checks import tiny_cnn
from tests.stages.placement.test_baselines import random_option_sets, small_target
from tests.stages.placement.test_formulation import instance as tiny_instance


@functools.cache
def tight():
    """The tiny CNN (HT) on 4 cores of 4 crossbars with 1.5 KiB of local memory each, and
    its option sets that use 80% to 100% of the crossbars (43)."""
    graph = load_onnx(tiny_cnn())
    target = small_target(4, 4)
    memory = target.core.local_memory.model_copy(update={"size_kib": 1.5})
    target = target.model_copy(update={"core": target.core.model_copy(
        update={"local_memory": memory})})
    inst = build_instance(graph, lower(graph, target), target, "ht", max_replication=6)
    room = inst.cores * inst.crossbars_per_core
    sets = []
    for choices in itertools.product(*(range(len(layer.choices)) for layer in inst.layers)):
        for reps in itertools.product(*(layer.replications for layer in inst.layers)):
            used = sum(r * layer.choices[u].ags * layer.choices[u].crossbars_per_ag
                       for layer, u, r in zip(inst.layers, choices, reps, strict=True))
            if 0.8 * room <= used <= room:
                sets.append((list(choices), list(reps)))
    return inst, sets


def _valid_where_no_greedy_is(inst, choices, reps, found) -> bool:
    """Asserts that ``found`` is a valid placement of these options; whether ``pack``,
    ``spread`` and ``level_search`` all fail to place them."""
    assert check_counts(inst, found) is None
    assert [(c.choice, c.replication) for c in found] == list(zip(choices, reps, strict=True))
    greedy = (pack(inst, choices, reps), spread(inst, choices, reps),
              level_search(inst, choices, reps, "throughput"))
    return all(g is None for g in greedy)


def test_pack_exact_places_exactly_the_sets_that_have_a_placement() -> None:
    """Every option set of ``tight``: ``pack_exact`` returns a valid placement of it (all AGs
    and homes, crossbars, local memory) if and only if the exact subproblem
    (``build_model(picks=...)``) is feasible (28 of 43 are, measured); among them are sets
    no greedy (``pack``, ``spread``, ``level_search``) places (3, measured)."""
    inst, sets = tight()
    feasible = rescued = 0
    for choices, reps in sets:
        picks = tuple((u, layer.replications.index(r))
                      for layer, u, r in zip(inst.layers, choices, reps, strict=True))
        result, _ = solve_model(build_model(inst, "throughput", picks=picks).model, "cpsat",
                                SolveOptions(time_limit_s=10))
        assert result.status in (Status.OPTIMAL, Status.INFEASIBLE)
        found = pack_exact(inst, choices, reps, seconds=0.1)
        assert (found is not None) == (result.status == Status.OPTIMAL)
        if found is None:
            continue
        feasible += 1
        rescued += _valid_where_no_greedy_is(inst, choices, reps, found)
    assert feasible >= 20 and rescued >= 1


def test_fill_places_the_tight_sets_validly() -> None:
    """``baselines.fill`` on every option set of ``tight``: what it returns is a valid
    placement of those options; it places 27 of the 28 that have one (measured), 2 of them
    where ``pack``, ``spread`` and ``level_search`` place nothing; never one that has none."""
    inst, sets = tight()
    placed = rescued = 0
    for choices, reps in sets:
        found = fill(inst, choices, reps)
        if found is None:
            continue
        placed += 1
        rescued += _valid_where_no_greedy_is(inst, choices, reps, found)
    assert placed >= 25 and rescued >= 1


def test_pack_exact_keeps_ags_on_their_chip() -> None:
    """Two chips of 3 cores (LL and HT), 15 random option sets each: the AG-windows
    ``pack_exact``'s placement runs off their home's chip are never more than ``pack``'s
    (which keeps a split replica on one chip where it can)."""
    for mode in ("ll", "ht"):
        inst = tiny_instance(3, 4, mode, chips=2)
        for choices, reps in random_option_sets(inst, 15, seed=4):
            greedy = pack(inst, choices, reps)
            found = pack_exact(inst, choices, reps, seconds=0.2)
            assert (found is None) <= (greedy is None)
            if found is None or greedy is None:
                continue
            assert check_counts(inst, found) is None
            crossed = sum(chip_crossings(inst, found).ag_windows.values())
            assert crossed <= sum(chip_crossings(inst, greedy).ag_windows.values())
