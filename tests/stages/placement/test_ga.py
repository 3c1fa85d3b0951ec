"""PIMCOMP's GA: valid, deterministic under a seed, never worse than its baseline seeds."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pimsolve.errors import InfeasibleError
from pimsolve.solve.result import Status, StopReason
from pimsolve.stages.placement.baselines import BASELINES, check_counts
from pimsolve.stages.placement.evaluate import decode, predict
from pimsolve.stages.placement.ga import GENE_BASE, Chromosome, GaOptions, _Problem, run_ga
from tests.stages.placement.test_baselines import vgg8

TINY = GaOptions(population=20, generations=10, seed=0)


def _best_baseline(inst, objective: str) -> float:
    return min(predict(inst, fn(inst, objective)).objective(objective)
               for name, fn in BASELINES.items()
               if name != "one-layer-per-core" or inst.cores >= 15)


@pytest.mark.parametrize("case,objective", [(("isaac", "ht", None), "latency"),
                                            (("small", "ht", None), "latency"),
                                            (("small", "ll", 2), "latency"),
                                            (("cm", "ht", None), "energy"),
                                            (("isaac", "ht", None), "edp")], ids=str)
def test_ga_is_valid_and_no_worse_than_its_seeds(case, objective) -> None:
    inst, _ = vgg8(*case)
    seen = []
    counts, result = run_ga(inst, objective, TINY, progress=lambda g, b: seen.append((g, b)))
    assert check_counts(inst, counts) is None
    assert result.engine == "ga" and result.status is Status.FEASIBLE
    assert result.stop_reason is StopReason.COMPLETED  # the generation cap, not the clock
    assert result.bound is None and result.gap is None and result.seed == 0
    assert result.stats["generations"] == 10 and result.stats["time_limited"] == 0
    assert result.objective == pytest.approx(predict(inst, counts).objective(objective))
    assert result.objective <= _best_baseline(inst, objective) * (1 + 1e-12)
    assert [g for g, _ in seen] == list(range(1, 11))
    bests = [b for _, b in seen]
    assert bests == sorted(bests, reverse=True) and bests[-1] == result.objective
    mapping = decode(inst, counts, engine="ga")
    assert [p.replication for p in mapping.layers] == [c.replication for c in counts]


def test_ga_is_deterministic_under_a_seed() -> None:
    inst, _ = vgg8("small")
    a, ra = run_ga(inst, "latency", GaOptions(population=20, generations=10, seed=7))
    b, rb = run_ga(inst, "latency", GaOptions(population=20, generations=10, seed=7))
    assert ra.objective == rb.objective and ra.stats == rb.stats
    for x, y in zip(a, b, strict=True):
        assert x.replication == y.replication
        assert np.array_equal(x.y, y.y) and np.array_equal(x.rho, y.rho)


def test_ga_leaves_the_global_random_state_alone() -> None:
    inst, _ = vgg8("small")
    random.seed(123)
    expected = random.random()
    random.seed(123)
    run_ga(inst, "latency", GaOptions(population=10, generations=2))
    assert random.random() == expected


def test_ga_stops_at_the_time_limit() -> None:
    inst, _ = vgg8("small")
    counts, result = run_ga(inst, "latency", GaOptions(population=10, time_limit_s=0.0))
    assert result.stats["generations"] == 0 and result.stats["time_limited"] == 1
    assert result.stop_reason is StopReason.TIME_LIMIT
    assert check_counts(inst, counts) is None
    assert result.objective <= result.stats["best_seed"]


def test_ga_on_the_work_clock_stops_at_the_same_generation() -> None:
    """Each individual is charged to the work clock, so a limit ends the run after the same
    generation every time, whatever the machine's load."""
    inst, _ = vgg8("small")
    options = GaOptions(population=20, time_limit_s=0.5, clock="work")
    (a, ra), (b, rb) = (run_ga(inst, "latency", options) for _ in range(2))
    assert ra.stop_reason is StopReason.DET_TIME_LIMIT and ra.stats["time_limited"] == 1
    assert 0 < ra.stats["generations"] < options.generations
    assert ra.stats == rb.stats and ra.objective == rb.objective
    assert all(np.array_equal(x.y, y.y) for x, y in zip(a, b, strict=True))


def test_ga_needs_a_baseline_that_packs() -> None:
    inst, _ = vgg8("tiny")
    with pytest.raises(InfeasibleError, match="no baseline"):
        run_ga(inst, "latency", TINY)


def test_genes_are_value_position() -> None:
    inst, _ = vgg8("small", "ll", 2)
    problem = _Problem(inst, "latency")
    counts = BASELINES["balance"](inst, "latency")
    y = np.stack([c.y for c in counts])
    genes = problem.encode(y)
    assert genes.shape == (inst.cores, 2)  # max_layers_per_core genes per core
    for k in range(inst.cores):
        for g in genes[k][genes[k] > 0]:
            assert y[g // GENE_BASE, k] == g % GENE_BASE
        assert (genes[k] > 0).sum() == (y[:, k] > 0).sum()
    assert np.array_equal(problem.matrix(genes), y)


@pytest.mark.parametrize("case", [("small", "ht", None), ("small", "ll", 2), ("cm", "ht", None),
                                  ("isaac", "ht", None)], ids=str)
@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 2**16))
def test_mutations_keep_placements_valid(case, seed) -> None:
    inst, _ = vgg8(*case)
    problem = _Problem(inst, "latency")
    rng = random.Random(seed)
    ind = Chromosome(problem.encode(np.stack([c.y for c in BASELINES["w0h0"](inst, "x")])))
    changed = False
    for _ in range(15):
        before = ind.genes.copy()
        (ind,) = problem.mutate(ind, rng)
        changed |= not np.array_equal(before, ind.genes)
        assert check_counts(inst, problem.counts(ind.genes)) is None
    assert changed
