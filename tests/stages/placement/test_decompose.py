"""The decomposition (master over the options, linear placement subproblem, cuts) is exact:
it proves the brute-force optimum with every engine, its master never cuts off a placement,
and its hints (``pack``, ``spread``) are valid placements."""

from __future__ import annotations

import dataclasses
import itertools
import math

import pytest
from google.protobuf import text_format
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ortools.sat import sat_parameters_pb2

from pimsolve.api import _crossbar_target, inspect_model
from pimsolve.errors import InfeasibleError
from pimsolve.solve.clock import Clock
from pimsolve.solve.model import solve_model
from pimsolve.solve.options import SolveOptions
from pimsolve.solve.result import Status
from pimsolve.stages.placement import decompose, diagram
from pimsolve.stages.placement.baselines import (
    BASELINES,
    check_counts,
    level_search,
    scattered,
    spread,
)
from pimsolve.stages.placement.decompose import (
    MASTER_PARAMS,
    MASTER_WORKERS,
    _master_options,
    _seed,
    picks_of,
    solve_decomposed,
)
from pimsolve.stages.placement.evaluate import memory_per_core, predict
from pimsolve.stages.placement.formulation import (
    TICKS_PER_NS,
    build_master,
    build_model,
    cap_time,
)
from pimsolve.stages.placement.instance import build_instance
from tests.stages.placement.test_baselines import sync_tiny, vgg8
from tests.stages.placement.test_diagram import case as diagram_case
from tests.stages.placement.test_diagram import least_floor
from tests.stages.placement.test_formulation import (
    CASES,
    SYNC_HT,
    _layer_options,
    brute_force,
    instance,
)
from tests.stages.placement.test_local import resnet18_isaac_ht


@pytest.mark.parametrize(("cores", "crossbars", "mode"), CASES)
@pytest.mark.parametrize("engine", ["cpsat", "milp", "milp-highs"])
def test_decomposition_proves_the_brute_force_optimum(cores, crossbars, mode, engine):
    inst = instance(cores, crossbars, mode)
    objective = "throughput" if mode == "ht" else "latency"
    want = brute_force(inst, objective)
    result, counts = solve_decomposed(inst, objective, engine, SolveOptions(relative_gap=0))
    assert result.status == Status.OPTIMAL and result.gap == 0
    assert want * TICKS_PER_NS <= result.objective <= want * TICKS_PER_NS + 1
    assert result.bound == result.objective
    assert check_counts(inst, counts) is None
    assert predict(inst, counts).objective(objective) == pytest.approx(want, abs=0.01)


@pytest.mark.parametrize("mode", ["ht", "ll"])
@pytest.mark.parametrize("engine", ["cpsat", "milp-highs"])
def test_sync_communication_is_exact(mode, engine):
    """Sync transfers block both cores: the serial resource (issue + transfers per core).
    With PUMA's issue interval and a slow link, it changes the LL optimum."""
    inst = instance(2, 2, mode, communication="sync", link_gb_per_s=1.0, issue_ns=1600)
    assert inst.sync
    objective = "throughput" if mode == "ht" else "latency"
    want = brute_force(inst, objective)
    if mode == "ll":
        assert want > brute_force(instance(2, 2, mode, link_gb_per_s=1.0, issue_ns=1600),
                                  objective)
    result, counts = solve_decomposed(inst, objective, engine, SolveOptions(relative_gap=0.0))
    assert result.status == Status.OPTIMAL
    assert predict(inst, counts).objective(objective) == pytest.approx(want, abs=0.01)
    assert "serial" in predict(inst, counts).resources


@pytest.mark.parametrize("engine", ["cpsat", "milp-highs"])
def test_sync_ht_decomposition_keeps_the_homes_share(engine):
    """HT, sync links, 2 cores of 3 crossbars: the master's floors count that a home keeps
    ``home_least`` of its AGs, and the decomposition proves the brute force's optimum under
    that rule (115.2 us; 90.88 us if homes could scatter their AGs)."""
    inst = instance(2, 3, "ht", **SYNC_HT)
    want = brute_force(inst, "throughput")
    result, counts = solve_decomposed(inst, "throughput", engine, SolveOptions(relative_gap=0))
    assert result.status == Status.OPTIMAL and result.bound == result.objective
    assert check_counts(inst, counts) is None and not scattered(inst, counts)
    assert predict(inst, counts).time_ns == pytest.approx(want, abs=0.01)


@pytest.mark.parametrize("objective", ["energy", "edp"])
def test_decomposition_energy_and_edp_match_brute_force(objective):
    inst = instance(2, 2, "ht")
    want = brute_force(inst, objective)
    result, counts = solve_decomposed(inst, objective, "cpsat", SolveOptions(relative_gap=0))
    assert result.status == Status.OPTIMAL
    assert predict(inst, counts).objective(objective) == pytest.approx(want, rel=1e-3)


def _scored(inst):
    """(time, most local memory on a core) of every placement that fits the crossbars."""
    out = []
    per_layer = [list(_layer_options(inst, li)) for li in range(len(inst.layers))]
    for combo in itertools.product(*per_layer):
        used = sum(c.y * inst.layers[i].choices[c.choice].crossbars_per_ag
                   for i, c in enumerate(combo))
        if (used <= inst.crossbars_per_core).all():
            out.append((predict(inst, list(combo)).time_ns,
                        int(memory_per_core(inst, list(combo)).max())))
    return out


@pytest.mark.parametrize("engine", ["cpsat", "milp-highs"])
def test_local_memory_is_exact(engine):
    """With the least local memory any placement needs, the decomposition finds the brute
    force's best among the few placements that fit; with one byte less, none exists."""
    free = dataclasses.replace(instance(3, 2, "ht"), local_memory_bytes=None)
    scored = _scored(free)
    least = min(m for _, m in scored)
    assert sum(m <= least for _, m in scored) < len(scored) / 4
    tight = dataclasses.replace(free, local_memory_bytes=least)
    result, got = solve_decomposed(tight, "throughput", engine, SolveOptions(relative_gap=0))
    assert result.status == Status.OPTIMAL
    assert check_counts(tight, got) is None
    want = min(t for t, m in scored if m <= least)
    assert predict(tight, got).time_ns == pytest.approx(want, abs=0.01)
    none = dataclasses.replace(free, local_memory_bytes=least - 1)
    result, got = solve_decomposed(none, "throughput", engine, SolveOptions(relative_gap=0))
    assert result.status == Status.INFEASIBLE and got is None


def _option_sets(inst):
    per_layer = [[(ui, ri) for ui in range(len(layer.choices))
                  for ri in range(len(layer.replications))] for layer in inst.layers]
    return itertools.product(*per_layer)


SLOW_SYNC = {"communication": "sync", "link_gb_per_s": 0.2, "issue_ns": 1600}
"""PUMA-like: one MVM per 1.6 us per core, paired transfers on a slow link, so that the
master's home floors (``evaluate.home_floor``) bind."""


@pytest.mark.parametrize(("cores", "crossbars", "mode", "kwargs"),
                         [(*case, {}) for case in CASES[:2] + CASES[3:4]]
                         + [(2, 2, "ll", SLOW_SYNC), (2, 3, "ll", {"link_gb_per_s": 0.2}),
                            (2, 3, "ht", SYNC_HT)])
def test_master_never_cuts_off_a_placement(cores, crossbars, mode, kwargs):
    """For every option set, the master's value there is at most the subproblem's optimum
    (its cuts are valid), and both at most what any placement of it predicts."""
    inst = instance(cores, crossbars, mode, **kwargs)
    objective = "throughput" if mode == "ht" else "latency"
    checked = 0
    for picks in _option_sets(inst):
        try:
            sub = build_model(inst, objective, picks=picks)
        except InfeasibleError:  # a replica of a picked option exceeds all crossbars
            continue
        sub_result, _ = solve_model(sub.model, "cpsat")
        if sub_result.status == Status.INFEASIBLE:
            continue
        # without a known placement, and told the subproblem's own optimum as the upper
        # bound (the tightest the loop can know: fewer homes per core fit below it)
        for upper in (None, sub_result.objective):
            master = build_master(inst, objective, upper=upper)
            for (li, ui, ri), v in master.z.items():
                master.model.add(v, lo=int(picks[li] == (ui, ri)),
                                 hi=int(picks[li] == (ui, ri)))
            master_result, _ = solve_model(master.model, "cpsat")
            assert master_result.status == Status.OPTIMAL
            assert master_result.objective <= sub_result.objective
        checked += 1
    assert checked >= 1


def test_master_time_stays_below_the_known_placement():
    """Capped at a known placement's T (for the MILP engines), the master's T is at most
    that (the budgets' own bound on T is above it, three times here, thousands of times on
    googlenet/PUMA HT, where it put HiGHS off), and its optimum is unchanged."""
    inst = instance(2, 3, "ht")
    free = build_master(inst, "throughput")
    result, _ = solve_model(free.model, "cpsat")
    loose = free.model.upper[free.time.index]
    upper = int(result.objective) + 10
    assert loose > 2 * upper
    capped = build_master(inst, "throughput", upper=upper + 0.5)
    cap_time(capped, upper + 0.5)
    assert capped.model.upper[capped.time.index] == upper
    for engine in ("cpsat", "milp-highs"):
        assert solve_model(capped.model, engine)[0].objective == result.objective


def test_highs_solves_googlenet_puma_masters_once_capped():
    """googlenet/PUMA HT (224x224): the master's T bound from its cuts alone is 3514 ms,
    2856 times its optimum, and HiGHS returned that bound as the optimum (so that, given
    an incumbent, the decomposition took the master as infeasible: a false proof). Capped
    at a placement's T (the decomposition caps the MILP engines' masters), HiGHS finds
    CP-SAT's optimum."""
    ins = inspect_model("googlenet", target=_crossbar_target("puma"))
    inst = build_instance(ins.graph, ins.workload, ins.target, "ht")
    upper = 180_882_089  # ticks: the benchmark's incumbent, 1808.6 us
    master = build_master(inst, "throughput", upper=upper)
    assert master.model.upper[master.time.index] > 1000 * upper
    want, _ = solve_model(master.model, "cpsat", SolveOptions(params="linearization_level:2"))
    assert want.status == Status.OPTIMAL and want.objective < 0.7 * upper
    cap_time(master, upper)
    got, _ = solve_model(master.model, "milp-highs")
    assert got.status == Status.OPTIMAL and got.objective == want.objective


@pytest.mark.parametrize("engine", ["cpsat", "milp-highs"])
def test_milp_subproblems_are_capped_at_a_known_placement(monkeypatch, engine):
    """The MILP engines' subproblems have T at most their seed's value (or the incumbent's),
    not the budgets' bound (every AG on one core: up to 1.6 times the optimum here, 14 to
    96 times the value on the benchmark's rows), which misled HiGHS on a master; the
    optimum is unchanged, and CP-SAT's subproblems keep the budgets' bound."""
    inst = instance(2, 3, "ll")
    objective = "latency"
    want = brute_force(inst, objective) * TICKS_PER_NS
    built = []

    def recorded(*args, **kwargs):
        sub = build_model(*args, **kwargs)
        built.append((sub, sub.model.upper[sub.time.index]))
        return sub

    monkeypatch.setattr(decompose, "build_model", recorded)
    result, counts = solve_decomposed(inst, objective, engine, SolveOptions(relative_gap=0))
    assert result.status == Status.OPTIMAL and want <= result.objective <= want + 1
    assert check_counts(inst, counts) is None
    assert built
    capped = [(sub.model.upper[sub.time.index], loose) for sub, loose in built]
    if engine == "cpsat":
        assert all(upper == loose for upper, loose in capped)
    else:
        assert all(upper <= loose for upper, loose in capped)
        assert any(upper < loose for upper, loose in capped)


def test_master_path_is_the_pipeline_on_a_chain():
    """LL, 2 cores of 3 crossbars: every option set runs conv1's 36 windows, then conv2's 8
    after its first window that reads conv1's last pixel (window 28 of 36), then fc's one:
    45 windows of 1.6 us, 72 us. The master's relaxation (S, G, F per layer) finds exactly
    that, as the subproblem does: its tail term F_l >= G_p + D_l (W_l - a*) / s binds."""
    inst = instance(2, 3, "ll")
    checked = 0
    for picks in _option_sets(inst):
        try:
            sub = build_model(inst, "latency", picks=picks)
        except InfeasibleError:
            continue
        sub_result, _ = solve_model(sub.model, "cpsat")
        if sub_result.status == Status.INFEASIBLE:  # its AGs do not fit the 6 crossbars
            continue
        master = build_master(inst, "latency")
        for (li, ui, ri), v in master.z.items():
            master.model.add(v, lo=int(picks[li] == (ui, ri)), hi=int(picks[li] == (ui, ri)))
        master_result, _ = solve_model(master.model, "cpsat")
        assert sub_result.objective == master_result.objective == 45 * 1600 * TICKS_PER_NS
        checked += 1
    assert checked >= 4


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_spread_places_exactly_the_replicas_asked(data):
    inst, _ = vgg8("small", data.draw(st.sampled_from(["ht", "ll"])))
    choices = [data.draw(st.integers(0, len(layer.choices) - 1)) for layer in inst.layers]
    reps = [data.draw(st.sampled_from(layer.replications[:3])) for layer in inst.layers]
    counts = spread(inst, choices, reps)
    if counts is None:  # must then really not fit: more crossbars than the cores hold
        need = sum(r * layer.choices[u].ags * layer.choices[u].crossbars_per_ag
                   for layer, u, r in zip(inst.layers, choices, reps, strict=True))
        assert need > inst.cores * inst.crossbars_per_core * 0.5
        return
    assert check_counts(inst, counts) is None
    assert [c.replication for c in counts] == reps
    assert [c.choice for c in counts] == choices


def test_spread_respects_core_mode():
    inst, _ = vgg8("cm", "ht")
    counts = spread(inst, [0] * len(inst.layers), [1] * len(inst.layers))
    assert counts is not None and check_counts(inst, counts) is None


def test_time_limit_keeps_the_start():
    """With no time to solve, the start placement comes back, feasible, not proven."""
    inst, _ = vgg8("isaac", "ht")
    from pimsolve.stages.placement.baselines import balance

    start = balance(inst)
    result, counts = solve_decomposed(inst, "throughput", "cpsat",
                                      SolveOptions(time_limit_s=1e-6), start=start)
    assert counts is start
    assert result.status == Status.FEASIBLE and result.objective is not None
    assert result.stop_reason.value == "time_limit"


def test_a_parked_option_set_keeps_the_bound_valid(monkeypatch):
    """A subproblem no greedy placement (nor the packing model) seeds that finds nothing in
    its share is parked: the
    master moves on to other options, the bound stays at most the parked set's master value
    (it still bounds the brute-force optimum), and once the master has nothing else, the
    parked set gets the time left."""
    from pimsolve.stages.placement import decompose

    inst = instance(2, 2, "ht")
    want = brute_force(inst, "throughput") * TICKS_PER_NS
    calls = []

    def first_subproblem_finds_nothing(model, engine, options, **kwargs):
        if options.relative_gap is not None:  # a subproblem (the master runs without a gap)
            calls.append(options.time_limit_s)
            if len(calls) == 1:
                result, _ = solve_model(model, engine, options, **kwargs)
                return dataclasses.replace(result, status=Status.UNKNOWN, objective=None,
                                           bound=None), None
        return solve_model(model, engine, options, **kwargs)

    monkeypatch.setattr(decompose, "solve_model", first_subproblem_finds_nothing)
    monkeypatch.setattr(decompose, "_seed", lambda *args: None)
    monkeypatch.setattr(decompose, "_packed", lambda *args: None)  # nor the packing model
    result, counts = solve_decomposed(inst, "throughput", "cpsat",
                                      SolveOptions(time_limit_s=60, relative_gap=0))
    assert result.stats["parked"] == 1 and len(calls) >= 2
    assert calls[0] <= 60 * decompose.UNSEEDED_SHARE  # the unseeded share, not all the time
    assert check_counts(inst, counts) is None
    assert result.bound <= want + 1 and result.objective >= want
    # with nothing else left, the parked set had the time left: the optimum, proven
    assert result.status == Status.OPTIMAL and result.objective <= want + 1


def test_a_seed_is_an_incumbent_when_the_subproblem_finds_nothing(monkeypatch):
    """The subproblem's hint (``_seed``) is a placement of the master's options: it counts as
    found even if the engine returns nothing in its time (resnet18-28/isaac LL: a 390.7 us
    seed was dropped and the result fell back to balance's 583.1 us)."""
    from pimsolve.stages.placement import decompose

    inst = instance(2, 2, "ll")

    def nothing(model, engine, options, **kwargs):
        if options.relative_gap is not None:  # every subproblem finds nothing
            result, _ = solve_model(model, engine, options, **kwargs)
            return dataclasses.replace(result, status=Status.UNKNOWN, objective=None,
                                       bound=None), None
        return solve_model(model, engine, options, **kwargs)

    monkeypatch.setattr(decompose, "solve_model", nothing)
    result, counts = solve_decomposed(inst, "latency", "cpsat", SolveOptions(time_limit_s=20))
    assert counts is not None and check_counts(inst, counts) is None
    assert result.status == Status.FEASIBLE
    assert result.objective >= predict(inst, counts).latency_ns * TICKS_PER_NS


def test_master_options_leave_the_users_params_alone() -> None:
    """The HT master solves with ``MASTER_PARAMS`` (CP-SAT's full LP relaxation, no
    implied-bound cuts) beside the user's parameters, which win field by field; LL masters
    and the MILP engines get exactly what the user asked for. Every master runs one worker,
    whatever the subproblems get, with the time given and no gap limit."""
    ht, ll = instance(2, 4, "ht"), instance(2, 4, "ll")
    user = SolveOptions(params="max_presolve_iterations:1", workers=2, relative_gap=0.01)

    def params(inst, engine, options):
        parsed = sat_parameters_pb2.SatParameters()
        text = _master_options(inst, engine, options, 3.0, "master_dtime").params
        text_format.Parse(text, parsed)
        return parsed

    master = text_format.Parse(MASTER_PARAMS, sat_parameters_pb2.SatParameters())
    mine = params(ht, "cpsat", user)
    assert mine.max_presolve_iterations == 1
    assert (mine.linearization_level, mine.use_implied_bounds) == (
        master.linearization_level, master.use_implied_bounds)
    assert params(ht, "cpsat", SolveOptions()) == master
    assert params(ll, "cpsat", user) == text_format.Parse(user.params,
                                                         sat_parameters_pb2.SatParameters())
    assert _master_options(ht, "milp-highs", user, 3.0, "master_dtime").params == user.params
    own = params(ht, "cpsat", SolveOptions(params="linearization_level:0 use_implied_bounds:true"))
    assert (own.linearization_level, own.use_implied_bounds) == (0, True)
    solve = _master_options(ll, "cpsat", user, 3.0, "dtime")
    assert (solve.workers, solve.time_limit_s, solve.relative_gap, solve.work_price) == (
        MASTER_WORKERS, 3.0, None, "dtime")


@pytest.mark.parametrize("mode", ["ht", "ll"])
def test_work_clock_repeats_a_run_the_limit_stops(mode):
    """On the work clock every share and stop is decided on counted work, so a run the
    limit ends (the least floor, search, polish, master and subproblem all inside it in
    LL) returns the same placement, bound and statistics twice, at any machine load."""
    inst, _ = vgg8("isaac", mode)
    objective = "throughput" if mode == "ht" else "latency"
    options = SolveOptions(time_limit_s=1.0, clock="work", workers=2)
    runs = [solve_decomposed(inst, objective, "cpsat", options) for _ in range(2)]
    (first, a), (second, b) = runs
    assert first.stop_reason.value == "det_time_limit"  # the limit, not a proof, ended it
    assert check_counts(inst, a) is None
    assert (first.objective, first.bound, first.stats) == (second.objective, second.bound,
                                                           second.stats)
    assert all((x.y == y.y).all() and (x.rho == y.rho).all() and (x.ell == y.ell).all()
               and (x.choice, x.replication) == (y.choice, y.replication)
               for x, y in zip(a, b, strict=True))


def _tight_master(monkeypatch):
    """``test_packing.tight``'s instance without the chain terms (beta = gamma = 0), its HT master
    solved: (instance, master, result, the master's option set)."""
    from pimsolve.stages.placement import decompose, evaluate, formulation
    from tests.stages.placement.test_packing import tight

    for module in (formulation, evaluate):
        monkeypatch.setattr(module, "CHAIN_GM_SHARE", 0.0)
        monkeypatch.setattr(module, "CHAIN_TAIL_SHARE", 0.0)
    inst, _ = tight()
    master = build_master(inst, "throughput")
    result, values = solve_model(master.model, "cpsat", SolveOptions(time_limit_s=10))
    return inst, master, result, decompose._master_picks(master, values)


def test_roomy_places_a_set_that_leaves_room(monkeypatch) -> None:
    """HT, where no greedy placement fits the master's option set: ``_roomy`` holds a copy of
    the master (its cuts included; the master gains only the home cuts it learns) to the
    ``ROOM_HT`` shares in turn and returns the first set a greedy places: valid, within the
    share of the crossbars and of the local memory (the master's own set is not), and no
    better than the master's optimum (it is a restriction). Without the chain terms (beta =
    gamma = 0): with them the master's optimum on this instance is a set that leaves room
    already."""
    from pimsolve.solve.clock import Clock
    from pimsolve.stages.placement import decompose
    from pimsolve.stages.placement.formulation import option_memory

    inst, master, result, picks = _tight_master(monkeypatch)
    before = len(master.model.constraints)
    home_cuts = []
    found = decompose._roomy(inst, "throughput", master, "cpsat", SolveOptions(time_limit_s=10),
                             {}, Clock(), 10.0, picks, home_cuts, {})
    assert found is not None and len(master.model.constraints) == before + len(home_cuts)
    share, value, counts = found
    assert share in decompose.ROOM_HT and check_counts(inst, counts) is None
    assert value >= result.objective
    used = sum(c.replication * inst.layers[i].choices[c.choice].ags
               * inst.layers[i].choices[c.choice].crossbars_per_ag for i, c in enumerate(counts))
    memory = sum(option_memory(inst, i, c.choice, inst.layers[i].replications.index(
        c.replication))[0] for i, c in enumerate(counts))
    assert used <= share * inst.cores * inst.crossbars_per_core
    assert memory <= share * inst.cores * inst.local_memory_bytes
    assert decompose.picks_of(inst, counts) != picks  # the master's set takes more room


def test_roomy_tries_the_next_set_where_one_places_nowhere(monkeypatch) -> None:
    """``_roomy``: where a share's set places nowhere though its homes fit the cores, the
    copy excludes it and the next set at the same share is tried (up to ``ROOM_HT_TRIES``);
    the master is left as it was (no home cut: the homes fit)."""
    from pimsolve.solve.clock import Clock
    from pimsolve.stages.placement import decompose

    inst, master, _, picks = _tight_master(monkeypatch)
    before = len(master.model.constraints)
    placed, refused = decompose._placed, []

    def first_places_nowhere(instance, objective, found, known, clock):
        if not refused:
            refused.append(found)
            return None
        return placed(instance, objective, found, known, clock)

    monkeypatch.setattr(decompose, "_placed", first_places_nowhere)
    home_cuts = []
    found = decompose._roomy(inst, "throughput", master, "cpsat", SolveOptions(time_limit_s=10),
                             {}, Clock(), 10.0, picks, home_cuts, {})
    assert found is not None and home_cuts == [] and len(master.model.constraints) == before
    share, _, counts = found
    assert share == decompose.ROOM_HT[0]  # the same share, another set
    assert decompose.picks_of(inst, counts) != refused[0]


def test_ties_of_an_unproven_master_are_as_good_as_its_set(monkeypatch) -> None:
    """HT: where the master stops before it proves its set optimal, ``_ties`` looks for sets
    of at most that set's master value, not of the master's bound, which no set reaches
    (there ``_ties`` would spend its share finding nothing)."""
    import math

    from pimsolve.stages.placement import decompose
    from tests.stages.placement.test_packing import tight

    inst, _ = tight()
    masters, seen = [], []
    solve = decompose.solve_model

    def unproven(model, engine, options, hint=None):
        result, values = solve(model, engine, options, hint=hint)
        if not masters and values is not None:  # the first solve is the master's
            masters.append(result.objective)
            result = dataclasses.replace(result, status=Status.FEASIBLE,
                                         bound=result.objective / 2)
        return result, values

    ties = decompose._ties

    def recorded(instance, objective, master, engine, options, known, clock, seconds,
                 picks, value, placed):
        seen.append(value)
        return ties(instance, objective, master, engine, options, known, clock, seconds,
                    picks, value, placed)

    monkeypatch.setattr(decompose, "solve_model", unproven)
    monkeypatch.setattr(decompose, "_ties", recorded)
    monkeypatch.setattr(decompose, "TIES_ABOVE", -1.0)  # whatever the set places at
    solve_decomposed(inst, "throughput", "cpsat", SolveOptions(time_limit_s=10))
    assert masters and seen and seen[0] == math.ceil(masters[0] - 1e-9)
    assert seen[0] > math.ceil(masters[0] / 2)  # not the bound


def test_ties_places_another_set_of_the_masters_value(monkeypatch) -> None:
    """HT: ``_ties`` places option sets other than the master's whose master value is the
    master's optimum, every one it places (the master itself is left as it was), and
    returns the best placed one only if it beats the placement it is given."""
    import math

    from pimsolve.solve.clock import Clock
    from pimsolve.stages.placement import decompose
    from tests.stages.placement.test_packing import tight

    inst, _ = tight()
    master = build_master(inst, "throughput")
    before = len(master.model.constraints)
    result, values = solve_model(master.model, "cpsat", SolveOptions(time_limit_s=10))
    picks = decompose._master_picks(master, values)
    value = int(result.objective)
    tried = []
    placed_by = decompose._placed

    def recorded(instance, objective, picks, *args):
        tried.append(picks)
        return placed_by(instance, objective, picks, *args)

    monkeypatch.setattr(decompose, "_placed", recorded)
    monkeypatch.setattr(decompose, "TIES", 50)  # until no other set has the master's value
    found = decompose._ties(inst, "throughput", master, "cpsat", SolveOptions(time_limit_s=10),
                            {}, Clock(), 10.0, picks, value, math.inf)
    assert found is not None and len(master.model.constraints) == before
    other, (placed, counts) = found
    assert other != picks and decompose.picks_of(inst, counts) == other
    assert check_counts(inst, counts) is None and placed >= value
    assert other in tried and picks not in tried and len(set(tried)) == len(tried) < 50
    for each in tried:  # its own master value, the set fixed
        fixed = build_master(inst, "throughput")
        for li, (ui, ri) in enumerate(each):
            fixed.model.add(fixed.z[li, ui, ri], lo=1, name=f"fix{li}")
        alone = solve_model(fixed.model, "cpsat", SolveOptions(time_limit_s=10))[0]
        assert alone.status == Status.OPTIMAL and alone.objective == value
    again = decompose._ties(inst, "throughput", master, "cpsat",
                            SolveOptions(time_limit_s=10), {}, Clock(), 10.0, picks, value,
                            placed)
    assert again is None or again[1][0] < placed


def test_ll_sets_whose_floor_meets_the_incumbent_are_settled_unsolved(monkeypatch) -> None:
    """LL: no placement of an option set is below its ``floor_latency``, so a master's set
    whose floor is at or above the incumbent is settled at its floor (a cut) without being
    placed or solved: vgg8-28/PUMA LL's master sets have floors of 679 us and more against
    the 488 us incumbent, and each cost a subproblem of about 10 s that could not help."""
    ins = inspect_model("vgg8-28", target="puma")
    inst = build_instance(ins.graph, ins.workload, ins.target, "ll")
    start = BASELINES["balance"](inst, "latency")
    built, cuts = [], []
    build, add_cut = decompose.build_model, decompose._add_cut

    def spy_build(instance, objective, picks=None, **kwargs):
        built.append(picks)
        return build(instance, objective, picks=picks, **kwargs)

    def spy_cut(master, picks, value, name):
        cuts.append((picks, value, name))
        return add_cut(master, picks, value, name)

    monkeypatch.setattr(decompose, "build_model", spy_build)
    monkeypatch.setattr(decompose, "_add_cut", spy_cut)
    result, counts = solve_decomposed(inst, "latency", "cpsat",
                                      SolveOptions(time_limit_s=2, clock="work"), start=start)
    floored = [(picks, value) for picks, value, name in cuts if name.startswith("floor")]
    assert floored and result.stats["floored"] == len(floored)
    for picks, value in floored:  # each at its floor, which no better placement reaches
        assert value == math.ceil(decompose._floor_units(inst, picks) - 1e-9)
        assert value >= result.objective and picks not in built
    assert check_counts(inst, counts) is None and result.bound <= result.objective


@pytest.mark.parametrize("budgets", [(1, 2), (1, 10**9)])
def test_a_starved_diagram_widens_its_option_sets(monkeypatch, budgets) -> None:
    """LL: where the diagram starves (at one node a layer the next budget would still keep
    one on some layer: 2 cells), the restricted diagrams of ``WIDE_NODES`` run after it and
    their sets are placed: with every child kept, the vgg8 chain's least-floor set, placed
    at 1030.0 us against the one-node diagram's set at 1057.6. Where the next budget keeps
    every child (10^9 cells) nothing widens."""
    inst = diagram_case("vgg8")
    scale = TICKS_PER_NS  # the model's latency units
    monkeypatch.setattr(diagram, "BUDGETS", budgets)
    monkeypatch.setattr(diagram, "MIN_NODES", 1)
    found = {}
    for wide in ((), (10**6,)):
        monkeypatch.setattr(decompose, "WIDE_NODES", wide)
        stats: dict[str, float] = {}
        _, found[wide] = decompose._least_floor(inst, None, {}, stats, 30.0,
                                                Clock.named("work", 60))
        assert check_counts(inst, found[wide][1]) is None
    (plain, _), (widened, _) = found[()], found[(10**6,)]
    if budgets[1] == 2:
        assert least_floor("vgg8") * scale <= widened < plain
        assert stats["wide_nodes"] == 10**6
    else:
        assert widened == plain and "wide_s" not in stats


def test_ht_seeds_are_gathered_where_the_global_memory_binds() -> None:
    """resnet18-28 on ISAAC (HT), balance's options: the greedy placements' best is bound by
    the shared global memory; the subproblem's seed (and incumbent) is that placement with
    its homes gathered (``local.gather``), faster by more than 5% (112.6 us against 124.0,
    measured)."""
    inst = resnet18_isaac_ht()
    base = BASELINES["balance"](inst, "throughput")
    picks = picks_of(inst, base)
    greedy = level_search(inst, [c.choice for c in base], [c.replication for c in base],
                          "throughput")
    assert predict(inst, greedy).bottleneck == "gm"
    seed = _seed(inst, "throughput", picks, {}, Clock())
    assert check_counts(inst, seed) is None and picks_of(inst, seed) == picks
    assert predict(inst, seed).time_ns < 0.95 * predict(inst, greedy).time_ns


def test_a_greedy_placement_meeting_the_bound_ends_the_loop() -> None:
    """vgg8-28 on ISAAC (HT), a 2% goal: the master's option set, placed greedily, is within
    it of the master's bound (63.37 us against 63.36, measured), so no subproblem is built
    or solved for it."""
    inst, _ = vgg8("isaac", "ht")
    result, counts = solve_decomposed(
        inst, "throughput", "cpsat",
        SolveOptions(time_limit_s=10, clock="work", relative_gap=0.02),
        start=BASELINES["balance"](inst, "throughput"))
    assert result.gap <= 0.02 and result.stop_reason.value == "gap_limit"
    assert result.stats["iterations"] == 1 and result.stats["subproblem_s"] == 0
    assert check_counts(inst, counts) is None
    assert predict(inst, counts).time_ns * TICKS_PER_NS <= result.objective


def test_no_scattered_placement_becomes_the_incumbent(monkeypatch) -> None:
    """With every placement but the start taken for scattered, the decomposition (its seeds,
    packing and subproblems all) returns the start, and its bound still holds for every
    placement: no more than the brute-force optimum, which is better than the start."""
    inst = sync_tiny()
    start = BASELINES["no-replication"](inst, "throughput")
    want = brute_force(inst, "throughput")
    assert predict(inst, start).time_ns > want
    asked = []

    def all_but_the_start(instance, counts):
        asked.append(counts)
        return counts is not start

    monkeypatch.setattr(decompose, "scattered", all_but_the_start)
    result, counts = solve_decomposed(inst, "throughput", "cpsat",
                                      SolveOptions(relative_gap=0, time_limit_s=20), start=start)
    assert asked and counts is start
    assert result.bound <= want * TICKS_PER_NS + 1 < result.objective
