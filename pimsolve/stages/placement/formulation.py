"""Exact replication and array-group placement (PIMCOMP Sec. VI as one integer model).

Written up in ``formulations/placement.md`` with the same symbols. The model is built once as a
``solve.model.IntModel`` and solved by CP-SAT or by a MILP engine; ``decode`` turns its values
into per-core counts and ``evaluate.decode`` into a Mapping. ``evaluate.predict`` computes the
very same objective for any placement, which the brute-force tests use.

Time is in ticks of 0.01 ns; a resource with cost ``c`` ns per unit enters as the rational
``c * 100`` ticks, and each constraint ``T >= sum(c_i x_i)`` is multiplied by the common
denominator, so both engines solve exactly the model ``predict`` evaluates (up to the tick).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from pimsolve.errors import InfeasibleError, InputError
from pimsolve.solve.model import Expr, IntModel, Var, total
from pimsolve.stages.placement.evaluate import (
    CHAIN_GM_SHARE,
    CHAIN_TAIL_SHARE,
    PERIOD_NS,
    LayerCounts,
    chip_crossings,
    core_floors,
    floor_span,
    home_floor,
    per_core,
    pipeline,
    predict,
    replica_bounds,
    span_floors,
    window_ns,
    window_ready,
)
from pimsolve.stages.placement.instance import Choice, PlacementInstance

__all__ = ["TICKS_PER_NS", "ENERGY_UNIT_PJ", "PlacementModel", "build_model", "build_master",
           "cap_time", "restrict_room", "restrict_value", "decode_values", "hint_values",
           "objective_scale", "core_counts"]

TICKS_PER_NS = round(1 / PERIOD_NS)
"""The model's time unit, the tick: 0.01 ns (``evaluate.PERIOD_NS``, the LL window period's
rounding, is one tick)."""
ENERGY_UNIT_PJ = 1000
"""EDP multiplies energy in nJ (ceil) by time in ticks."""


@functools.lru_cache(maxsize=65_536)
def _ticks(ns: float) -> Fraction:
    return Fraction(ns * TICKS_PER_NS).limit_denominator(10_000)


@functools.lru_cache(maxsize=64)
def _ns_per_byte(bytes_per_ns: float) -> Fraction:
    """A bandwidth's time per byte, as the model's coefficients take it."""
    return Fraction(1) / Fraction(bytes_per_ns).limit_denominator(10_000)


def _floor_ticks(instance: PlacementInstance) -> tuple[Callable[[Choice], Fraction],
                                                       Callable[[float], Fraction],
                                                       Callable[[float], Fraction]]:
    """t^is per AG-window, a transfer's time on a core's link and on the off-chip link, in
    ticks as the model's LL floors count them (the ``issue``, ``link`` and ``offlink`` of
    ``evaluate.core_floors``; ``home_floor`` takes the first two)."""
    link = _ns_per_byte(instance.link_bytes_per_ns)
    off = (_ns_per_byte(instance.offchip_bytes_per_ns)
           if instance.offchip_bytes_per_ns is not None else Fraction(0))
    return (lambda u: Fraction(math.ceil(_ticks(u.issue_ns))),
            lambda nbytes: _ticks(nbytes) * link,
            lambda nbytes: _ticks(nbytes) * off)


@dataclass
class PlacementModel:
    """The model and the variables ``decode_values`` and ``hint_values`` need."""

    model: IntModel
    instance: PlacementInstance
    objective: str
    z: dict[tuple[int, int, int], Var]
    """z[l, u, r_index]: layer l uses unfolding u and replication R_l[r_index]."""
    y: dict[tuple[int, int, int], Var]
    rho: dict[tuple[int, int, int], Var]
    ell: dict[tuple[int, int, int], Var]
    shared: dict[tuple[int, int], Var]
    """HT, layers whose replicas overlap: b[l, k] = 1 if core k is home to any replica of l."""
    time: Var
    energy: Var | None


class _Budget:
    """Collects ``T >= sum(coef * expr) + const`` with rational coefficients."""

    def __init__(self) -> None:
        self.terms: list[tuple[Fraction, Expr]] = []
        self.constant = Fraction(0)

    def add(self, coef: Fraction, expr: Expr | Var) -> None:
        if coef:
            self.terms.append((coef, Expr.of(expr)))

    def upper(self, model: IntModel) -> int:
        """The largest value the right-hand side can take, rounded up."""
        return math.ceil(self.constant + sum(c * model.bounds_of(e)[1] for c, e in self.terms))

    def bound(self, model: IntModel, time: Var, name: str) -> None:
        if not self.terms and not self.constant:
            return
        den = math.lcm(*(c.denominator for c, _ in self.terms), self.constant.denominator)
        body = total(e * int(c * den) for c, e in self.terms)
        model.add(time * den - body, lo=math.ceil(self.constant * den), name=name)


def build_model(instance: PlacementInstance, objective: str, *,
                picks: Sequence[tuple[int, int]] | None = None) -> PlacementModel:
    """The integer model of placing ``instance`` for ``objective``.

    ``picks[l] = (u, r_index)`` fixes every layer's unfolding and replication: m and lam are
    then constants, every product is linear, and the model is the decomposition's subproblem
    (``decompose.py``): place the AGs of that choice on the cores.
    """
    _check_objective(objective)
    model = IntModel(f"placement {instance.model} on {instance.target} ({instance.mode})")
    K, C = instance.cores, instance.crossbars_per_core
    ht = instance.mode == "ht"
    z = _choice_vars(model, instance, picks)
    y, rho, ell, shared = {}, {}, {}, {}
    m_of, lam_of, delta_of = [], [], []
    for li, layer in enumerate(instance.layers):
        mine = [ri for (a, _, ri) in z if a == li]
        ms = [layer.windows_per_replica(layer.replications[ri]) for ri in mine]
        lams = [layer.load_bytes[ri] for ri in mine]
        deltas = [layer.overlap(ri) for ri in mine]
        m = model.var(min(ms), max(ms), f"m[{layer.name}]")
        model.equal(m - total(v * layer.windows_per_replica(layer.replications[ri])
                              for (a, _, ri), v in z.items() if a == li), 0,
                    f"m[{layer.name}]")
        m_of.append(m)
        if ht:
            lam = model.var(min(lams), max(lams), f"lam[{layer.name}]")
            model.equal(lam - total(v * layer.load_bytes[ri]
                                    for (a, _, ri), v in z.items() if a == li), 0,
                        f"lam[{layer.name}]")
            lam_of.append(lam)
            delta = None
            if max(deltas) > 0:
                delta = model.var(min(deltas), max(deltas), f"delta[{layer.name}]")
                model.equal(delta - total(v * layer.overlap(ri)
                                          for (a, _, ri), v in z.items() if a == li), 0,
                            f"delta[{layer.name}]")
            delta_of.append(delta)
        for ui, u in _used_choices(layer, li, picks):
            top = C // u.crossbars_per_ag
            for k in range(K):
                y[li, ui, k], rho[li, ui, k], ell[li, ui, k] = core_counts(
                    model, instance, u, f"{layer.name},{u.unfolding},{k}", top, top)
            reps = total(v * layer.replications[ri]
                         for (a, b, ri), v in z.items() if a == li and b == ui)
            model.equal(total(y[li, ui, k] for k in range(K)) - reps * u.ags, 0,
                        f"ags[{layer.name},{u.unfolding}]")
            model.equal(total(rho[li, ui, k] for k in range(K)) - reps, 0,
                        f"homes[{layer.name},{u.unfolding}]")
        if ht and delta_of[li] is not None:
            most = max(layer.replications[ri] for ri in mine)
            for k in range(K):
                shared[li, k] = b = model.boolean(f"b[{layer.name},{k}]")
                model.add(b * most - total(rho[li, ui, k] for ui, _ in
                                           _used_choices(layer, li, picks)), lo=0)
    for k in range(K):
        model.add(total(y[li, ui, k] * u.crossbars_per_ag
                        for li, layer in enumerate(instance.layers)
                        for ui, u in _used_choices(layer, li, picks)), hi=C,
                  name=f"crossbars[{k}]")
    if instance.local_memory_bytes is not None:
        for k in range(K):
            model.add(total(rho[li, ui, k] * instance.replica_bytes(li, ui)
                            + (y[li, ui, k] - ell[li, ui, k]) * u.remote_bytes
                            for li, layer in enumerate(instance.layers)
                            for ui, u in _used_choices(layer, li, picks)),
                      hi=instance.local_memory_bytes, name=f"memory[{k}]")
    if instance.max_layers_per_core is not None:
        for k in range(K):
            present = []
            for li, layer in enumerate(instance.layers):
                b = model.boolean(f"on[{layer.name},{k}]")
                used = _used_choices(layer, li, picks)
                top = max(C // u.crossbars_per_ag for _, u in used)
                model.add(b * top - total(y[li, ui, k] for ui, _ in used), lo=0)
                present.append(b)
            model.add(total(present), hi=instance.max_layers_per_core, name=f"layers[{k}]")
    # symmetry: the cores of a chip are identical to the model; order them by crossbars used
    per_chip = instance.cores_per_chip
    used = [total(y[li, ui, k] * u.crossbars_per_ag for li, layer in enumerate(instance.layers)
                  for ui, u in _used_choices(layer, li, picks)) for k in range(K)]
    for k in range(K - 1):
        if (k + 1) % per_chip:
            model.add(used[k] - used[k + 1], lo=0, name=f"order[{k}]")

    time = model.var(0, 1, "T")  # bound widened below, once the budgets are known
    budgets: dict[str, _Budget] = {}

    def budget(name: str) -> _Budget:
        return budgets.setdefault(name, _Budget())

    link = _ns_per_byte(instance.link_bytes_per_ns)
    gbw = _ns_per_byte(instance.gm_bytes_per_ns)
    travel_bytes: list[tuple[int, Expr]] = []
    saved_bytes: list[Expr] = []
    windows: dict[tuple[int, int, int], tuple[Var, Var, Var]] = {}  # (py, pr, pe) per (l, u, k)
    for li, layer in enumerate(instance.layers):
        m = m_of[li]
        agb = budget(f"ag[{layer.name}]")
        for (a, ui, ri), v in z.items():
            if a == li:
                u = layer.choices[ui]
                agb.add(_ticks(u.ag_ns) * layer.windows_per_replica(layer.replications[ri]), v)
        for ui, u in _used_choices(layer, li, picks):
            for k in range(K):
                py = model.product(y[li, ui, k], m, f"Py[{layer.name},{u.unfolding},{k}]")
                pr = model.product(rho[li, ui, k], m, f"Pr[{layer.name},{u.unfolding},{k}]")
                pe = model.product(ell[li, ui, k], m, f"Pe[{layer.name},{u.unfolding},{k}]")
                windows[li, ui, k] = py, pr, pe
                away = pr * u.ags - pe
                came = py - pe
                budget(f"issue[{k}]").add(_ticks(u.issue_ns), py)
                if instance.sync:
                    serial = budget(f"serial[{k}]")
                    serial.add(_ticks(u.issue_ns), py)
                    serial.add((_ticks(u.in_bytes) + _ticks(u.out_bytes)) * link, away)
                    serial.add((_ticks(u.in_bytes) + _ticks(u.out_bytes)) * link, came)
                budget(f"vfu[{k}]").add(_ticks(u.home_vfu_ns), pr)
                budget(f"local[{k}]").add(_ticks(u.home_local_ns), pr)
                out, inn = budget(f"net_out[{k}]"), budget(f"net_in[{k}]")
                out.add(_ticks(u.in_bytes) * link, away)
                out.add(_ticks(u.out_bytes) * link, came)
                inn.add(_ticks(u.out_bytes) * link, away)
                inn.add(_ticks(u.in_bytes) * link, came)
                travel_bytes.append((int(u.in_bytes + u.out_bytes), away))
                if ht:
                    # loads: lam rho - delta (rho - b), the homes of a core share overlaps
                    loads = model.product(rho[li, ui, k], lam_of[li],
                                          f"Pl[{layer.name},{u.unfolding},{k}]")
                    if delta_of[li] is not None:
                        pd = model.product(rho[li, ui, k], delta_of[li],
                                           f"Pd[{layer.name},{u.unfolding},{k}]")
                        loads = loads - pd
                        saved_bytes.append(pd * -1)
                    for name in (f"gport[{k}]", f"gm[{k // per_chip}]"):
                        budget(name).add(_ticks(1) * gbw, loads)
                        budget(name).add(_ticks(layer.store_bytes) * gbw, pr)
                else:
                    inn.add(_ticks(layer.input_bytes) * link, pr)
                    out.add(_ticks(layer.store_bytes) * link, pr)
                    if instance.sync:
                        budget(f"serial[{k}]").add(
                            (_ticks(layer.input_bytes) + _ticks(layer.store_bytes)) * link, pr)
            if ht and delta_of[li] is not None:
                for k in range(K):
                    pb = model.product(shared[li, k], delta_of[li], f"Pb[{layer.name},{k}]")
                    saved_bytes.append(pb)
                    for name in (f"gport[{k}]", f"gm[{k // per_chip}]"):
                        budget(name).add(_ticks(1) * gbw, pb)
    budgets.update(_aggregate_cuts(instance, z))
    crossings, sent = _chip_crossings(model, instance, z, picks, windows, budget("offchip"))
    if ht:
        for k in range(K):
            budget(f"vfu[{k}]").constant += _ticks(instance.vector_core_ns["vfu"])
            budget(f"gport[{k}]").constant += _ticks(instance.vector_core_ns["gport"])
            budget(f"gm[{k // per_chip}]").constant += _ticks(instance.vector_core_ns["gport"])
        mean = _Budget()  # the chips' mean global memory, sum_c gm[c] / chips
        for name, b in budgets.items():
            if name.startswith("gm["):
                mean.terms += [(c / instance.chips, e) for c, e in b.terms]
                mean.constant += b.constant / instance.chips
        _chain_rows(model, budgets, [mean, budgets["all_gm"]])
    else:
        _critical_path(model, instance, z, budget, windows, sent)
    for name, b in budgets.items():
        b.bound(model, time, name)
    model.upper[time.index] = _time_upper(model, budgets)

    energy = _objective(model, instance, objective, z, time, travel_bytes, saved_bytes,
                        crossings)
    return PlacementModel(model, instance, objective, z, y, rho, ell, shared, time, energy)


def _chip_crossings(model: IntModel, instance: PlacementInstance, z, picks, windows,
                    offchip: _Budget) -> tuple[list[tuple[Fraction, Expr]],
                                               dict[int, list[Var]]]:
    """Several chips: T >= (bytes over the off-chip link) / its bandwidth, the bytes counted as

    * per layer, unfolding and chip c: o >= sum_{k in c} (Py - A_u Pr), AG-windows run on c
      for replicas homed elsewhere, each with its input slice and partial sums;
    * LL, per edge e: x >= phi_n (B_e - sum_c v_c / den_e) for the number n of cores homing
      the consumer's replicas (``_home_cores``), v_c the overlap of chip c's producer and
      consumer window ranges (replicas take ranges in core order, so chip c's range runs
      from the prefix sum of the chips before it):
      v_c <= P_c, Q_c, P_{<=c} - Q_{<c}, Q_{<=c} - P_{<c} when g_c = 1, v_c = 0 when g_c = 0
      (disjoint ranges).

    The first is a lower bound on what codegen sends; the second an estimate (phi spreads
    the rows replicas share evenly). Returns the (bytes per unit, variable) terms for the
    energy, and per layer the x of the direct edges it sends (LL floors)."""
    if instance.offchip_bytes_per_ns is None:
        return [], {}
    per_chip = instance.cores_per_chip
    link = _ns_per_byte(instance.offchip_bytes_per_ns)
    terms: list[tuple[Fraction, Expr]] = []
    sent: dict[int, list[Var]] = {li: [] for li in range(len(instance.layers))}
    homed: dict[tuple[int, int], Expr] = {}
    for li, layer in enumerate(instance.layers):
        used = _used_choices(layer, li, picks)
        for chip in range(instance.chips):
            cores = range(chip * per_chip, (chip + 1) * per_chip)
            homed[li, chip] = total(windows[li, ui, k][1] for ui, _ in used for k in cores)
            for ui, u in used:
                excess = total(windows[li, ui, k][0] - windows[li, ui, k][1] * u.ags
                               for k in cores)
                o = model.var(0, max(0, model.bounds_of(excess)[1]),
                              f"o[{layer.name},{u.unfolding},{chip}]")
                model.add(o - excess, lo=0)
                terms.append((Fraction(u.in_bytes + u.out_bytes), Expr.of(o)))
    if instance.mode == "ll":
        spread: dict[int, dict[int, Var]] = {}
        for e in instance.edges:
            a, b, den = instance.edge_rates(e)
            name = f"{instance.layers[e.producer].name}->{instance.layers[e.consumer].name}"
            made = [homed[e.producer, chip] * a for chip in range(instance.chips)]
            taken = [homed[e.consumer, chip] * b for chip in range(instance.chips)]
            big = model.bounds_of(total(made))[1] + model.bounds_of(total(taken))[1]
            shared = []
            for chip in range(instance.chips):
                # v <= max(0, min(P_c, Q_c, P_<=c - Q_<c, Q_<=c - P_<c)): g = 0 forces v = 0
                v = model.var(0, max(0, min(model.bounds_of(made[chip])[1],
                                            model.bounds_of(taken[chip])[1])),
                              f"v[{name},{chip}]")
                g = model.boolean(f"g[{name},{chip}]")
                model.add(v - made[chip], hi=0)
                model.add(v - taken[chip], hi=0)
                model.add(v - g * big, hi=0)
                for ours, theirs in ((made, taken), (taken, made)):
                    model.add(v - total(ours[:chip + 1]) + total(theirs[:chip]) + g * big,
                              hi=big)
                shared.append(v)
            if e.consumer not in spread:
                most = max(instance.layers[e.consumer].replications[ri]
                           for (li, _, ri) in z if li == e.consumer)
                spread[e.consumer] = _home_cores(model, instance, e.consumer, windows, most)
            phis = {n: instance.fanout(e.consumer, n) for n in spread[e.consumer]}
            x = model.var(0, math.ceil(max(phis.values()) * e.nbytes), f"x[{name}]")
            for n, wv in spread[e.consumer].items():  # x >= phi_n (B_e - sum_c v_c / den)
                k, q = phis[n].numerator, phis[n].denominator
                most = k * e.nbytes * den
                model.add(x * (den * q) + total(shared) * k - wv * most, lo=0)
            terms.append((Fraction(1), Expr.of(x)))
            if e.direct:
                sent[e.producer].append(x)
    for nbytes, v in terms:
        offchip.add(_ticks(nbytes) * link, v)
    return terms, sent


def _home_cores(model: IntModel, instance: PlacementInstance, li: int,
                windows, most: int) -> dict[int, Var]:
    """w[l, n] = 1 iff n cores home replicas of layer l: h[l, k] = [core k homes one]
    (P^rho_k <= big h_k, h_k <= P^rho_k), sum_n w_n = 1, sum_n n w_n = sum_k h_k; n is at
    most ``most``, the largest replication the model offers l."""
    layer = instance.layers[li]
    homes = []
    for k in range(instance.cores):
        pr = total(windows[li, ui, k][1] for ui in range(len(layer.choices))
                   if (li, ui, k) in windows)
        h = model.boolean(f"h[{layer.name},{k}]")
        model.add(pr - h * max(1, model.bounds_of(pr)[1]), hi=0)
        model.add(h - pr, hi=0)
        homes.append(h)
    w = {n: model.boolean(f"w[{layer.name},{n}]")
         for n in range(1, min(most, len(layer.spread_bytes)) + 1)}
    model.add(total(w.values()), lo=1, hi=1)
    model.add(total(v * n for n, v in w.items()) - total(homes), lo=0, hi=0)
    return w


def core_counts(model: IntModel, instance: PlacementInstance, u: Choice, name: str,
                most: int, homes: int) -> tuple[Var, Var, Var]:
    """y, rho, ell of one layer's AGs on one core (``name``: the variables' index), at most
    ``most`` AGs and ``homes`` homes, tied as every placement has them: q_u rho <= ell <=
    min(y, A_u rho) (a home keeps q_u = ``home_least`` of its replica's AGs at least, all at
    most) and, in core mode, y = ell = A_u rho (whole replicas on a core)."""
    y = model.var(0, most, f"y[{name}]")
    rho = model.var(0, homes, f"rho[{name}]")
    ell = model.var(0, most, f"ell[{name}]")
    model.add(ell - y, hi=0)
    model.add(ell - rho * u.ags, hi=0)
    model.add(ell - rho * instance.home_least(u), lo=0)
    if instance.computing_mode == "CM":
        model.equal(y - ell)
        model.equal(y - rho * u.ags)
    return y, rho, ell


def build_master(instance: PlacementInstance, objective: str, *,
                 upper: int | None = None) -> PlacementModel:
    """The decomposition's master: only the options z, the total crossbars, the cuts of
    ``_aggregate_cuts`` (and in LL ``_path_relaxation``, the window pipeline in z alone).
    Its optimum is a lower bound on ``build_model``'s for every option, and a cut
    ``T >= v`` per option the subproblem has settled makes it exact (``decompose.py``).

    ``upper`` (ticks; time objectives): a known placement's T. Placements better than it
    hold fewer homes per core, which tightens the shared-loads cut (see ``_homes_per_core``).
    """
    _check_objective(objective)
    model = IntModel(f"placement master {instance.model} on {instance.target} "
                     f"({instance.mode})")
    C = instance.crossbars_per_core
    z = _choice_vars(model, instance, None)
    _room_cuts(model, instance, z)
    _layer_memory_cuts(model, instance, z)
    time = model.var(0, 1, "T")
    if objective not in ("latency", "throughput"):
        upper = None
    budgets = _aggregate_cuts(instance, z, upper)
    if instance.mode == "ll":
        _critical_path(model, instance, z, lambda name: budgets.setdefault(name, _Budget()))
    else:
        _chain_rows(model, budgets, [budgets["all_gm"]])
    for name, b in budgets.items():
        b.bound(model, time, name)
    model.upper[time.index] = _time_upper(model, budgets)
    travel, saved = [], []
    for (li, ui, ri), v in z.items():
        layer = instance.layers[li]
        u, r = layer.choices[ui], layer.replications[ri]
        remote = _forced_remote(u, C) * r * layer.windows_per_replica(r)
        travel.append((int(u.in_bytes + u.out_bytes), v * remote))
        if instance.mode == "ht":
            saved.append(v * (_loads_at_least(instance, li, ui, ri, upper)
                              - layer.load_bytes[ri] * r))
    energy = _objective(model, instance, objective, z, time, travel, saved)
    return PlacementModel(model, instance, objective, z, {}, {}, {}, {}, time, energy)


def cap_time(placement: PlacementModel, upper: float) -> None:
    """T <= ``upper`` (ticks), for the MILP engines, on a master or a subproblem: the
    budgets' own bound on T, every option at its worst (the master) or every AG on one core
    (the subproblem), can be thousands of times the optimum, and T times a budget's
    denominator then reaches 10^15, where HiGHS returned T's upper bound as googlenet/PUMA
    HT's master optimum (CP-SAT: 1230 us). CP-SAT's integer arithmetic needs no cap, and a
    cap changes which of the master's tied option sets it returns (the simulator tells some
    apart by up to a third: googlenet/ISAAC HT's placement 1321 -> 1654 us simulated, 1085 ->
    1074 us in the model), so CP-SAT's models keep the budgets' bound."""
    t = placement.time.index
    placement.model.upper[t] = max(placement.model.lower[t],
                                   min(placement.model.upper[t], math.floor(upper)))


def restrict_room(master: PlacementModel, room: float) -> PlacementModel:
    """A copy of ``master`` (its cuts included) whose option sets use at most ``room`` of the
    crossbars and of the local memory summed over the cores: a restriction, so its optimum
    bounds nothing; its option sets leave the greedy placements room where the master's
    fill every core (googlenet on Arch-C, HT: the master's sets need 99.3% of the local
    memory for their homes and no greedy places them; held to 0.9, one places)."""
    copy = _copy(master)
    _room_cuts(copy.model, master.instance, master.z, room, "room_")
    return copy


def restrict_value(master: PlacementModel, value: int) -> PlacementModel:
    """A copy of ``master`` (its cuts included) whose objective is at most ``value`` (model
    units): at the master's optimum, the option sets that tie with it, which greedy
    placements place differently (resnet18-28/ISAAC HT: five of the master's optimal sets
    place at 109.8, 105.9, 105.9, 105.9 and 108.5 us); a restriction, bounds nothing."""
    copy = _copy(master)
    copy.model.add(copy.model.objective, hi=value, name="tie")
    return copy


def _copy(master: PlacementModel) -> PlacementModel:
    m = master.model
    model = dataclasses.replace(m, lower=list(m.lower), upper=list(m.upper),
                                names=list(m.names), constraints=list(m.constraints),
                                products=list(m.products), implied=set(m.implied))
    return dataclasses.replace(master, model=model)


def _room_cuts(model: IntModel, instance: PlacementInstance, z, share: float = 1.0,
               prefix: str = "") -> None:
    """The options' crossbars and local memory (``option_memory``), summed over the cores,
    within ``share`` of the K C and K M there are: valid for every placement of the options
    with ``share`` 1."""
    top = instance.local_memory_bytes
    model.add(total(v * (layer.replications[ri] * layer.choices[ui].ags
                         * layer.choices[ui].crossbars_per_ag)
                    for (li, ui, ri), v in z.items() for layer in (instance.layers[li],)),
              hi=math.floor(instance.cores * instance.crossbars_per_core * share),
              name=f"{prefix}crossbars")
    if top is not None:
        model.add(total(v * option_memory(instance, *key)[0] for key, v in z.items()),
                  hi=math.floor(instance.cores * top * share), name=f"{prefix}memory")


def _layer_memory_cuts(model: IntModel, instance: PlacementInstance, z) -> None:
    """Local memory per layer on the core holding the most of its homes (ceil(r / K) of
    them): valid for every placement of the options."""
    top = instance.local_memory_bytes
    if top is None:
        return
    for li, layer in enumerate(instance.layers):
        model.add(total(v * option_memory(instance, *key)[1] for key, v in z.items()
                        if key[0] == li), hi=top, name=f"memory[{layer.name}]")


def option_memory(instance: PlacementInstance, li: int, ui: int, ri: int) -> tuple[int, int]:
    """Local memory option (u, r) of layer ``li`` needs in every placement: summed over the
    cores (each home's buffers, and each AG no home can keep), and on the core holding the
    most homes (ceil(r / K) of them)."""
    layer = instance.layers[li]
    u, r = layer.choices[ui], layer.replications[ri]
    home = instance.replica_bytes(li, ui)
    return (r * (home + _forced_remote(u, instance.crossbars_per_core) * u.remote_bytes),
            home * -(-r // instance.cores))


def _homes_per_core(instance: PlacementInstance, li: int, ui: int, ri: int,
                    upper: int | None) -> int:
    """The most homes of a layer's replicas one core can hold: each keeps at least one AG
    (all in core mode) and its buffers; below ``upper`` ticks, each home also runs m windows
    of an AG, its adds and its copies on that core's issue slots, vector unit and port, and
    the AGs beyond the C / X the core holds exchange their slices and partial sums over
    its link."""
    layer = instance.layers[li]
    u, m = layer.choices[ui], layer.windows_per_replica(layer.replications[ri])
    most = instance.crossbars_per_core // (
        u.crossbars_per_ag * (u.ags if instance.computing_mode == "CM" else 1))
    need = instance.replica_bytes(li, ui)
    if instance.local_memory_bytes is not None and need:
        most = min(most, instance.local_memory_bytes // need)
    if upper is not None:
        vfu0 = _ticks(instance.vector_core_ns["vfu"]) if instance.mode == "ht" else 0
        for ns, fixed in ((u.issue_ns, 0), (u.home_vfu_ns, vfu0), (u.home_local_ns, 0)):
            if ns > 0:
                most = min(most, math.floor((upper - fixed) / (_ticks(ns) * m)))
        # h homes keep at most C / X of their h A AGs on the core; each other AG sends its
        # partial sums in and takes its input slice out, m times, over the core's link
        link = _ns_per_byte(instance.link_bytes_per_ns)
        kept = instance.crossbars_per_core // u.crossbars_per_ag
        for nbytes in (u.out_bytes, u.in_bytes):
            if nbytes > 0:
                most = min(most, math.floor((upper / (_ticks(nbytes) * link * m) + kept)
                                            / u.ags))
    return max(1, most)


def _loads_at_least(instance: PlacementInstance, li: int, ui: int, ri: int,
                    upper: int | None = None) -> int:
    """HT loads of all r replicas summed over the cores, at least: (lam - delta) r plus
    delta per core holding homes, of which there are at least ceil(r / most per core)."""
    layer = instance.layers[li]
    r = layer.replications[ri]
    lam, delta = layer.load_bytes[ri], layer.overlap(ri)
    cores = -(-r // _homes_per_core(instance, li, ui, ri, upper))
    return (lam - delta) * r + delta * cores


def _forced_remote(u, crossbars_per_core: int) -> int:
    """AGs of one replica that cannot sit on its home core, whatever the placement."""
    return max(0, u.ags - crossbars_per_core // u.crossbars_per_ag)


def objective_scale(objective: str) -> float:
    """Model units per ``predict`` unit: ticks per ns (time), per pJ (energy: nJ), per pJ x ns
    (EDP: nJ x ticks)."""
    if objective in ("latency", "throughput"):
        return TICKS_PER_NS
    if objective == "energy":
        return 1 / ENERGY_UNIT_PJ
    return TICKS_PER_NS / ENERGY_UNIT_PJ


def _check_objective(objective: str) -> None:
    if objective not in ("latency", "throughput", "energy", "edp"):
        raise InputError(f"objective must be latency, throughput, energy or edp, not "
                         f"{objective!r}")


def _objective(model: IntModel, instance, objective: str, z, time: Var, travel,
               saved, crossings=()) -> Var | None:
    """Minimize T, E or E T; returns E when the objective needs it."""
    energy = None
    if objective in ("energy", "edp"):
        energy = _energy(model, instance, z, travel, saved, crossings)
    if objective == "energy":
        model.minimize(energy)
    elif objective == "edp":
        model.minimize(model.product(energy, time, "EDP"))
    else:
        model.minimize(time)
    return energy


def _choice_vars(model: IntModel, instance: PlacementInstance, picks) -> dict:
    """z[l, u, r_index] for every option whose replicas fit the crossbars (or the picked
    one), with exactly one option per layer."""
    K, C = instance.cores, instance.crossbars_per_core
    z = {}
    for li, layer in enumerate(instance.layers):
        for ui, u in enumerate(layer.choices):
            for ri, r in enumerate(layer.replications):
                if r * u.ags * u.crossbars_per_ag <= K * C and (
                        picks is None or tuple(picks[li]) == (ui, ri)):
                    z[li, ui, ri] = model.boolean(f"z[{layer.name},{u.unfolding},{r}]")
        options = [v for (a, _, _), v in z.items() if a == li]
        if not options:
            raise InfeasibleError(f"layer {layer.name}: no replica of the chosen unfolding and "
                                  "replication fits the crossbars")
        model.equal(total(options), 1, f"one[{layer.name}]")
    return z


def _used_choices(layer, li: int, picks) -> list:
    """(index, Choice) of each unfolding of ``layer`` the model places: all, or the
    picked one."""
    return [(ui, u) for ui, u in enumerate(layer.choices)
            if picks is None or picks[li][0] == ui]


def _aggregate_cuts(instance: PlacementInstance, z,
                    upper: int | None = None) -> dict[str, _Budget]:
    """Valid cuts, linear in z, that hold for every placement of the chosen options; they give
    the LP relaxation its strength and are the whole of the decomposition's master.

    * sums: over all K cores each per-core resource is at most K T, over the chips the shared
      global memory at most (chips) T, the off-chip link's AGs forced off their chip at most
      T; a sum is linear in z (A_u r m_r AG-windows, r m_r
      replica-windows, r lam_r load bytes; an AG whose replica does not fit one core, at least
      A_u - floor(C / X_u) per replica, sends and receives partial sums);
    * floors, per layer: some core holds ceil(A_u r / K) of its AGs and ceil(r / K) of its
      homes, and the per-window terms of one AG (t^ag m) bound T alone;
    * HT, chains, per layer: t^ag m, to which ``_chain_rows`` adds beta times the chips'
      mean global memory.
    """
    K, C = instance.cores, instance.crossbars_per_core
    chips = K // instance.cores_per_chip
    ht = instance.mode == "ht"
    gbw = _ns_per_byte(instance.gm_bytes_per_ns)
    link = _ns_per_byte(instance.link_bytes_per_ns)
    offlink = (_ns_per_byte(instance.offchip_bytes_per_ns)
               if instance.offchip_bytes_per_ns is not None else Fraction(0))
    names = ("issue", "vfu", "local", "gport", "gm", "net_in", "net_out", "serial", "offchip")
    sums: dict[str, _Budget] = {name: _Budget() for name in names}
    floors = {li: _Budget() for li in range(len(instance.layers))}
    chains = {li: _Budget() for li in range(len(instance.layers))}
    vfu0 = _ticks(instance.vector_core_ns["vfu"]) if ht else Fraction(0)
    gport0 = _ticks(instance.vector_core_ns["gport"]) if ht else Fraction(0)
    tick_gbw = _ticks(1) * gbw
    per_choice: dict[tuple[int, int], tuple[Fraction, ...]] = {}
    for (li, ui, ri), v in z.items():
        layer = instance.layers[li]
        u, r = layer.choices[ui], layer.replications[ri]
        m = layer.windows_per_replica(r)
        remote = _forced_remote(u, C)
        if (li, ui) not in per_choice:  # the rationals of one choice, for all its r
            both = _ticks(u.in_bytes + u.out_bytes)
            per_choice[li, ui] = (_ticks(u.issue_ns), _ticks(u.home_vfu_ns),
                                  _ticks(u.home_local_ns), both * link, both * offlink,
                                  _ticks(u.out_bytes) * link, _ticks(u.in_bytes) * link,
                                  _ticks(u.ag_ns))
        issue, vfu, local, both_link, both_off, out_link, in_link, ag = per_choice[li, ui]
        most_ags, most_homes = -(-u.ags * r // K), -(-r // K)
        sums["issue"].add(issue * (u.ags * r * m), v)
        sums["vfu"].add(vfu * (r * m), v)
        sums["local"].add(local * (r * m), v)
        travel = both_link * (remote * r * m)
        home_in = out_link * (remote * m)
        home_out = in_link * (remote * m)
        if ht:
            stores = Fraction(layer.store_bytes) * m
            loads = _loads_at_least(instance, li, ui, ri, upper)
            sums["gport"].add(tick_gbw * (loads + stores * r), v)
            sums["gm"].add(tick_gbw * (loads + stores * r), v)
            delta = layer.overlap(ri)
            # the core with the most homes loads at least (lam - delta) h + delta
            port = tick_gbw * (layer.load_bytes[ri] - delta + stores
                               + Fraction(delta, most_homes))
            sums["net_in"].add(travel, v)
            sums["net_out"].add(travel, v)
        else:
            port = Fraction(0)
            sums["net_in"].add(travel + _ticks(layer.input_bytes) * link * (r * m), v)
            sums["net_out"].add(travel + _ticks(layer.store_bytes) * link * (r * m), v)
            home_in += _ticks(layer.input_bytes) * link * m
            home_out += _ticks(layer.store_bytes) * link * m
        if instance.sync:  # each transfer blocks both its cores, MVM issue adds up with it
            sums["serial"].add(issue * (u.ags * r * m) + 2 * travel, v)
            if not ht:
                sums["serial"].add((_ticks(layer.input_bytes) + _ticks(layer.store_bytes))
                                   * link * (r * m), v)
        if instance.offchip_bytes_per_ns is not None:
            sums["offchip"].add(both_off * (r * m * _forced_remote(
                u, C * instance.cores_per_chip)), v)
        floor = max(ag * m,
                    (issue * m + home_in + home_out) * most_homes
                    if instance.sync else 0,
                    issue * m * most_ags,
                    (vfu * m + vfu0 / most_homes) * most_homes,
                    local * m * most_homes,
                    (port + gport0 / most_homes) * most_homes,
                    home_in * most_homes, home_out * most_homes)
        if ht:  # a home core's AGs, partial sums and slices for the layer alone; without
            # the count of AGs a core holds, which gave the benchmark's HT masters the same
            # values and took half the build time (PUMA: 1.43 -> 0.75 s on resnet18-28)
            floor = max(floor, math.ceil(home_floor(instance, li, ui, ri,
                                                    lambda c: _ticks(c.issue_ns),
                                                    lambda nbytes: _ticks(nbytes) * link,
                                                    counted=False)))
        floors[li].add(floor, v)
        chains[li].add(ag * m, v)
    sums["vfu"].constant += vfu0 * K
    sums["gport"].constant += gport0 * K
    sums["gm"].constant += gport0 * K
    out = {}
    for name, b in sums.items():
        share = {"gm": chips, "offchip": 1}.get(name, K)
        b.terms = [(c / share, e) for c, e in b.terms]
        b.constant /= share
        out[f"all_{name}"] = b
    for li, b in floors.items():
        out[f"floor[{instance.layers[li].name}]"] = b
    if ht:  # the chain under the global memory: beta G joins them in ``_chain_rows``
        for li, b in chains.items():
            out[f"all_chain[{instance.layers[li].name}]"] = b
    return out


def _chain_rows(model: IntModel, budgets: dict[str, _Budget], gm: list[_Budget]) -> None:
    """HT, an AG chain under a busy global memory (``evaluate.CHAIN_GM_SHARE``, beta, and
    ``CHAIN_TAIL_SHARE``, gamma): T >= t^ag_l m_l + beta G and T >= G + gamma t^ag_l m_l for
    every layer l (``_aggregate_cuts``' chains), with G (integer ticks) at least each of
    ``gm``, lower bounds on the chips' mean global memory (one variable, so that the rows
    stay short)."""
    beta = Fraction(CHAIN_GM_SHARE).limit_denominator(100)
    gamma = Fraction(CHAIN_TAIL_SHARE).limit_denominator(100)
    g = model.var(0, max(b.upper(model) for b in gm), "G")
    for i, b in enumerate(gm):
        b.bound(model, g, f"G>=gm{i}")
    chains = [(name, b) for name, b in budgets.items() if name.startswith("all_chain[")]
    for name, b in chains:
        if gamma:
            tail = _Budget()
            tail.terms = [(gamma * c, e) for c, e in b.terms]
            tail.constant = gamma * b.constant
            tail.add(Fraction(1), g)
            budgets["all_tail" + name.removeprefix("all_chain")] = tail
        b.terms.append((beta, Expr.of(g)))


def _time_upper(model: IntModel, budgets: dict[str, _Budget]) -> int:
    worst = 1
    for b in budgets.values():
        den = math.lcm(*(c.denominator for c, _ in b.terms), b.constant.denominator)
        hi = sum(int(c * den) * model.bounds_of(e)[1] for c, e in b.terms)
        worst = max(worst, math.ceil((hi + b.constant * den) / den))
    return worst


def _critical_path(model: IntModel, instance: PlacementInstance, z, budget,
                   windows: dict | None = None,
                   crossings: dict[int, list[Var]] | None = None) -> None:
    """LL: the window pipeline of ``evaluate.pipeline``, T >= F_l.

    With the placement (``windows``: P^y, P^rho, P^ell per (l, u, k)), exactly: D_l >= tau_l
    (t_l m_l) and each core's floors for l (``evaluate.core_floors``); per option o of l and
    replica size s, an integer period w_{l,o,s} >= D_l / s; per window a of replica j,
    done(a) >= done(a - 1) + w (same replica), done(a) >= done_p(q) + w for each producer
    window q it waits for (``_waits``), F_l >= the last done of each replica, F_l >=
    ready(0) + sum of x_e over l's direct output edges / B_off (``crossings``), and with
    ``inputs_ahead`` (whose core floors leave the homes' input pixels out) F_l >= ready(0) +
    each core's inbound link with them (``evaluate.span_floors``). When the
    options are not fixed (the full model), each option has its own windows, tied to the
    layer's by done_l(a) >= done_{l,o}(a) - big (1 - z_o), and prefix waits read the
    prefix maximum M_p(q) >= M_p(q - 1), done_p(q).

    Without it (the decomposition's master), a relaxation in z alone, D_l >= tau_l, each
    option's at least its ``evaluate.home_floor``: S_l = ready(0), G_l = done(W_l - 1),
    F_l >= S_l + D_l (replica 0 runs D_l from S_l); S_l >= S_p + c_e D_p (the producer
    window q_0 the first window waits for, in replica 0 of p: c_e = (q_0 + 1) / s_0);
    F_l >= G_p + kappa_e D_l and, where that window is in l's last replica, G_l >= the same
    (a* the first window waiting for p's last window, in replica j*:
    kappa_e = (b_{j*+1} - a*) / s_{j*}); G_l >= S_l + D_l with one replica; F_l >= G_l; with
    ``inputs_ahead``, F_l >= S_l + each option's ``evaluate.floor_span``."""
    issue, link, offlink = _floor_ticks(instance)
    whole_of = {key: _option_whole(instance, *key, windows is None) for key in z}
    tau = {li: total(v * whole_of[a, ui, ri] for (a, ui, ri), v in z.items() if a == li)
           for li in range(len(instance.layers))}
    if windows is None:
        _path_relaxation(model, instance, z, budget, tau, whole_of)
        return
    whole: dict[int, Var] = {}
    spans: dict[int, list[tuple[str, _Budget]]] = {}  # inputs_ahead: each core's inbound
    horizon = 0
    for li, layer in enumerate(instance.layers):
        floors: dict[str, _Budget] = {}
        for (a, ui, k), (py, pr, pe) in windows.items():
            if a != li:
                continue
            u = layer.choices[ui]
            away, came = pr * u.ags - pe, py - pe
            inbound = [(link(u.out_bytes), away), (link(u.in_bytes), came)]
            inputs = [(link(layer.input_bytes), Expr.of(pr))]
            busy = {"issue": [(issue(u), py)],
                    "in": inbound if instance.inputs_ahead else inbound + inputs,
                    "out": [(link(u.in_bytes), away), (link(u.out_bytes), came),
                            (link(layer.store_bytes), Expr.of(pr))]}
            if instance.sync:
                busy["serial"] = busy["issue"] + busy["in"] + busy["out"]
            for what, terms in busy.items():
                b = floors.setdefault(f"{what}_floor[{layer.name},{u.unfolding},{k}]",
                                      _Budget())
                for coef, e in terms:
                    b.add(coef, e)
            if instance.inputs_ahead:
                b = _Budget()
                for coef, e in inbound + inputs:
                    b.add(coef, e)
                spans.setdefault(li, []).append((f"span[{layer.name},{u.unfolding},{k}]", b))
        hi = max([model.bounds_of(tau[li])[1]] + [b.upper(model) for b in floors.values()])
        whole[li] = d = model.var(0, hi, f"D[{layer.name}]")
        model.add(d - tau[li], lo=0)
        for name, b in floors.items():
            b.bound(model, d, name)
        sent = (crossings or {}).get(li, [])
        off = total(x * offlink(1) for x in sent) if sent else None
        reach = max([0] + [b.upper(model) for _, b in spans.get(li, [])])
        horizon += hi + layer.windows_per_replica(1) + reach + (
            math.ceil(model.bounds_of(off)[1]) if off is not None else 0)
    done: dict[int, list[Var]] = {}
    prefix: dict[int, list[Var]] = {}
    full = any(sum(1 for (a, _, _) in z if a == li) > 1 for li in range(len(instance.layers)))
    for li, layer in enumerate(instance.layers):
        finish = model.var(0, horizon, f"F[{layer.name}]", implied=True)
        ours = [model.var(0, horizon, f"done[{layer.name},{a}]", implied=True)
                for a in range(layer.windows)]
        into = [e for e in instance.edges if e.consumer == li]
        ready = None
        if full:  # ready(a), shared by the options: each wait once
            ready = [model.var(0, horizon, f"ready[{layer.name},{a}]", implied=True)
                     for a in range(layer.windows)]
            for e in into:
                for a, q in _waits(instance, e, z, 0, layer.windows, full):
                    model.add(ready[a] - _made(e, q, done, prefix, full), lo=0)
        for (a_, ui, ri), v in z.items():
            if a_ != li:
                continue
            r = layer.replications[ri]
            bounds = replica_bounds(layer.windows, r)
            tag = f"{layer.name},{layer.choices[ui].unfolding},{r}"
            # the full model: each option its own windows, which bind F_l and the layer's
            # windows only when z_o = 1 (big-M on the links alone keeps the chains exact)
            mine = ours if not full else [model.var(0, horizon, f"done[{tag},{a}]", implied=True)
                                          for a in range(layer.windows)]
            big = horizon if full else 0
            slack = v * big - big if full else 0  # -big (1 - z_o)
            period = {}
            for size in sorted(set(np.diff(bounds).tolist())):
                w = model.var(0, -(-model.upper[whole[li].index] // size), f"w[{tag},{size}]")
                model.add(w * size - whole[li], lo=0)
                period[size] = w
            for j in range(r):
                lo, hi = int(bounds[j]), int(bounds[j + 1])
                w = period[hi - lo]
                model.add(mine[lo] - w, lo=0)
                for a in range(lo + 1, hi):
                    model.add(mine[a] - mine[a - 1] - w, lo=0)
                if full:
                    for a in range(lo, hi):
                        model.add(mine[a] - ready[a] - w, lo=0)
                else:
                    for e in into:
                        for a, q in _waits(instance, e, z, lo, hi, full):
                            model.add(mine[a] - _made(e, q, done, prefix, full) - w, lo=0)
                model.add(finish - mine[hi - 1] - slack, lo=0)
            if full:
                for a in range(layer.windows):
                    model.add(ours[a] - mine[a] - slack, lo=0)
        sent = (crossings or {}).get(li, [])
        if sent or li in spans:  # F_l >= ready(0) + O_l, ready(0) + each core's inbound link
            ready0 = model.var(0, horizon, f"R[{layer.name}]", implied=True)
            for e in into:
                for _, q in _waits(instance, e, z, 0, 1, full):
                    model.add(ready0 - _made(e, q, done, prefix, full), lo=0)
            bodies = list(spans.get(li, []))
            if sent:
                bodies.append((f"offchip_floor[{layer.name}]", _Budget()))
                for x in sent:
                    bodies[-1][1].add(offlink(1), x)
            # P_l integral (the tick above the longest), so F_l and R_l stay integral
            span = model.var(0, max(b.upper(model) for _, b in bodies), f"P[{layer.name}]")
            for name, body in bodies:
                body.bound(model, span, name)
            model.add(finish - ready0 - span, lo=0, name=f"span[{layer.name}]")
        done[li] = ours
        if full and any(e.producer == li and e.reads is None for e in instance.edges):
            prefix[li] = [model.var(0, horizon, f"M[{layer.name},{a}]", implied=True)
                          for a in range(layer.windows)]
            for a, m in enumerate(prefix[li]):
                model.add(m - ours[a], lo=0)
                if a:
                    model.add(m - prefix[li][a - 1], lo=0)
        budget(f"path[{li}]").add(Fraction(1), finish)


def _made(edge, q: int, done, prefix, full: bool) -> Var:
    """When producer window q is done (in the full model, for a prefix wait, when all windows
    up to q are)."""
    return (prefix if full and edge.reads is None else done)[edge.producer][q]


def _option_whole(instance: PlacementInstance, li: int, ui: int, ri: int, home: bool) -> int:
    """tau of option (u, r) of layer l in ticks: its m windows one after another and, for the
    master (``home``: no placement known), at least its ``evaluate.home_floor``."""
    layer = instance.layers[li]
    run = math.ceil(_ticks(window_ns(instance, li, ui))
                    * layer.windows_per_replica(layer.replications[ri]))
    if not home:
        return run
    issue, link, _ = _floor_ticks(instance)
    return max(run, math.ceil(home_floor(instance, li, ui, ri, issue, link)))


def _waits(instance: PlacementInstance, edge, z, lo: int, hi: int,
           full: bool) -> list[tuple[int, int]]:
    """(a, q): consumer window a in [lo, hi) (one replica) waits for producer window q, where
    the replica's earlier windows did not already wait for q or a later window of q's
    producer replica (the chain of done implies those). With the producer's options fixed
    its replica ranges are known; in the full model, footprint waits are kept whole and a
    prefix wait reads the prefix maximum at its last window."""
    layer, p = instance.layers[edge.consumer], instance.layers[edge.producer]
    if full:
        if edge.reads is None:
            need = edge.needs(layer.windows, p.windows, np.array([0, p.windows]))
        else:
            need = edge.reads
        return [(a, int(q)) for a in range(lo, hi) for q in sorted(set(need[a].tolist()))
                if q >= 0]
    ri = next(ri for (a, _, ri) in z if a == edge.producer)
    bounds = replica_bounds(p.windows, p.replications[ri])
    need = edge.needs(layer.windows, p.windows, bounds)
    seen: dict[int, int] = {}
    out = []
    for a in range(lo, hi):
        row = need[a][need[a] >= 0]
        if not len(row):
            continue
        replica = np.searchsorted(bounds, row, side="right") - 1
        for i in np.unique(replica):
            q = int(row[replica == i].max())
            if q > seen.get(int(i), -1):
                seen[int(i)] = q
                out.append((a, q))
    return out


def _path_relaxation(model: IntModel, instance: PlacementInstance, z, budget,
                     tau: dict[int, Expr], whole_of: dict[tuple[int, int, int], int]) -> None:
    """The master's LL path (``_critical_path``): S, G, F per layer, valid for every
    placement of the options."""
    horizon = sum(model.bounds_of(t)[1] for t in tau.values()) + sum(
        layer.windows for layer in instance.layers)
    start = [model.var(0, horizon, f"S[{x.name}]") for x in instance.layers]
    last = [model.var(0, horizon, f"G[{x.name}]") for x in instance.layers]
    finish = [model.var(0, horizon, f"F[{x.name}]") for x in instance.layers]
    for li, layer in enumerate(instance.layers):
        model.add(finish[li] - start[li] - tau[li], lo=0, name=f"run[{li}]")
        if instance.inputs_ahead:  # F_l >= S_l + its span (``evaluate.floor_span``)
            model.add(finish[li] - start[li] - total(
                v * round(floor_span(instance, a, ui, ri) * TICKS_PER_NS)
                for (a, ui, ri), v in z.items() if a == li), lo=0, name=f"span[{li}]")
        model.add(finish[li] - last[li], lo=0)
        model.add(last[li] - tau[li], lo=0)
        single = total(v for (a, _, ri), v in z.items()
                       if a == li and layer.replications[ri] == 1)
        model.add(last[li] - start[li] - tau[li] - single * horizon, lo=-horizon)
        budget(f"path[{li}]").add(Fraction(1), finish[li])
    for e in instance.edges:
        p, layer = instance.layers[e.producer], instance.layers[e.consumer]
        # the producer windows the consumer's first window waits for: its reads, or a prefix
        first = (e.reads[0][e.reads[0] >= 0] if e.reads is not None
                 else np.arange(int(e.prefix_last(layer.windows, p.windows)[0]) + 1))
        lag = []  # S_l >= S_p + c_e(o_p) tau(o_p)
        for (a, ui, ri), v in z.items():
            if a != e.producer:
                continue
            end = p.windows // p.replications[ri]  # b_1: replica 0 makes [0, b_1)
            mine = first[first < end]
            if len(mine):
                lag.append(v * (whole_of[a, ui, ri] * (int(mine.max()) + 1) // end))
        model.add(start[e.consumer] - start[e.producer] - total(lag), lo=0,
                  name=f"lag[{e.producer},{e.consumer}]")
        late = e.first_waiting_for(layer.windows, p.windows, p.windows - 1)
        if late is None:
            continue
        tail, into_last, elsewhere = [], [], []
        for (a, ui, ri), v in z.items():
            if a != e.consumer:
                continue
            r = layer.replications[ri]
            bounds = replica_bounds(layer.windows, r)
            j = int(np.searchsorted(bounds, late, side="right") - 1)
            term = v * (whole_of[a, ui, ri] * int(bounds[j + 1] - late)
                        // int(bounds[j + 1] - bounds[j]))
            tail.append(term)
            if j == r - 1:
                into_last.append(term)
            else:
                elsewhere.append(v)
        model.add(finish[e.consumer] - last[e.producer] - total(tail), lo=0,
                  name=f"tail[{e.producer},{e.consumer}]")
        model.add(last[e.consumer] - last[e.producer] - total(into_last)
                  + total(elsewhere) * horizon, lo=0, name=f"last[{e.producer},{e.consumer}]")


def _energy(model: IntModel, instance: PlacementInstance, z, travel_bytes,
            saved_bytes, crossings=()) -> Var:
    """E (in ENERGY_UNIT_PJ, rounded up per term) = constant + per-choice + traffic, less the
    loads co-located replicas share (``saved_bytes``, HT); a byte over the off-chip link costs
    its energy instead of a hop's (``crossings``)."""
    terms: list[tuple[Fraction, Expr]] = []
    unit = Fraction(ENERGY_UNIT_PJ)
    for li, layer in enumerate(instance.layers):
        for (a, ui, ri), v in z.items():
            if a != li:
                continue
            u, r = layer.choices[ui], layer.replications[ri]
            e = Fraction(u.window_energy_pj).limit_denominator(1000) * layer.windows
            if instance.mode == "ht":
                e += Fraction(instance.gm_pj_per_byte).limit_denominator(1000) * (
                    layer.load_bytes[ri] * r + Fraction(layer.store_bytes) * layer.windows)
            else:
                e += Fraction(instance.net_pj_per_byte_hop).limit_denominator(1000) * (
                    Fraction(layer.input_bytes + layer.store_bytes) * layer.windows)
            terms.append((e / unit, Expr.of(v)))
    hop = Fraction(instance.net_pj_per_byte_hop).limit_denominator(1000)
    for nbytes, away in travel_bytes:
        terms.append((hop * nbytes / unit, away))
    gm = Fraction(instance.gm_pj_per_byte).limit_denominator(1000)
    terms += [(gm / unit, Expr.of(e)) for e in saved_bytes]
    extra = (Fraction(instance.offchip_pj_per_byte).limit_denominator(1000) - hop) / unit
    terms += [(extra * nbytes, e) for nbytes, e in crossings]
    constant = Fraction(instance.constant_energy_pj).limit_denominator(1000) / unit
    den = math.lcm(*(c.denominator for c, _ in terms), constant.denominator)
    body = total(e * int(c * den) for c, e in terms)
    lo, hi = model.bounds_of(body)
    energy = model.var(0, math.ceil((hi + constant * den) / den) + 1, "E")
    model.add(energy * den - body, lo=math.ceil(constant * den), name="energy")
    return energy


def decode_values(pm: PlacementModel, values: list[int]) -> list[LayerCounts]:
    """Per-layer counts from a solution's values."""
    inst = pm.instance
    out = []
    for li, layer in enumerate(inst.layers):
        (_, ui, ri), = [key for key, v in pm.z.items() if key[0] == li and values[v.index]]
        y, rho = (np.array([values[table[li, ui, k].index] for k in range(inst.cores)],
                           dtype=np.int64) for table in (pm.y, pm.rho))
        # the most AGs the homes can keep (the model may leave slack where it costs nothing)
        ell = np.minimum(y, rho * layer.choices[ui].ags)
        out.append(LayerCounts(ui, layer.replications[ri], y, rho, ell))
    return out


def _hint_pipeline(pm: PlacementModel, counts: list[LayerCounts], names: dict[str, int],
                   hint: dict[Var, int]) -> list[int]:
    """LL: ``evaluate.pipeline`` in ticks (D_l, periods ceil(D_l / s), O_l rounded up) into
    the hint's D, w, done, ready, M, R and F; returns F per layer."""
    inst = pm.instance
    issue, link, offlink = _floor_ticks(inst)
    floors = [math.ceil(f) for f in core_floors(inst, counts, issue, link)]
    whole = [max(_option_whole(inst, i, c.choice, inst.layers[i].replications.index(
        c.replication), False), floors[i]) for i, c in enumerate(counts)]
    spans = [math.ceil(f) for f in span_floors(inst, counts, link, offlink)]
    reps = [c.replication for c in counts]
    done, finish = pipeline(inst, reps, lambda i, size: -(-whole[i] // size), spans)

    def put(name: str, value) -> None:
        if name in names:
            hint[Var(names[name])] = int(round(value))

    for li, (layer, c) in enumerate(zip(inst.layers, counts, strict=True)):
        tag = f"{layer.name},{layer.choices[c.choice].unfolding},{c.replication}"
        put(f"D[{layer.name}]", whole[li])
        put(f"F[{layer.name}]", finish[li])
        for size in set(np.diff(replica_bounds(layer.windows, c.replication)).tolist()):
            put(f"w[{tag},{size}]", -(-whole[li] // size))
        ready = window_ready(inst, reps, done, li)
        put(f"R[{layer.name}]", ready[0])
        put(f"P[{layer.name}]", spans[li])
        top = np.maximum.accumulate(done[li])
        for a in range(layer.windows):
            for name, value in ((f"done[{layer.name},{a}]", done[li][a]),
                                (f"done[{tag},{a}]", done[li][a]),
                                (f"ready[{layer.name},{a}]", ready[a]),
                                (f"M[{layer.name},{a}]", top[a])):
                put(name, value)
    return [int(round(f)) for f in finish]


def hint_values(pm: PlacementModel, counts: list[LayerCounts]) -> dict[Var, int]:
    """A hint from a known placement: its cores reordered per chip to satisfy the symmetry
    breaking, with the decision variables, m, lam and the products they imply."""
    inst = pm.instance
    used = sum(c.y * inst.layers[i].choices[c.choice].crossbars_per_ag
               for i, c in enumerate(counts))
    per_chip = inst.cores_per_chip
    order = np.concatenate([base + np.argsort(-used[base:base + per_chip], kind="stable")
                            for base in range(0, inst.cores, per_chip)])
    hint: dict[Var, int] = {}
    value: dict[int, int] = {}
    names = {n: i for i, n in enumerate(pm.model.names)}
    for li, (layer, c) in enumerate(zip(inst.layers, counts, strict=True)):
        ri = layer.replications.index(c.replication) if c.replication in (
            layer.replications) else None
        for (a, ui, rj), v in pm.z.items():
            if a == li:
                hint[v] = int(ui == c.choice and rj == ri)
        value[names[f"m[{layer.name}]"]] = layer.windows_per_replica(c.replication)
        if f"lam[{layer.name}]" in names and ri is not None:
            value[names[f"lam[{layer.name}]"]] = layer.load_bytes[ri]
        if f"delta[{layer.name}]" in names and ri is not None:
            value[names[f"delta[{layer.name}]"]] = layer.overlap(ri)
        for k in range(inst.cores):
            if (li, k) in pm.shared:
                hint[pm.shared[li, k]] = int(c.rho[order[k]] > 0)
        for ui in range(len(layer.choices)):
            if (li, ui, 0) not in pm.y:
                continue
            for k in range(inst.cores):
                same = ui == c.choice
                src = order[k]
                hint[pm.y[li, ui, k]] = int(c.y[src]) if same else 0
                hint[pm.rho[li, ui, k]] = int(c.rho[src]) if same else 0
                hint[pm.ell[li, ui, k]] = int(c.ell[src]) if same else 0
    crossings = chip_crossings(inst, counts)  # per chip: the reordering keeps them
    for (li, chip), n in crossings.ag_windows.items():
        layer = inst.layers[li]
        name = f"o[{layer.name},{layer.choices[counts[li].choice].unfolding},{chip}]"
        if name in names:
            value[names[name]] = n
    for layer, c in zip(inst.layers, counts, strict=True):
        if f"w[{layer.name},1]" not in names:
            continue
        for k in range(inst.cores):
            value[names[f"h[{layer.name},{k}]"]] = int(c.rho[order[k]] > 0)
        homes = max(1, int(np.count_nonzero(c.rho)))
        for n in range(1, len(layer.spread_bytes) + 1):
            if f"w[{layer.name},{n}]" in names:
                value[names[f"w[{layer.name},{n}]"]] = int(n == homes)
    for ei, n in crossings.edge_bytes.items():
        e = inst.edges[ei]
        name = f"{inst.layers[e.producer].name}->{inst.layers[e.consumer].name}"
        value[names[f"x[{name}]"]] = n
        for chip in range(inst.chips):
            v = crossings.edge_overlap[ei, chip]
            value[names[f"v[{name},{chip}]"]] = v
            value[names[f"g[{name},{chip}]"]] = int(v > 0)
    value.update({v.index: x for v, x in hint.items()})
    for p, x, y, _ in pm.model.products:
        if x in value and y in value:
            hint[Var(p)] = value[x] * value[y]
    for i, x in value.items():
        hint.setdefault(Var(i), x)
    if "G" in names:  # HT: the chips' mean global memory (``_chain_rows``)
        ns = per_core(inst, counts)["gport"].sum() / inst.chips
        hint[Var(names["G"])] = min(math.ceil(ns * TICKS_PER_NS * 1.0001) + 2,
                                    pm.model.upper[names["G"]])
    # T: the placement's predicted value, with slack for the per-term rounding up
    ticks = math.ceil(predict(inst, counts).time_ns * TICKS_PER_NS * 1.0001) + 2
    if inst.mode == "ll":  # the window pipeline on the model's integer ticks
        finish = _hint_pipeline(pm, counts, names, hint)
        ticks = max([ticks, *finish])
    hint[pm.time] = min(ticks, pm.model.upper[pm.time.index])
    if pm.energy is not None:
        hint[pm.energy] = pm.model.upper[pm.energy.index]
    return hint
