"""A placement of fixed options from a light model solved by CP-SAT's local search.

Where the crossbars and the local memory are nearly full, no greedy placement fits some
option sets, and the decomposition's subproblem, with its every resource, products and (LL)
window pipeline, may find no placement in its time: resnet34 on Arch-C (HT) puts 125 homes of
8 to 37 KB and every one of the 512 crossbars on 64 cores of 60.5 KB, and CP-SAT found none in
90 s. This model keeps only what decides whether the AGs fit, y, rho and ell per core as the
subproblem has them (crossbars, local memory, homes, core mode, layers per core), and, as its
objective, the traffic a placement adds (``_traffic``). Its placements are checked
(``baselines.check_counts``) and valued by ``evaluate.predict`` like every other: this is the
decomposition's seed where no greedy placement fits, not a bound.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from pimsolve.solve.clock import Clock
from pimsolve.solve.model import Expr, IntModel, Var, solve_model, total
from pimsolve.solve.options import SolveOptions
from pimsolve.stages.placement.evaluate import LayerCounts
from pimsolve.stages.placement.formulation import TICKS_PER_NS, core_counts
from pimsolve.stages.placement.instance import PlacementInstance

__all__ = ["pack_exact"]

SEARCH = "use_ls_only: true interleave_search: false"
"""CP-SAT's local search alone (feasibility jump, violation LS, LNS), its workers in parallel
threads. On resnet34/Arch-C (HT) its tree search finds no packing in 5 s (the subproblem,
with every resource, none in 90 s); the local search finds one in about a second and, with
two threads, one whose cycle is the master's bound (627.2 us) in 5 s, where interleaved on
one thread it needs about 7. On the wall clock, which ends it, not reproducible run to run."""

WORK_SEARCH = "use_ls_only: true"
"""On the work clock: the same local search, its workers interleaved (reproducible), with no
stall stop (a wall-clock one)."""

STALL_S = 1.0
"""Stop once the local search has found nothing better for this long (seconds)."""


def _ticks(ns: float) -> int:
    """ns in the formulation's ticks, rounded up."""
    return math.ceil(ns * TICKS_PER_NS - 1e-9)


def pack_exact(instance: PlacementInstance, choices: Sequence[int], reps: Sequence[int], *,
               seconds: float, seed: int = 0, workers: int = 1,
               clock: Clock | None = None) -> list[LayerCounts] | None:
    """The placement of the layers' ``choices`` and replications ``reps`` with the least
    ``_traffic`` that CP-SAT's local search finds within ``seconds`` of ``clock`` (a new
    wall clock if None), building the model included (None: none found; resnet34 on
    ISAAC's 168 cores takes about 2 s to build)."""
    clock = clock or Clock()
    began = clock.now()
    model = IntModel(f"packing {instance.model} on {instance.target} ({instance.mode})")
    K, C = instance.cores, instance.crossbars_per_core
    y: dict[tuple[int, int], Var] = {}
    rho: dict[tuple[int, int], Var] = {}
    ell: dict[tuple[int, int], Var] = {}
    units = [layer.choices[ui] for layer, ui in zip(instance.layers, choices, strict=True)]
    for li, (layer, u, r) in enumerate(zip(instance.layers, units, reps, strict=True)):
        top = C // u.crossbars_per_ag
        for k in range(K):
            y[li, k], rho[li, k], ell[li, k] = core_counts(
                model, instance, u, f"{layer.name},{k}", min(top, u.ags * r), min(top, r))
        model.equal(total(y[li, k] for k in range(K)), u.ags * r, f"ags[{layer.name}]")
        model.equal(total(rho[li, k] for k in range(K)), r, f"homes[{layer.name}]")
    layers = range(len(instance.layers))
    for k in range(K):
        model.add(total(y[li, k] * units[li].crossbars_per_ag for li in layers), hi=C,
                  name=f"crossbars[{k}]")
        if instance.local_memory_bytes is not None:
            model.add(total(rho[li, k] * instance.replica_bytes(li, choices[li])
                            + (y[li, k] - ell[li, k]) * units[li].remote_bytes
                            for li in layers), hi=instance.local_memory_bytes,
                      name=f"memory[{k}]")
        if instance.max_layers_per_core is not None:
            present = []
            for li in layers:
                b = model.boolean(f"on[{li},{k}]")
                model.add(b * (C // units[li].crossbars_per_ag) - y[li, k], lo=0)
                present.append(b)
            model.add(total(present), hi=instance.max_layers_per_core, name=f"layers[{k}]")
    traffic, least = _traffic(model, instance, choices, reps, y, rho, ell)
    model.add(traffic, lo=least, name="forced")  # the search stops once it gets there
    model.minimize(traffic)
    clock.charge(2 * model.terms, "term")  # built, then CP-SAT's
    left = seconds - (clock.now() - began)
    if left <= 0:
        return None
    result, values = solve_model(model, "cpsat", SolveOptions(
        time_limit_s=left, seed=seed, workers=workers, relative_gap=0.0,
        params=WORK_SEARCH if clock.work else SEARCH, stall_s=STALL_S,
        clock="work" if clock.work else "wall"))
    clock.charge_solve(result)
    if values is None:
        return None

    def column(v: dict[tuple[int, int], Var], li: int) -> np.ndarray:
        return np.array([values[v[li, k].index] for k in range(K)], dtype=np.int64)

    return [LayerCounts(ui, r, column(y, li), column(rho, li), column(ell, li))
            for li, (ui, r) in enumerate(zip(choices, reps, strict=True))]


def _traffic(model: IntModel, instance: PlacementInstance, choices: Sequence[int],
             reps: Sequence[int], y, rho, ell) -> tuple[Expr, int]:
    """The objective, in ticks, and a lower bound on it. On several chips, the AG-windows'
    bytes over the off-chip link (every AG a chip runs beyond its homes' A_u rho sends its
    slice in and partial sums out over it); on one, those of the AGs off their home over the
    cores' links, spread over the K cores. The bound: a home's chip (core) holds at most
    c = floor(C' / X_u) of a replica's AGs (C' its crossbars), so r (A_u - c) of the layer's
    are away. A sum, not the cycle's or the latency's maximum: CP-SAT's local search finds no
    packing of resnet34 on Arch-C with the largest per-core time as the objective, with or
    without a hint, and one in a second with this sum."""
    K, per_chip = instance.cores, instance.cores_per_chip
    several = instance.offchip_bytes_per_ns is not None
    room = instance.crossbars_per_core * (per_chip if several else 1)
    out, least = Expr(), 0
    for li, (layer, ui, r) in enumerate(zip(instance.layers, choices, reps, strict=True)):
        u, m = layer.choices[ui], layer.windows_per_replica(r)
        nbytes = (u.in_bytes + u.out_bytes) * m
        if several:
            cost = _ticks(nbytes / instance.offchip_bytes_per_ns)
            for chip in range(K // per_chip):
                cores = range(chip * per_chip, (chip + 1) * per_chip)
                gone = model.var(0, u.ags * r, f"offchip[{layer.name},{chip}]")
                model.add(gone - total(y[li, k] - rho[li, k] * u.ags for k in cores), lo=0)
                out = out + gone * cost
        else:
            cost = _ticks(nbytes / instance.link_bytes_per_ns / K)
            out = out + total(rho[li, k] * u.ags - ell[li, k] for k in range(K)) * cost
        least += r * max(0, u.ags - room // u.crossbars_per_ag) * cost
    return out, least
