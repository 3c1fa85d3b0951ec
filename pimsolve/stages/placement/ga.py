"""PIMCOMP's genetic algorithm for weight replication and AG layout (paper 000, Sec. VI-A).

The chromosome is PIMCOMP's value-position encoding: ``slots`` genes per core, gene
``layer_index * 10000 + AG count`` (0: an empty slot), so a gene's position is its core and the
number of non-empty genes of a core is the number of layers on it (``slots`` is
``max_layers_per_core``, or the number of layers when there is no such limit). A layer's
replication is its AG total over its AGs per replica; replicas are chained from the AGs as
:func:`baselines.homes` does (whole replicas at home, the pieces in core order).

Mutations follow the public PIMCOMP-NN code (``GeneticAlgorithm::Mutation``), each with rate
0.2: *increase* (one more admissible replication of a random layer, whole replicas on random
cores with room, else spread), *decrease* (one less, AGs removed from a random gene on),
*split* (part of a large gene moves to another core), *gather* (a small gene joins a core that
holds its layer) and *exchange* (two genes on two cores trade crossbar-equivalent AG counts).
An illegal mutant (crossbars, layers per core, core mode) is rejected and another mutation is
tried, as PIMCOMP-NN's ``CheckLegality`` does. Selection is PIMCOMP-NN's: the best 30% survive,
each other individual survives with probability 0.2, and mutants of random survivors refill the
population. The initial population holds the baselines' placements (and mutants of them).

The fitness is the surrogate ``predict(instance, counts).objective(objective)``. The unfolding
of every layer stays the default one (IK2,O,1 when the layer has it); the GA does not mutate it.

The loop is DEAP's (``deap.algorithms.varOr`` for the variation, ``deap.tools`` for selection
and the hall of fame); DEAP draws from Python's ``random``, which is seeded with
``GaOptions.seed`` for the run and restored afterwards, so a seed and a generation cap give the
same result on every run (a time limit can stop a run at another generation).
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from deap import algorithms, base, tools

from pimsolve.errors import InfeasibleError, InternalError
from pimsolve.solve.clock import Clock
from pimsolve.solve.result import SolveResult, Status, StopReason
from pimsolve.stages.placement.baselines import BASELINES, _counts, check_counts, default_choices
from pimsolve.stages.placement.evaluate import LayerCounts, memory_per_core, predict
from pimsolve.stages.placement.instance import PlacementInstance

__all__ = ["GaOptions", "run_ga", "GENE_BASE"]

GENE_BASE = 10000
"""Gene = layer_index * GENE_BASE + AG count (PIMCOMP: up to 9999 AGs of a layer per core)."""

_FAMILIES = ("increase", "decrease", "split", "gather", "exchange")
_TRIES = 20


@dataclass(frozen=True)
class GaOptions:
    """GA settings (defaults: PIMCOMP Sec. VIII, population 200 and up to 1000 generations)."""

    population: int = 200
    generations: int = 1000
    """Generation cap."""
    time_limit_s: float | None = None
    """Limit in seconds of ``clock``; None: only the generation cap stops the run."""
    clock: str = "wall"
    """'wall', or 'work' (``solve.clock``: each placement valued is charged, so a run
    stops after the same generation on every machine)."""
    seed: int = 0
    remain_rate: float = 0.3
    """Share of the best individuals that survive every generation."""
    random_select_rate: float = 0.2
    """Probability that each other individual survives."""


class _FitnessMin(base.Fitness):
    weights = (-1.0,)


class Chromosome:
    """One individual: ``genes`` (cores x slots, PIMCOMP's value-position encoding)."""

    __slots__ = ("genes", "fitness")

    def __init__(self, genes: np.ndarray) -> None:
        self.genes = genes
        self.fitness = _FitnessMin()

    def __deepcopy__(self, memo) -> Chromosome:
        out = Chromosome(self.genes.copy())
        if self.fitness.valid:
            out.fitness.values = self.fitness.values
        return out


class _Problem:
    """The instance seen by the GA: AG matrices, genes, legality, mutations, fitness."""

    def __init__(self, instance: PlacementInstance, objective: str) -> None:
        self.instance, self.objective = instance, objective
        self.choices = default_choices(instance)
        cs = [layer.choices[u] for layer, u in zip(instance.layers, self.choices, strict=True)]
        self.ags = np.array([c.ags for c in cs], dtype=np.int64)
        self.xb = np.array([c.crossbars_per_ag for c in cs], dtype=np.int64)
        self.n, self.k = len(cs), instance.cores
        self.cap = instance.crossbars_per_core
        self.slots = instance.max_layers_per_core or self.n
        self.cm = instance.computing_mode == "CM"
        if self.n >= GENE_BASE:
            raise InfeasibleError(f"{instance.model}: the GA encodes at most {GENE_BASE - 1} "
                                  f"layers, the model has {self.n}")

    # -- encoding -------------------------------------------------------------------------

    def encode(self, y: np.ndarray) -> np.ndarray:
        """Genes of the AG matrix ``y`` (layers x cores): a core's layers in index order."""
        on = y.T > 0
        slot = np.cumsum(on, axis=1) - 1
        core, layer = np.nonzero(on)
        genes = np.zeros((self.k, max(self.slots, int(on.sum(axis=1).max(initial=0)))),
                         dtype=np.int64)
        genes[core, slot[core, layer]] = layer * GENE_BASE + y[layer, core]
        return genes[:, :self.slots]

    def matrix(self, genes: np.ndarray) -> np.ndarray:
        """The AG matrix (layers x cores) of ``genes``."""
        y = np.zeros((self.n, self.k), dtype=np.int64)
        core, slot = np.nonzero(genes)
        g = genes[core, slot]
        np.add.at(y, (g // GENE_BASE, core), g % GENE_BASE)
        return y

    def counts(self, genes: np.ndarray) -> list[LayerCounts]:
        return _counts(self.instance, self.choices, self.matrix(genes))

    def fitness(self, ind: Chromosome) -> tuple[float]:
        y = self.matrix(ind.genes)
        if not self.legal(y):
            return (math.inf,)
        counts = _counts(self.instance, self.choices, y)
        return (predict(self.instance, counts).objective(self.objective),)

    # -- legality -------------------------------------------------------------------------

    def legal(self, y: np.ndarray) -> bool:
        """Crossbars, layers per core, admissible replications, core mode and local memory
        hold."""
        if (y < 0).any() or (y >= GENE_BASE).any():
            return False
        if (self.xb @ y > self.cap).any() or ((y > 0).sum(axis=0) > self.slots).any():
            return False
        total = y.sum(axis=1)
        if (total % self.ags).any():
            return False
        if self.cm and (y % self.ags[:, None]).any():
            return False
        if not all(int(t) // int(a) in layer.replications
                   for t, a, layer in zip(total, self.ags, self.instance.layers, strict=True)):
            return False
        top = self.instance.local_memory_bytes
        return top is None or int(memory_per_core(
            self.instance, _counts(self.instance, self.choices, y)).max()) <= top

    def _free(self, y: np.ndarray) -> np.ndarray:
        return self.cap - self.xb @ y

    def _room(self, y: np.ndarray, i: int) -> np.ndarray:
        """Cores that may take AGs of layer ``i`` (it is there, or a slot is free)."""
        return (y[i] > 0) | ((y > 0).sum(axis=0) < self.slots)

    # -- mutations (PIMCOMP-NN GeneticAlgorithm::Mutation) -------------------------------

    def mutate(self, ind: Chromosome, rng: random.Random) -> tuple[Chromosome]:
        """Apply one legal mutation (a random family; up to ``_TRIES`` attempts)."""
        y0 = self.matrix(ind.genes)
        for _ in range(_TRIES):
            y = y0.copy()
            family = _FAMILIES[rng.randrange(len(_FAMILIES))]
            if getattr(self, "_" + family)(y, rng) and self.legal(y):
                ind.genes = self.encode(y)
                break
        return (ind,)

    def _increase(self, y: np.ndarray, rng: random.Random) -> bool:
        up = [i for i in range(self.n) if self._next(i, y, +1) is not None]
        if not up:
            return False
        i = up[rng.randrange(len(up))]
        r = int(y[i].sum()) // int(self.ags[i])
        a, x = int(self.ags[i]), int(self.xb[i])
        for _ in range(self._next(i, y, +1) - r):
            free, room = self._free(y), self._room(y, i)
            fit = np.flatnonzero(room & (free >= a * x))
            if len(fit):
                y[i, fit[rng.randrange(len(fit))]] += a
                continue
            if self.cm:
                return False
            slots = np.where(room, free // x, 0)
            if slots.sum() < a:
                return False
            start, need = rng.randrange(self.k), a
            for k in (np.arange(self.k) + start) % self.k:
                take = int(min(need, slots[k]))
                y[i, k] += take
                need -= take
                if need == 0:
                    break
        return True

    def _decrease(self, y: np.ndarray, rng: random.Random) -> bool:
        down = [i for i in range(self.n) if self._next(i, y, -1) is not None]
        if not down:
            return False
        i = down[rng.randrange(len(down))]
        a = int(self.ags[i])
        need = (int(y[i].sum()) // a - self._next(i, y, -1)) * a
        start = rng.randrange(self.k)
        for k in (np.arange(self.k) + start) % self.k:
            have = int(y[i, k]) // a * a if self.cm else int(y[i, k])
            take = min(need, have)
            y[i, k] -= take
            need -= take
            if need == 0:
                return True
        return False

    def _split(self, y: np.ndarray, rng: random.Random) -> bool:
        k = rng.randrange(self.k)
        unit = self.ags if self.cm else np.ones(self.n, dtype=np.int64)
        big = np.flatnonzero((y[:, k] >= 2 * unit) & (y[:, k] * self.xb > self.cap // 4))
        if not len(big):
            return False
        i = int(big[rng.randrange(len(big))])
        u = int(unit[i])
        move = u * rng.randint(1, int(y[i, k]) // u - 1)
        room = self._room(y, i) & (self._free(y) >= move * self.xb[i])
        room[k] = False
        to = np.flatnonzero(room)
        if not len(to):
            return False
        y[i, k] -= move
        y[i, to[rng.randrange(len(to))]] += move
        return True

    def _gather(self, y: np.ndarray, rng: random.Random) -> bool:
        k = rng.randrange(self.k)
        small = np.flatnonzero((y[:, k] > 0) & (y[:, k] <= np.maximum(2, self.ags)))
        if not len(small):
            return False
        i = int(small[rng.randrange(len(small))])
        move = int(y[i, k])
        room = (y[i] > 0) & (self._free(y) >= move * self.xb[i])
        room[k] = False
        to = np.flatnonzero(room)
        if not len(to):
            return False
        y[i, k] = 0
        y[i, to[rng.randrange(len(to))]] += move
        return True

    def _exchange(self, y: np.ndarray, rng: random.Random) -> bool:
        genes = np.argwhere(y > 0)
        if len(genes) < 2:
            return False
        (i1, k1), (i2, k2) = (genes[rng.randrange(len(genes))] for _ in range(2))
        if i1 == i2 or k1 == k2:
            return False
        x1, x2 = int(self.xb[i1]), int(self.xb[i2])
        n1, n2 = int(y[i1, k1]), int(y[i2, k2])
        u1, u2 = (int(self.ags[i1]), int(self.ags[i2])) if self.cm else (1, 1)
        if n1 * x1 < n2 * x2:  # all of gene 1 (in crossbars), as much of gene 2
            e2 = n1 * x1 // x2 // u2 * u2
            e1 = e2 * x2 // x1 // u1 * u1
        else:
            e1 = n2 * x2 // x1 // u1 * u1
            e2 = e1 * x1 // x2 // u2 * u2
        if not e1 or not e2:
            return False
        y[i1, k1] -= e1
        y[i1, k2] += e1
        y[i2, k2] -= e2
        y[i2, k1] += e2
        return True

    def _next(self, i: int, y: np.ndarray, by: int) -> int | None:
        reps = self.instance.layers[i].replications
        j = reps.index(int(y[i].sum()) // int(self.ags[i])) + by
        return reps[j] if 0 <= j < len(reps) else None


def run_ga(instance: PlacementInstance, objective: str, options: GaOptions = GaOptions(),
           progress: Callable[[int, float], None] | None = None,
           ) -> tuple[list[LayerCounts], SolveResult]:
    """PIMCOMP's GA on ``instance`` for ``objective``: the best placement and its record.

    ``progress(generation, best)`` is called after every generation. Raises InfeasibleError
    when no baseline packs (there is no individual to start from).
    """
    start = time.perf_counter()
    clock = Clock.named(options.clock, options.time_limit_s)
    problem = _Problem(instance, objective)
    seeds = []
    for name in sorted(BASELINES):
        try:
            counts = BASELINES[name](instance, objective)
        except InfeasibleError:
            continue
        seeds.append(Chromosome(problem.encode(np.stack([c.y for c in counts]))))
    if not seeds:
        raise InfeasibleError(f"{instance.model}: no baseline placement packs onto "
                              f"{instance.target}, the GA has no individual to start from")

    rng = random.Random(options.seed)
    toolbox = base.Toolbox()
    toolbox.register("evaluate", problem.fitness)
    toolbox.register("mutate", problem.mutate, rng=rng)
    toolbox.register("clone", Chromosome.__deepcopy__, memo=None)
    hall = tools.HallOfFame(1, similar=lambda a, b: np.array_equal(a.genes, b.genes))
    saved = random.getstate()
    random.seed(options.seed)
    evaluations, generation, timed_out = 0, 0, False
    try:
        for ind in seeds:
            ind.fitness.values = toolbox.evaluate(ind)
        population = tools.selBest(seeds, options.population)
        mutants = algorithms.varOr(population, toolbox, options.population - len(population),
                                   0.0, 1.0)
        for ind in mutants:
            ind.fitness.values = toolbox.evaluate(ind)
        population += mutants
        evaluations += len(seeds) + len(mutants)
        _charge(clock, instance, len(seeds) + len(mutants))
        hall.update(seeds)
        hall.update(population)
        keep = max(1, math.ceil(options.population * options.remain_rate))
        while generation < options.generations:
            if clock.left() <= 0:
                timed_out = True
                break
            ranked = tools.selBest(population, len(population))
            survivors = ranked[:keep] + [ind for ind in ranked[keep:]
                                         if random.random() < options.random_select_rate]
            offspring = algorithms.varOr(survivors, toolbox, options.population - len(survivors),
                                         0.0, 1.0)
            for ind in offspring:
                ind.fitness.values = toolbox.evaluate(ind)
            evaluations += len(offspring)
            _charge(clock, instance, len(offspring))
            population = survivors + offspring
            hall.update(population)
            generation += 1
            if progress is not None:
                progress(generation, hall[0].fitness.values[0])
    finally:
        random.setstate(saved)
    best = hall[0]
    counts = problem.counts(best.genes)
    why = check_counts(instance, counts)
    if why is not None:
        raise InternalError(f"GA returned an invalid placement: {why}")
    value = best.fitness.values[0]
    result = SolveResult(
        engine="ga", status=Status.FEASIBLE, objective=value, bound=None, gap=None,
        wall_s=time.perf_counter() - start, deterministic_s=None, seed=options.seed,
        stop_reason=clock.stop_reason() if timed_out else StopReason.COMPLETED,
        params=(f"population={options.population} generations={options.generations} "
                f"time_limit_s={options.time_limit_s} clock={options.clock} "
                f"seed={options.seed}"),
        stats={"generations": float(generation), "evaluations": float(evaluations),
               "time_limited": float(timed_out), "seeds": float(len(seeds)),
               "best_seed": min(s.fitness.values[0] for s in seeds)})
    return counts, result


def _charge(clock: Clock, instance: PlacementInstance, evaluations: int) -> None:
    """``evaluations`` individuals made and valued (work clock): each is checked, decoded
    and valued by ``predict``, about three times a ``predict`` of its (layer, core) pairs
    (measured: 1.6 to 30 ms an individual on the 28x28 and 224x224 benchmark rows)."""
    clock.charge(evaluations, "individual")
    clock.charge(3 * evaluations * len(instance.layers) * instance.cores, "core_layer")
    if instance.mode == "ll":
        clock.charge(evaluations * sum(layer.windows for layer in instance.layers), "window")
