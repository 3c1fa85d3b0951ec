"""Exact placement by decomposition: choose the options, then place them, and cut.

The full model (``formulation.build_model``) multiplies per-core counts by windows per replica,
so on 100+ cores its relaxation is weak and CP-SAT proves little. Split along that product
(logic-based Benders, written up in ``formulations/placement.md``):

* **master** (``build_master``): the options z alone (unfolding and replication per layer),
  bounded by cuts valid for every placement of those options; small, solved to optimality;
* **subproblem** (``build_model(picks=...)``): with the options fixed, windows per replica are
  constants and the model is linear; it places the AGs on the cores (hinted by ``pack``);
* **cut**: once the subproblem proves ``v`` for the options ``z*``, the master learns
  ``obj >= v * (sum_l z*_l - (n - 1))`` (binding only at ``z*``, nothing elsewhere);
* **least floor** (LL latency): no placement of any option set beats the least pipeline floor
  over all of them (``diagram.py``), a bound that sees how the replicas of consecutive
  layers line up, which the master does not.

The master's optimum is a lower bound on the true optimum at every step, and the best
subproblem solution an upper bound; the loop stops when they meet within ``relative_gap`` or
the time limit ends. Both are solved by the same engine (CP-SAT, CBC or HiGHS).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import replace

from pimsolve.solve.clock import Clock
from pimsolve.solve.cpsat import merge_parameters
from pimsolve.solve.model import Progress, solve_model, total
from pimsolve.solve.options import SolveOptions
from pimsolve.solve.result import SolveResult, Status, StopReason, relative_gap
from pimsolve.stages.placement.baselines import (
    PASS_COST,
    even_search,
    fill,
    level_search,
    scattered,
    spread,
)
from pimsolve.stages.placement.diagram import PRIMAL_COUNTED, diagram_bound, floor_options
from pimsolve.stages.placement.evaluate import LayerCounts, floor_latency, predict
from pimsolve.stages.placement.formulation import (
    PlacementModel,
    build_master,
    build_model,
    cap_time,
    decode_values,
    hint_values,
    objective_scale,
    restrict_room,
    restrict_value,
)
from pimsolve.stages.placement.home_packing import HomeCut, home_cut
from pimsolve.stages.placement.instance import PlacementInstance
from pimsolve.stages.placement.local import gather, polish
from pimsolve.stages.placement.packing import pack_exact
from pimsolve.stages.placement.search import Picks, search_options

__all__ = ["solve_decomposed", "picks_of"]

SEARCH_SHARE = 0.2
"""LL latency: of the time limit, at most what ``search.search_options`` takes, once, after
the first master's option set is seeded (and at most half the time left; SEARCH_S without a
limit)."""
SEARCH_S = 2.0
DIAGRAM_SHARE = 0.6
"""LL latency: of the time limit, at most what ``diagram.diagram_bound`` takes, once, before
the first master (DIAGRAM_S without a limit). With 0.4, 10 s, resnet18-28/isaac LL proved
7.89% and resnet18-28/puma 9.55%; with 0.6, 6.40% and 9.16% (a larger budget finishes), and
the four other 28x28 LL rows and resnet34, googlenet on ISAAC at 224x224 were no worse."""
DIAGRAM_S = 5.0
ROOM_SHARES = (0.95, 0.9, 0.85, 0.8, 0.75, 0.7)
"""LL latency: when no greedy placement fits the restricted diagram's option set (its
homes' local memory and its crossbars packed together), the restricted diagram again with
the option sets held to these shares of the crossbars and of the local memory, in turn,
until one places (224x224, 10 s: googlenet/isaac and resnet34/arch-c at 0.9,
googlenet/arch-c at 0.75, at 0.9 since ``baselines.fill``)."""
ROOM_HT = (0.9, 0.8, 0.7)
"""HT, where no greedy placement fits the master's option set: the shares of the crossbars and
the local memory ``_roomy`` holds the master to in turn. googlenet/Arch-C HT: the master's
sets (340.8 us) need 99.3% of the local memory for their homes, and held to 0.98 and 0.95 its
sets still place nowhere; at 0.9 one places at 419.2 us (balance: 648 us)."""
ROOM_HT_TRIES = 3
"""``_roomy``: option sets tried at each share at most (each set that places nowhere is cut
off, by ``home_cut`` where its homes do not fit, and excluded otherwise)."""
ROOM_HT_ABOVE = 0.05
"""``_roomy`` runs only when the incumbent is more than this above the master's value: where
it is near, little is to gain in the model and the simulator may disagree (googlenet/ISAAC
HT: incumbent 1085.1 us, master 1076.8; held to 0.8 a set places at 1077.2 us, which
simulates at 1588 us against the incumbent's 1321: equal global-memory bytes, but the
simulated memory idles at the end of the cycle: placement.md, "the simulator's grant order"
and "an AG chain under a busy global memory")."""
ROOM_HT_SHARE = 0.8
"""``_roomy`` takes at most this share of the time left (the packing of the master's set,
next, the rest)."""
TIES = 4
"""HT, where the master's option set places more than ``TIES_ABOVE`` above the master's
value: how many other option sets of the same value (``_ties``) are placed, the best one
going on to the subproblem in its stead. resnet18-28/ISAAC HT: the master's set places at
109.8 us; the next four sets of its value (101.9 us) at 105.9, 105.9, 105.9 and 108.5."""
TIES_ABOVE = 0.02
TIES_SHARE = 0.25
"""Of the time left, what ``_ties`` takes at most (each tied set comes in about 0.05
deterministic s; placing it, a few replicas' greedy passes)."""
HOME_CUTS = 8
"""HT: at most this many of ``home_packing``'s cuts a solve adds, where no greedy placement
fits the master's option set (each costs a master solve more). Not in LL, whose bound is
mostly the least floor's and whose masters take 1.5 to 5.3 s."""
HOME_CUT_SHARE = 0.5
"""HT: the share of the time left one ``home_packing.home_cut`` may take (googlenet/Arch-C HT,
10 s: four cuts took 6.5 work-s before it, three 3.6 with it, the same 7.32% gap)."""
HOME_CUT_SCALE = 1_000_000
"""Its weights in integer millionths. (In thousandths, rounding each of googlenet's 58
terms down lost up to 0.058 cores, and a cut proving 64.011 cores of 64 did not hold the
master off its own set.)"""
ROOM_CELLS = 500_000
"""The restricted diagram's budget for those (resnet34, googlenet at 224x224: 0.1 to 0.5 s
a share)."""
ROOM_TIME = 0.5
"""Of the least floor's time, what those may take at most, after it."""
POLISH_TIME = 0.2
"""Of the least floor's time, what ``local.polish`` may take, after it, on the placement of
its option set (it stops sooner where no move helps: vgg8-28/PUMA LL 496.9 -> 488.0 us in
0.3 s, resnet18-28/PUMA 664.0 -> 658.0 in 1 s, both their option set's floor)."""
PACK_SHARE = 0.9
"""Of the time left, what ``packing.pack_exact`` may take to place an option set no greedy
placement fits (its local search improves with time: resnet34/Arch-C HT, 1875 us in 2 s,
653 us in 5 s, 627.2 us, the master's bound, in 8 s); the subproblem, seeded with it, has
the rest."""
PACK_S = 8.0
"""``pack_exact``'s time at most (it stops early at its objective's bound, or once its local
search has found nothing better for ``packing.STALL_S``)."""
PACK_MIN_S = 1.0
"""Less time than this, and no packing is tried: building its model takes a good part of it
on a large instance (resnet34 on ISAAC's 168 cores, about 2 s), and the local search needs
about a second to find a first placement (resnet34/ISAAC LL, 0.8 s: none)."""
PACK_ABOVE = 0.01
"""LL: the diagram's option set is packed where no greedy placement fits it, and on several
chips also where its greedy placement, polished, is more than this above the set's floor
(on one chip the packing's traffic says little about latency: resnet34/ISAAC, 2.1 s,
none found)."""
PACK_LL = 0.5
"""LL: of the time left after the diagram, what packing its option set may take."""
WIDE_NODES = (64, 256, 1024, 4096)
"""LL latency, where the diagram starved (``LeastFloor.starved``: the 224x224 rows, whose
early layers keep ``diagram.MIN_NODES`` = 16 nodes at every budget the time holds): the
nodes a layer keeps, at the least, in the restricted diagrams run after it, in turn, at the
room share that placed, each set placed. Their floors fall with the nodes, though not
always (placed, in us, work-s in brackets; at 16 the diagram's own set):

| row | 16 | 64 | 256 | 1024 |
|---|---|---|---|---|
| resnet34/ISAAC (1.0) | 3095.2 (0.7) | 3054.4 (2.9) | 3025.1 (3.8) | 2995.9 (5.0) |
| googlenet/ISAAC (0.9) | 1037.7 (0.5) | 1028.0 (1.4) | none (4.3) | 926.2 (10.8) |
| resnet34/Arch-C (1.0) | 4612.7 (0.2) | none (0.9) | 4628.4 (1.4) | 4379.0 (2.1) |
| googlenet/Arch-C (0.9) | 2182.6 (0.2) | 2113.8 (0.7) | 1993.7 (1.7) | 1969.8 (4.5) |

and googlenet/ISAAC 905.4 at 512 nodes (6.8 work-s)."""
WIDE_NEXT = 2.0
"""The next of those runs only while the time left is at least this many times what the
last took (each took 1.2 to 4.1 times the one before in the table above)."""
MASTER_PARAMS = "linearization_level:2 use_implied_bounds:false cp_model_presolve:false"
"""CP-SAT parameters of the HT master (unless the user's set the same field): its z are
one-hot per layer and every bound is a sum over them, so the full LP relaxation proves the
optimum sooner: resnet34/Arch-C HT 6.4 -> 2.9 s, vgg8-28/PUMA 0.62 -> 0.06 s,
resnet18-28/PUMA 0.57 -> 0.25 s, the other three 0.1 to 0.3 s faster (same optima). Not in
LL, where at 224x224 the heavier LP leaves the master with a weaker bound in the same time
(resnet34/Arch-C LL, 8 s: 191 us where the default reached 1614 us). Which of several
optimal option sets the master returns changes with it: resnet18-28/ISAAC HT gets one whose
greedy placement is worse (109.8 us against 105.9, the same master value 101.9 us).
Without implied-bound cuts (``use_implied_bounds:false``), whose time CP-SAT counts little
of as deterministic: the restricted copies of googlenet/Arch-C HT's master (``_roomy``) took
2.5 to 5.7 s of wall a deterministic second with them, 1.0 to 1.3 without, and three copies
in a row proved their optimum (each placing at 437.8 us) where with them the first stopped
unproven at the limit on a set that places nowhere; the resnet18-28/ISAAC HT master alone
proves its optimum in 0.29 deterministic s instead of 4.74, the other eleven HT masters of
the benchmark in 0.5 to 1.2 times the time (vgg8-28/ISAAC 0.02 -> 0.01 s, googlenet/ISAAC
1.20 -> 1.44).
Without presolve (``cp_model_presolve:false``): the master is a few one-hot rows a layer
and sums over them, which presolve has little to simplify in and took most of the solve
on: the twelve HT masters of the benchmark, each alone to the same optimum, in 1.0 to 10
times less deterministic time (resnet34/ISAAC 3.20 -> 0.32 s, resnet34/PUMA 2.54 -> 0.27,
googlenet/ISAAC 1.41 -> 0.20, googlenet/Arch-C 1.30 -> 0.24). In the benchmark (10 s, with
the memory's wait on the longest chain, ``evaluate.CHAIN_TAIL_SHARE``, which came with it):
googlenet/Arch-C HT gap 10.6% -> 9.1%, resnet34/PUMA 49.4% -> 45.2%, googlenet/ISAAC
0.67% -> 0.054%. Without that term the faster loop placed ISAAC optima that simulated 12%
slower (googlenet/ISAAC, 715 against 813.5 inferences/s). Not in LL: the 28x28 LL
decompositions ended as before (the least floor bounds them) and resnet18-28/PUMA's master
took twice the wall (2.4 -> 4.4 s)."""
MASTER_WORKERS = 1
"""CP-SAT workers of the masters (the subproblems and packings keep ``options.workers``).
Several workers interleave their search, so on either clock they share one thread, and the
masters, LP-bound, gain nothing from the second: alone, 11 of the twelve HT masters of the
benchmark proved their optimum in 1.5 to 18 times less deterministic time with one worker
(googlenet/Arch-C 3.05 -> 1.38 s, resnet34/ISAAC 6.49 -> 2.38), resnet18-28/ISAAC in twice as
much (2.40 -> 4.74; 0.29 without the implied-bound cuts, ``MASTER_PARAMS``); the six 28x28
LL masters in 1.3 to 55 times less."""
UNSEEDED_SHARE = 0.25
"""Of the time limit, what a subproblem no greedy placement seeds may take; one that finds
no placement in it is parked (below)."""

GATHER_SHARE = 0.1
"""HT: of the time left, what ``local.gather`` may take on each option set's greedy
placement (``_seed``), GATHER_S at most. resnet18-28/ISAAC HT, CP-SAT's option set placed by
``level`` at 105.6 us (the shared global memory binds), gathered 102.3 us in 0.3 s of wall
(0.17 s of work); CP-SAT's subproblem from the level placement found nothing better in 20 s
and 102.3 to 102.5 us in 60 s."""
GATHER_S = 2.0


def picks_of(instance: PlacementInstance, counts: list[LayerCounts]) -> Picks | None:
    """The options of a placement (None if a replication is not admissible)."""
    out = []
    for layer, c in zip(instance.layers, counts, strict=True):
        if c.replication not in layer.replications:
            return None
        out.append((c.choice, layer.replications.index(c.replication)))
    return tuple(out)


def _master_picks(master: PlacementModel, values: list[int]) -> Picks:
    chosen = {li: (ui, ri) for (li, ui, ri), v in master.z.items() if values[v.index]}
    return tuple(chosen[li] for li in range(len(master.instance.layers)))


def _add_cut(master: PlacementModel, picks: Picks, value: int, name: str) -> None:
    """obj >= value * (sum_l z[l, picks_l] - (n - 1)): binding only at ``picks``."""
    n = len(picks)
    hit = total(master.z[li, ui, ri] for li, (ui, ri) in enumerate(picks))
    master.model.add(master.model.objective - hit * value, lo=-(n - 1) * value, name=name)


def _home_cut(instance: PlacementInstance, picks: Picks, home_cuts: list[HomeCut],
              clock: Clock, stats: dict[str, float]) -> HomeCut | None:
    """``home_packing.home_cut`` of ``picks``, joined to ``home_cuts``; None where its homes
    fit the cores or ``HOME_CUTS`` are already there."""
    if len(home_cuts) >= HOME_CUTS:
        return None
    t = clock.now()
    cut = home_cut(instance, [ui for ui, _ in picks],
                   [layer.replications[ri] for layer, (_, ri) in
                    zip(instance.layers, picks, strict=True)], clock,
                   HOME_CUT_SHARE * clock.left())
    stats["home_cut_s"] = stats.get("home_cut_s", 0.0) + clock.now() - t
    if cut is not None:
        home_cuts.append(cut)
        stats["home_cuts"] = float(len(home_cuts))
    return cut


def _add_home_cut(master: PlacementModel, cut: HomeCut, name: str) -> None:
    """sum_l w[l, u] r z[l, u, r] <= K (``home_packing``), its weights scaled to integers and
    rounded down (a weaker cut, still valid)."""
    scale = HOME_CUT_SCALE
    master.model.add(total(v * math.floor(cut.weights[li, ui] * scale
                                          * master.instance.layers[li].replications[ri])
                           for (li, ui, ri), v in master.z.items() if (li, ui) in cut.weights),
                     hi=master.instance.cores * scale, name=name)


def _exclude(master: PlacementModel, picks: Picks, name: str) -> None:
    """No placement of ``picks`` exists: at most n - 1 of its options together."""
    hit = total(master.z[li, ui, ri] for li, (ui, ri) in enumerate(picks))
    master.model.add(hit, hi=len(picks) - 1, name=name)


def _seed(instance: PlacementInstance, objective: str, picks: Picks,
          known: dict[Picks, list[LayerCounts]], clock: Clock) -> list[LayerCounts] | None:
    """The subproblem's hint: the best of a known placement, ``level_search`` (which is
    ``pack``'s placement unless it finds a better one), ``spread``, ``fill`` and, in LL,
    ``even_search``, in HT improved by ``local.gather``; their work charged to ``clock``."""
    choices = [ui for ui, _ in picks]
    reps = [layer.replications[ri] for layer, (_, ri) in zip(instance.layers, picks,
                                                               strict=True)]
    clock.charge((PASS_COST["spread"] + PASS_COST["fill"]) * sum(reps), "replica")
    found = [c for c in (known.get(picks),
                         level_search(instance, choices, reps, objective, clock=clock),
                         spread(instance, choices, reps),
                         fill(instance, choices, reps),
                         even_search(instance, choices, reps, clock)
                         if instance.mode == "ll" else None)
             if c is not None and not scattered(instance, c)]
    best = min(found, key=lambda c: predict(instance, c).objective(objective), default=None)
    if best is None or instance.mode != "ht" or objective not in ("latency", "throughput"):
        return best
    gathered = gather(instance, best, min(GATHER_SHARE * max(0.0, clock.left()), GATHER_S),
                      clock=clock)
    return best if scattered(instance, gathered) else gathered


def solve_decomposed(instance: PlacementInstance, objective: str, engine: str,
                     options: SolveOptions, *, start: list[LayerCounts] | None = None,
                     progress: Callable[[Progress], None] | None = None,
                     ) -> tuple[SolveResult, list[LayerCounts] | None]:
    """The best placement and a proven bound, in the model's units (ticks, nJ, EDP).

    ``start`` (a known placement, e.g. the best baseline) is the first incumbent and the
    hint of its options' subproblem. In LL, for latency, the least floor of every option set
    (``diagram.diagram_bound``, a share of the time first) bounds the result from below with
    the master's, and its restricted diagram's option set, placed, is an incumbent; with
    async communication, the option sets ``search.search_options``
    finds from the best placement known once the first master's option set is seeded,
    placed, are incumbents too (after the master's bound and its seed, which need the time
    more). In HT, where no greedy placement fits the master's option set and the incumbent is
    far above its value, ``_roomy``'s set, which leaves room, placed, is an incumbent. In HT
    with sync communication no placement ``scattered`` flags is an incumbent.
    """
    began = time.perf_counter()
    clock = Clock.named(options.clock, options.time_limit_s)
    limit = clock.limit
    goal = options.relative_gap if options.relative_gap is not None else 0.0
    best: float | None = None
    best_counts: list[LayerCounts] | None = None
    known: dict[Picks, list[LayerCounts]] = {}
    if start is not None and (p := picks_of(instance, start)) is not None:
        known[p] = start
        best, best_counts = _model_units(instance, objective, start), start
    lower = 0.0
    stats = {"iterations": 0.0, "master_s": 0.0, "subproblem_s": 0.0, "subproblems_optimal": 0.0,
             "parked": 0.0, "search_s": 0.0}
    least_floor = 0  # LL latency: no option set's floor is below it (ticks)
    ll_latency = instance.mode == "ll" and objective == "latency"
    if ll_latency:
        least_floor, placed = _least_floor(
            instance, best, known, stats,
            DIAGRAM_SHARE * limit if limit < math.inf else DIAGRAM_S, clock, options)
        lower = least_floor
        if placed is not None and (best is None or placed[0] < best):
            best, best_counts = placed
        if progress is not None and best is not None:
            progress(Progress(time.perf_counter() - began, best, lower))
    settled: dict[Picks, float] = {}  # option sets settled: the bound proved (inf: none fits)
    # parked: option sets whose subproblem found no placement in its share and that the master
    # no longer offers; each keeps the master's value when it was chosen, a bound for it
    parked: dict[Picks, float] = {}
    master, master_upper = None, None
    proven, master_result = False, None
    home_cuts: list[HomeCut] = []  # the homes' packing: cuts on z the master keeps
    # once, after the first master; not with sync communication, where transfers block the
    # cores: the floor is a fifth to a half of a placement's latency and ranks options poorly
    search = ll_latency and not instance.sync
    roomy = instance.mode == "ht"
    while True:
        left = clock.left()
        if best is not None and best - lower <= goal * abs(best) + 1e-9:
            proven = True  # the least floor already meets the incumbent
            break
        if left <= 0:
            break
        if master is None or best is not None and (master_upper is None
                                                   or best < 0.98 * master_upper):
            master, master_upper = _master(instance, objective, best, settled, parked,
                                           home_cuts), best
            _cap_milp(master, engine, objective, best)
            clock.charge(master.model.terms, "term")
        t = clock.now()
        clock.charge(master.model.terms, "term")  # its constraints, in CP-SAT's model
        price = "master_dtime" if instance.mode == "ht" else "dtime"
        master_result, values = solve_model(
            master.model, engine, _master_options(instance, engine, options, clock.left(), price))
        clock.charge_solve(master_result, price)
        stats["master_s"] += clock.now() - t
        retry = master_result.status == Status.INFEASIBLE and bool(parked)
        if master_result.status == Status.INFEASIBLE:  # every option set settled or parked
            lower = max(least_floor, min([*settled.values(), *parked.values()],
                                         default=math.inf))
            if not retry:
                proven = True
                break
            # only parked sets are left: the most promising one gets all the time left
            picks = min(parked, key=parked.__getitem__)
            floor = tie = parked.pop(picks)
        else:
            if master_result.bound is not None:  # parked options are outside the master
                lower = max(lower, min(math.ceil(master_result.bound - 1e-9),
                                       min(parked.values(), default=math.inf)))
            if best is not None and best - lower <= goal * abs(best) + 1e-9:
                proven = True
                break
            if values is None:
                break
            picks = _master_picks(master, values)
            if picks in settled:  # its cut already holds the master here: nothing to learn
                proven = (master_result.status == Status.OPTIMAL and best is not None
                          and best <= master_result.objective)
                break
            value = (master_result.objective if master_result.status == Status.OPTIMAL
                     else master_result.bound)
            floor = lower if value is None else math.ceil(value - 1e-9)
            # the sets as good for the master as z*: at most its value, which is the bound
            # only once the master is proven
            tie = (floor if master_result.objective is None
                   else math.ceil(master_result.objective - 1e-9))
        stats["iterations"] += 1
        left = clock.left()
        if left <= 0:
            if retry:
                parked[picks] = floor
            break
        if ll_latency and best is not None:  # no placement beats the set's floor
            clock.charge(sum(layer.windows for layer in instance.layers), "window")
            set_floor = math.ceil(_floor_units(instance, picks) - 1e-9)
            if set_floor >= best:  # nothing to gain: settled at its floor, as the master learns
                settled[picks] = set_floor
                _add_cut(master, picks, set_floor, f"floor{int(stats['iterations'])}")
                stats["floored"] = stats.get("floored", 0.0) + 1
                continue
        placed = _placed(instance, objective, picks, known, clock)
        if placed is None and roomy and (best is None or best > (1 + ROOM_HT_ABOVE) * floor):
            # HT, once, the incumbent far from the master's value: a set with room, placed
            roomy = False
            t = clock.now()
            found = _roomy(instance, objective, master, engine, options, known, clock,
                           ROOM_HT_SHARE * clock.left(), picks, home_cuts, stats)
            stats["room_s"] = clock.now() - t
            if found is not None and (best is None or found[1] < best):
                stats["room_share"] = found[0]
                best, best_counts = found[1:]
                if progress is not None:
                    progress(Progress(time.perf_counter() - began, best, lower))
        # HT: do its homes fit the cores at all? If not, the master learns why, and goes on
        if placed is None and instance.mode == "ht" and (
                cut := _home_cut(instance, picks, home_cuts, clock, stats)) is not None:
            _add_home_cut(master, cut, f"homes{len(home_cuts)}")
            _exclude(master, picks, f"homes_set{len(home_cuts)}")  # whatever the rounding
            settled[picks] = math.inf
            continue
        if (instance.mode == "ht" and placed is not None and not retry
                and placed[0] > (1 + TIES_ABOVE) * floor):
            t = clock.now()
            tied = _ties(instance, objective, master, engine, options, known, clock,
                         TIES_SHARE * clock.left(), picks, tie, placed[0])
            stats["ties_s"] = stats.get("ties_s", 0.0) + clock.now() - t
            if tied is not None:  # an option set as good for the master, placed better
                picks, placed = tied
        if placed is None:  # no greedy placement fits: the packing model's, if it finds one
            left = clock.left()
            t = clock.now()
            placed = _packed(instance, objective, picks, known,
                             min(PACK_SHARE * left, PACK_S), options, clock)
            stats["packing_s"] = stats.get("packing_s", 0.0) + clock.now() - t
        seed = placed[1] if placed is not None else None
        # a placement of z* already: an incumbent whatever CP-SAT finds
        if placed is not None and (best is None or placed[0] < best):
            best, best_counts = placed
            if progress is not None:
                progress(Progress(time.perf_counter() - began, best, lower))
            if best - lower <= goal * abs(best) + 1e-9:
                proven = True  # the set's greedy placement meets the bound: nothing to solve
                break
        if search:  # once: from the best placement so far, leaving the subproblem half
            search = False
            t = clock.now()
            found = _search(instance, objective, best_counts, known,
                            min(SEARCH_SHARE * limit, clock.left() / 2) if limit < math.inf
                            else SEARCH_S, options.seed or 0, clock)
            stats["search_s"] = clock.now() - t
            if found is not None and (best is None or found[0] < best):
                best, best_counts = found
                if progress is not None:
                    progress(Progress(time.perf_counter() - began, best, lower))
        # the subproblem, built after the packing, which needs the time more
        sub = build_model(instance, objective, picks=picks) if clock.left() > 0 else None
        if sub is not None:
            clock.charge(2 * sub.model.terms, "term")  # built, then CP-SAT's
            upper = placed[0] if placed is not None else best
            _cap_milp(sub, engine, objective,  # rounded up: the seed stays feasible
                      None if upper is None else math.ceil(upper))
        left = clock.left()  # placing and building took some
        if left <= 0 or sub is None:
            if retry:
                parked[picks] = floor
            break
        share = left if seed is not None or retry else min(left, limit * UNSEEDED_SHARE)
        t = clock.now()
        result, sub_values = solve_model(
            sub.model, engine, replace(options, time_limit_s=share, relative_gap=goal),
            hint=hint_values(sub, seed) if seed is not None else None)
        clock.charge_solve(result)
        stats["subproblem_s"] += clock.now() - t
        name = f"cut{int(stats['iterations'])}"
        if result.status == Status.INFEASIBLE:
            _exclude(master, picks, name)
            settled[picks] = math.inf
            continue
        if sub_values is None and share < left:  # nothing found in its share: park it
            _exclude(master, picks, name)
            parked[picks] = floor  # the master's value there bounds it
            stats["parked"] += 1
            continue
        if sub_values is not None and not scattered(
                instance, counts := decode_values(sub, sub_values)):
            known[picks] = counts
            if best is None or result.objective < best:
                best, best_counts = result.objective, counts
                if progress is not None:
                    progress(Progress(time.perf_counter() - began, best, lower))
        if result.status == Status.OPTIMAL:
            stats["subproblems_optimal"] += 1
        if result.status != Status.OPTIMAL and (result.bound is None or result.bound <= floor):
            if retry:
                parked[picks] = floor
            break  # the subproblem ran out of time without raising the master's bound
        settled[picks] = math.ceil(result.bound - 1e-9)
        _add_cut(master, picks, settled[picks], name)
    wall = time.perf_counter() - began
    if best is None:
        status = Status.INFEASIBLE if proven else Status.UNKNOWN
        return SolveResult(engine=f"{_engine_name(master_result, engine)}+decomposition",
                           status=status, objective=None, bound=None, gap=None, wall_s=wall,
                           deterministic_s=None, seed=options.seed,
                           stop_reason=StopReason.PROVEN if proven else clock.stop_reason(),
                           stats=stats), None
    lower = min(lower, best)
    gap = relative_gap(best, lower)
    exact = best - lower <= 1e-9
    status = Status.OPTIMAL if exact else Status.FEASIBLE
    reason = StopReason.PROVEN if exact else (
        StopReason.GAP_LIMIT if proven else clock.stop_reason())
    return SolveResult(engine=f"{_engine_name(master_result, engine)}+decomposition",
                       status=status, objective=best, bound=lower, gap=0.0 if exact else gap,
                       wall_s=wall, deterministic_s=None, seed=options.seed,
                       stop_reason=reason, params=master_result.params if master_result else "",
                       stats=stats), best_counts


def _cap_milp(placement: PlacementModel, engine: str, objective: str,
              upper: float | None) -> None:
    """For the MILP engines and a time objective, T at most ``upper`` (model units, a known
    placement's), where one is known (``formulation.cap_time``: the budgets' own bound on T
    misled HiGHS); CP-SAT's models keep that bound."""
    if engine != "cpsat" and upper is not None and objective in ("latency", "throughput"):
        cap_time(placement, upper)


def _roomy(instance: PlacementInstance, objective: str, master: PlacementModel, engine: str,
           options: SolveOptions, known: dict[Picks, list[LayerCounts]], clock: Clock,
           seconds: float, hint: Picks, home_cuts: list[HomeCut], stats: dict[str, float],
           ) -> tuple[float, float, list[LayerCounts]] | None:
    """HT: the master held to each of ``ROOM_HT`` of the crossbars and the local memory in
    turn (``formulation.restrict_room``), each solve given the time left of ``seconds`` and
    the master's option set ``hint`` as a hint, until a greedy placement fits its option
    set: (the share, the placement's value in model units, the placement); None if none did
    in time. Where a set places nowhere, the copy is solved again at the same share (up to
    ``ROOM_HT_TRIES`` sets) without it: cut off by ``home_cut`` where its homes do not fit
    the cores (the cut joins ``home_cuts`` and the master too), else excluded. The copies'
    optima tie, and which of them comes back decides whether one places: googlenet/Arch-C
    HT (10 s, with CP-SAT's implied-bound cuts, which ``MASTER_PARAMS`` now turns off), the
    first set at 0.9 placed nowhere though its homes fit; the next placed at 437.8 us, where
    0.8's first placed at 485.8. Without those cuts the first set at 0.9 places at 437.8
    us. Before the chain term (at 0.9, 4 work-s): hinted with the master's set (which the
    room excludes), the optimum, 419.2 us, in 2.6 deterministic s, a set that places;
    hinted with balance's set 419.2 (2.4 s), a tied set that places nowhere. So the hint
    picks among tied optima more than it speeds the solve."""
    deadline = clock.now() + seconds
    for share in ROOM_HT:
        restricted = restrict_room(master, share)
        clock.charge(restricted.model.terms, "term")
        for attempt in range(ROOM_HT_TRIES):
            if (left := deadline - clock.now()) <= 0:
                return None
            found = _solve_copy(instance, restricted, engine, options, clock, left, hint)
            if found is None:
                break
            placed = _placed(instance, objective, found, known, clock)
            if placed is not None:
                return share, *placed
            if (cut := _home_cut(instance, found, home_cuts, clock, stats)) is not None:
                _add_home_cut(master, cut, f"homes{len(home_cuts)}")
                _add_home_cut(restricted, cut, f"homes{len(home_cuts)}")
            else:  # its homes fit, but no greedy placement does: the next set
                _exclude(restricted, found, f"room_tried{attempt}")
    return None


def _solve_copy(instance: PlacementInstance, copy: PlacementModel, engine: str,
                options: SolveOptions, clock: Clock, seconds: float,
                hint: Picks) -> Picks | None:
    """The option set of a solution of ``copy`` (a restricted master) hinted with ``hint``,
    in ``seconds`` charged to ``clock`` like the master's; None if none was found."""
    result, values = solve_model(
        copy.model, engine, _master_options(instance, engine, options, seconds, "master_dtime"),
        hint={v: int(hint[li] == (ui, ri)) for (li, ui, ri), v in copy.z.items()})
    clock.charge_solve(result, "master_dtime")
    return None if values is None else _master_picks(copy, values)


def _ties(instance: PlacementInstance, objective: str, master: PlacementModel, engine: str,
          options: SolveOptions, known: dict[Picks, list[LayerCounts]], clock: Clock,
          seconds: float, picks: Picks, value: int, placed: float,
          ) -> tuple[Picks, tuple[float, list[LayerCounts]]] | None:
    """HT: up to ``TIES`` option sets other than ``picks`` whose master value is at most
    ``value`` (``formulation.restrict_value``: at the master's optimum, its ties), each
    placed by the greedy placements within ``seconds``; the one placed best (its picks and
    placement) if it beats ``placed`` (model units), else None."""
    deadline = clock.now() + seconds
    tied = restrict_value(master, value)
    _exclude(tied, picks, "tried0")
    clock.charge(tied.model.terms, "term")
    best = None
    for k in range(TIES):
        left = deadline - clock.now()
        if left <= 0:
            break
        other = _solve_copy(instance, tied, engine, options, clock, left, picks)
        if other is None:
            break
        _exclude(tied, other, f"tried{k + 1}")
        found = _placed(instance, objective, other, known, clock)
        if found is not None and found[0] < (placed if best is None else best[1][0]):
            best = other, found
    return best


def _search(instance: PlacementInstance, objective: str, start: list[LayerCounts] | None,
            known: dict[Picks, list[LayerCounts]], seconds: float,
            seed: int, clock: Clock) -> tuple[float, list[LayerCounts]] | None:
    """The best placement (model units, counts) of the option sets ``search_options`` finds
    from ``start``'s, searching for 3/4 of ``seconds`` and placing in the rest (the best
    always); each placed one joins ``known``."""
    began = clock.now()
    origin = picks_of(instance, start) if start is not None else None
    best = None
    found = search_options(instance, origin or tuple((0, 0) for _ in instance.layers),
                           seconds=0.75 * seconds, seed=seed, clock=clock)
    for i, picks in enumerate(found):
        if i and clock.now() - began > seconds:
            break
        placed = _placed(instance, objective, picks, known, clock)
        if placed is not None and (best is None or placed[0] < best[0]):
            best = placed
    return best


def _least_floor(instance: PlacementInstance, upper: float | None,
                 known: dict[Picks, list[LayerCounts]], stats: dict[str, float],
                 seconds: float, clock: Clock | None = None,
                 options: SolveOptions | None = None,
                 ) -> tuple[int, tuple[float, list[LayerCounts]] | None]:
    """LL latency: ``diagram_bound`` in ticks (a lower bound on every placement's latency),
    below ``upper`` (model units; a known placement's), and the placement (``_placed``) of
    the option set its restricted diagram found (or, where none fits it, of the first set
    that places of the restricted diagrams within ``ROOM_SHARES``), improved by
    ``local.polish``; where no greedy placement fits the diagram's set or (several chips)
    that is not within ``PACK_ABOVE`` of its floor, also ``_packed``'s placement of the
    set, polished, if better. All within ``clock``'s limit (a new wall clock without one if
    None); time, budget and bound go to ``stats``."""
    clock, options = clock or Clock(), options or SolveOptions()
    scale = objective_scale("latency")
    deadline = clock.limit
    t = clock.now()
    found = diagram_bound(instance, seconds, upper=math.inf if upper is None else upper / scale,
                          clock=clock)
    ticks = max(0, math.floor(found.bound_ns * scale - 1e-6)) if math.isfinite(
        found.bound_ns) else 0  # inf: no option set fits; the loop finds that out itself
    stats.update(diagram_s=clock.now() - t, diagram_cells=float(found.cells),
                 diagram_bound=float(ticks))
    placed = _placed(instance, "latency", found.picks, known, clock) if found.picks else None
    greedy_fits = placed is not None
    if placed is None:
        until = min(deadline, clock.now() + ROOM_TIME * seconds)
        tried = {found.picks}
        for share in ROOM_SHARES:
            if clock.now() > until:
                break
            roomy = floor_options(instance, ROOM_CELLS, deadline=until, share=share,
                                  counted=PRIMAL_COUNTED, clock=clock)
            if roomy is None or roomy[1] in tried:
                continue
            tried.add(roomy[1])
            if (placed := _placed(instance, "latency", roomy[1], known, clock)) is not None:
                stats["room_share"] = share
                break
    placed = _polished(instance, placed, known, stats, seconds, clock)
    floor = _floor_units(instance, found.picks) if found.picks else math.inf
    # a placement is no better than its set's floor: nothing to pack where that is behind
    if (floor < (math.inf if placed is None else placed[0])
            and (not greedy_fits or instance.chips > 1 and placed[0] > floor * (1 + PACK_ABOVE))):
        t = clock.now()
        packed = _packed(instance, "latency", found.picks, known,
                         min(PACK_LL * max(0.0, clock.left()), PACK_S), options, clock)
        stats["packing_s"] = clock.now() - t
        packed = _polished(instance, packed, known, stats, seconds, clock)
        if packed is not None and (placed is None or packed[0] < placed[0]):
            placed = packed
    if found.starved and placed is not None:
        placed = _wider(instance, placed, stats.get("room_share", 1.0), known, stats, seconds,
                        clock)
    return ticks, placed


def _wider(instance: PlacementInstance, placed: tuple[float, list[LayerCounts]],
           share: float, known: dict[Picks, list[LayerCounts]], stats: dict[str, float],
           seconds: float, clock: Clock) -> tuple[float, list[LayerCounts]]:
    """LL latency, where the diagram starved: the option sets of restricted diagrams
    keeping ``WIDE_NODES`` a layer in turn (``share`` of the room), placed (``_placed``), until
    ``clock``'s limit; the best placement, polished, where it beats ``placed`` (model
    units)."""
    began = clock.now()
    best, spent = placed, 0.0
    for least in WIDE_NODES:
        if spent and WIDE_NEXT * spent > clock.left():
            break
        t = clock.now()
        found = floor_options(instance, ROOM_CELLS, deadline=clock.limit, share=share,
                              counted=PRIMAL_COUNTED, clock=clock, least=least,
                              work="wide_cell")
        spent = clock.now() - t
        if found is None or found[1] in known:  # out of time, or nothing new
            continue
        if found[0] * objective_scale("latency") >= best[0]:  # no placement beats its floor
            continue
        now = _placed(instance, "latency", found[1], known, clock)
        if now is not None and now[0] < best[0]:
            best = now
            stats["wide_nodes"] = float(least)
    stats["wide_s"] = clock.now() - began
    return best if best is placed else _polished(instance, best, known, stats, seconds, clock)


def _floor_units(instance: PlacementInstance, picks: Picks) -> float:
    """LL: ``evaluate.floor_latency`` of ``picks`` in model units."""
    reps = [layer.replications[ri] for layer, (_, ri) in zip(instance.layers, picks,
                                                               strict=True)]
    return floor_latency(instance, [ui for ui, _ in picks], reps) * objective_scale("latency")


def _polished(instance: PlacementInstance, placed: tuple[float, list[LayerCounts]] | None,
              known: dict[Picks, list[LayerCounts]], stats: dict[str, float], seconds: float,
              clock: Clock) -> tuple[float, list[LayerCounts]] | None:
    """``placed`` improved by ``local.polish`` (``POLISH_TIME`` of ``seconds``, within
    ``clock``'s limit), in model units."""
    if placed is None:
        return None
    t = clock.now()
    counts = polish(instance, placed[1], max(0.0, min(POLISH_TIME * seconds, clock.left())),
                    clock=clock)
    stats["polish_s"] = stats.get("polish_s", 0.0) + clock.now() - t
    value = _model_units(instance, "latency", counts)
    if value >= placed[0]:
        return placed
    known[picks_of(instance, counts)] = counts
    return value, counts


def _placed(instance: PlacementInstance, objective: str, picks: Picks,
            known: dict[Picks, list[LayerCounts]],
            clock: Clock) -> tuple[float, list[LayerCounts]] | None:
    """``_seed``'s placement of ``picks`` (which joins ``known``) and its value in model
    units; None if no greedy placement fits."""
    counts = _seed(instance, objective, picks, known, clock)
    if counts is None:
        return None
    known[picks] = counts
    return _model_units(instance, objective, counts), counts


def _packed(instance: PlacementInstance, objective: str, picks: Picks,
            known: dict[Picks, list[LayerCounts]], seconds: float,
            options: SolveOptions, clock: Clock) -> tuple[float, list[LayerCounts]] | None:
    """``packing.pack_exact``'s placement of ``picks`` (which joins ``known``) and its value
    in model units; None if it finds none in ``seconds`` (or these are under
    ``PACK_MIN_S``)."""
    if seconds < PACK_MIN_S:
        return None
    choices = [ui for ui, _ in picks]
    reps = [layer.replications[ri] for layer, (_, ri) in zip(instance.layers, picks,
                                                               strict=True)]
    counts = pack_exact(instance, choices, reps, seconds=seconds, seed=options.seed or 0,
                        workers=options.workers, clock=clock)
    if counts is None or scattered(instance, counts):
        return None
    known[picks] = counts
    return _model_units(instance, objective, counts), counts


def _master_options(instance: PlacementInstance, engine: str, options: SolveOptions,
                    seconds: float, price: str) -> SolveOptions:
    """A master's (or a restricted copy's) solve: ``seconds``, no gap limit, ``MASTER_WORKERS``
    and, in HT with CP-SAT, ``MASTER_PARAMS`` beside the user's parameters."""
    params = options.params
    if engine == "cpsat" and instance.mode == "ht":
        params = merge_parameters(MASTER_PARAMS, params)
    return replace(options, time_limit_s=seconds, relative_gap=None, params=params,
                   workers=min(options.workers, MASTER_WORKERS), work_price=price)


def _master(instance: PlacementInstance, objective: str, upper: float | None,
            settled: dict[Picks, float], parked: dict[Picks, float],
            home_cuts: list[HomeCut]) -> PlacementModel:
    """The master for placements better than ``upper`` (model units), with every settled
    option set's cut and the homes' packing cuts, and without the parked ones."""
    master = build_master(instance, objective,
                          upper=None if upper is None else math.floor(upper))
    for i, cut in enumerate(home_cuts):
        _add_home_cut(master, cut, f"homes{i + 1}")
    for i, (picks, value) in enumerate(settled.items()):
        if value == math.inf:
            _exclude(master, picks, f"settled{i}")
        else:
            _add_cut(master, picks, value, f"settled{i}")
    for i, picks in enumerate(parked):
        _exclude(master, picks, f"parked{i}")
    return master


def _model_units(instance: PlacementInstance, objective: str,
                 counts: list[LayerCounts]) -> float:
    """``predict``'s objective in the model's units, rounded up (an upper bound: the model
    rounds each term up to its unit)."""
    value = predict(instance, counts).objective(objective) * objective_scale(objective)
    return math.ceil(value * 1.0001) + 2


def _engine_name(result: SolveResult | None, engine: str) -> str:
    return result.engine if result is not None else engine
