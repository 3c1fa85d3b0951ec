"""The baseline placements: valid counts, decodable, and each does what its method says."""

from __future__ import annotations

import dataclasses
import functools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pimsolve.api import inspect_model
from pimsolve.errors import InfeasibleError
from pimsolve.frontend.load import load_onnx
from pimsolve.lowering import lower
from pimsolve.stages.placement.baselines import (
    BASELINES,
    check_counts,
    default_choices,
    even,
    even_search,
    homes,
    level,
    level_search,
    pack,
    scattered,
)
from pimsolve.stages.placement.diagram import floor_options
from pimsolve.stages.placement.evaluate import (
    LayerCounts,
    chip_crossings,
    counts_of,
    decode,
    floor_latency,
    memory_per_core,
    per_core,
    predict,
)
from pimsolve.stages.placement.instance import SYNC_HOME_SHARE, build_instance
from pimsolve.stages.placement.reference import reference_mapping
from pimsolve.target import load_target
from tests.simulate.test_checks import tiny_cnn
from tests.stages.placement.test_formulation import instance as tiny_instance


def small_target(cores: int, crossbars: int, mode: str = "XBM"):
    """ISAAC with ``cores`` cores of ``crossbars`` crossbars and 8-bit cells (1 column slice)."""
    t = load_target("isaac")
    return t.model_copy(update={
        "name": f"isaac-{cores}x{crossbars}-{mode}", "computing_mode": mode,
        "numerics": t.numerics.model_copy(update={"weight_bits": 8}),
        "crossbar": t.crossbar.model_copy(update={"cell_bits": 8}),
        "chip": t.chip.model_copy(update={"cores": cores}),
        "core": t.core.model_copy(update={"crossbars": crossbars})})


@functools.cache
def vgg8(target: str = "isaac", mode: str = "ht", max_layers_per_core: int | None = None):
    """vgg8-28 on ``target``: 'isaac', or 'small' (12 x 64, XBM), 'cm' (8 x 320, core mode),
    'tiny' (4 x 64: one replica of every layer does not fit)."""
    loaded = {"isaac": "isaac", "small": small_target(12, 64), "cm": small_target(8, 320, "CM"),
              "tiny": small_target(4, 64)}[target]
    ins = inspect_model("vgg8-28", target=loaded)
    return build_instance(ins.graph, ins.workload, ins.target, mode,
                          max_layers_per_core=max_layers_per_core), ins


CASES = [("isaac", "ht", None), ("small", "ht", None), ("small", "ll", 2), ("cm", "ht", None)]


def _run(name: str, case) -> list[LayerCounts] | None:
    inst, _ = vgg8(*case)
    if name == "one-layer-per-core" and case[0] == "small":
        with pytest.raises(InfeasibleError, match="one layer per core needs"):
            BASELINES[name](inst, "latency")
        return None
    return BASELINES[name](inst, "latency")


@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(map(str, c)))
@pytest.mark.parametrize("name", sorted(BASELINES))
def test_baseline_counts_are_valid_and_decode(name, case) -> None:
    counts = _run(name, case)
    if counts is None:
        return
    inst, _ = vgg8(*case)
    assert check_counts(inst, counts) is None
    choices = default_choices(inst)
    assert [c.choice for c in counts] == choices
    mapping = decode(inst, counts, engine=name)
    assert mapping.engine == name
    for layer, p, c in zip(inst.layers, mapping.layers, counts, strict=True):
        assert p.layer == layer.name
        assert p.replication == c.replication == len(p.cores)
        assert all(len(r) == layer.choices[c.choice].ags for r in p.cores)
    back = counts_of(inst, mapping)
    for a, b in zip(counts, back, strict=True):
        assert a.replication == b.replication
        assert np.array_equal(a.y, b.y)
        assert np.array_equal(a.rho, b.rho) and np.array_equal(a.ell, b.ell)


def _layer_times(inst, counts) -> np.ndarray:
    return np.array([layer.windows_per_replica(c.replication) * layer.choices[c.choice].ag_ns
                     for layer, c in zip(inst.layers, counts, strict=True)])


@pytest.mark.parametrize("case", [("isaac", "ht", None), ("small", "ht", None),
                                  ("cm", "ht", None)], ids=lambda c: c[0])
def test_balance_equalizes_layer_times(case) -> None:
    inst, _ = vgg8(*case)
    bal = _layer_times(inst, BASELINES["balance"](inst, "latency"))
    none = _layer_times(inst, BASELINES["no-replication"](inst, "latency"))
    assert bal.max() / bal.min() < none.max() / none.min()
    assert bal.max() < none.max()


@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(map(str, c)))
def test_uniform_uses_one_factor(case) -> None:
    inst, _ = vgg8(*case)
    counts = BASELINES["uniform"](inst, "latency")
    f = max(c.replication for c in counts)
    for layer, c in zip(inst.layers, counts, strict=True):
        # the layer's largest admissible replication <= f (same windows per replica as f)
        assert c.replication == max(r for r in layer.replications if r <= f)
    if case[:2] == ("isaac", "ht"):
        assert f > 1


def test_w0h0_follows_windows() -> None:
    inst, _ = vgg8()
    counts = BASELINES["w0h0"](inst, "latency")
    reps = [c.replication for c in counts]
    windows = [layer.windows for layer in inst.layers]
    for i in range(len(reps)):
        for j in range(len(reps)):
            if windows[i] > windows[j]:
                assert reps[i] >= reps[j]
    assert max(reps) > 1


@pytest.mark.parametrize("case", [("isaac", "ht", None), ("cm", "ht", None)], ids=str)
def test_one_layer_per_core(case) -> None:
    inst, _ = vgg8(*case)
    counts = BASELINES["one-layer-per-core"](inst, "latency")
    layers_on = sum((c.y > 0).astype(int) for c in counts)
    assert layers_on.max() == 1
    assert max(c.replication for c in counts) > 1


@pytest.mark.parametrize("small", ["small", "cm"])
def test_no_replication_keeps_to_local_memory(small) -> None:
    """On 8-12 cores the reference's next-fit overruns the local-memory estimate of core 0;
    the baseline then packs its single replicas within it."""
    inst, ins = vgg8(small, "ht")
    ref = counts_of(inst, reference_mapping(ins.workload, ins.target, "ht"))
    assert memory_per_core(inst, ref).max() > inst.local_memory_bytes
    counts = BASELINES["no-replication"](inst, "latency")
    assert all(c.replication == 1 for c in counts)
    assert check_counts(inst, counts) is None


@pytest.mark.parametrize("case", [("isaac", "ht", None), ("isaac", "ll", None)], ids=str)
def test_no_replication_is_the_reference_mapping(case) -> None:
    inst, ins = vgg8(*case)
    counts = BASELINES["no-replication"](inst, "latency")
    assert all(c.replication == 1 for c in counts)
    ref = counts_of(inst, reference_mapping(ins.workload, ins.target, case[1]))
    for a, b in zip(counts, ref, strict=True):  # same AGs per core (homes may differ: the
        assert np.array_equal(a.y, b.y)          # baseline homes a replica at its largest piece)
        assert a.ell.sum() >= b.ell.sum()


def test_replication_pays_off_on_isaac() -> None:
    inst, _ = vgg8()
    none = predict(inst, BASELINES["no-replication"](inst, "latency")).time_ns
    for name in ("balance", "uniform", "w0h0", "one-layer-per-core"):
        assert predict(inst, BASELINES[name](inst, "latency")).time_ns < none


@pytest.mark.parametrize("name", sorted(BASELINES))
def test_infeasible_when_one_replica_each_does_not_pack(name) -> None:
    inst, _ = vgg8("tiny")
    with pytest.raises(InfeasibleError):
        BASELINES[name](inst, "latency")


def test_pack_returns_none_when_replicas_do_not_fit() -> None:
    inst, _ = vgg8("small")
    choices = default_choices(inst)
    assert pack(inst, choices, [1] * len(inst.layers)) is not None
    assert pack(inst, choices, [layer.replications[-1] for layer in inst.layers]) is None


def _broken(inst, counts, i, **change) -> list[LayerCounts]:
    out = list(counts)
    out[i] = dataclasses.replace(counts[i], **change)
    return out


def test_check_counts_names_what_is_wrong() -> None:
    inst, _ = vgg8("small")
    counts = BASELINES["balance"](inst, "latency")
    assert check_counts(inst, counts) is None
    i = next(j for j, c in enumerate(counts) if c.replication > 1)
    c = counts[i]
    k = int(np.argmax(c.rho))
    bump = np.zeros_like(c.y)
    bump[k] = 1
    assert "AGs placed" in check_counts(inst, _broken(inst, counts, i, y=c.y + bump))
    assert "replica homes" in check_counts(inst, _broken(inst, counts, i, rho=c.rho + bump))
    assert "ell > y" in check_counts(inst, _broken(inst, counts, i, ell=c.ell + c.y + 1))
    assert "ell < rho" in check_counts(inst, _broken(inst, counts, i, ell=c.ell * 0))
    assert "not admissible" in check_counts(inst, _broken(inst, counts, i, replication=10**6))
    assert "choice" in check_counts(inst, _broken(inst, counts, i, choice=99))
    assert "shape" in check_counts(inst, _broken(inst, counts, i, y=c.y[:-1]))
    assert "layer counts" in check_counts(inst, counts[:-1])
    # every AG of every layer on core 0: too many crossbars
    crowded = [dataclasses.replace(x, y=np.eye(1, inst.cores, 0, dtype=np.int64)[0] * x.y.sum(),
                                   rho=np.eye(1, inst.cores, 0, dtype=np.int64)[0] * x.rho.sum(),
                                   ell=np.eye(1, inst.cores, 0, dtype=np.int64)[0] * x.y.sum())
               for x in counts]
    assert "crossbars used" in check_counts(inst, crowded)
    capped = dataclasses.replace(inst, max_layers_per_core=1)
    assert "layers, at most 1" in check_counts(capped, counts)
    cm = dataclasses.replace(inst, computing_mode="CM")  # balance spreads Conv_5's replicas
    assert "core mode" in check_counts(cm, counts)


# -- property tests on a tiny CNN --------------------------------------------------------

@functools.cache
def tiny(cores: int = 3, crossbars: int = 4, mode: str = "ht"):
    target = small_target(cores, crossbars)
    graph = load_onnx(tiny_cnn())
    return build_instance(graph, lower(graph, target), target, mode, max_replication=4)


@st.composite
def placements(draw, inst):
    """A random placement: per replica a home core, and a core for each of its AGs."""
    counts, used = [], np.zeros(inst.cores, dtype=np.int64)
    cores = st.integers(0, inst.cores - 1)
    for layer in inst.layers:
        choice = draw(st.integers(0, len(layer.choices) - 1))
        u = layer.choices[choice]
        r = draw(st.sampled_from(layer.replications))
        y, rho, ell = (np.zeros(inst.cores, dtype=np.int64) for _ in range(3))
        for _ in range(r):
            home = draw(cores)
            rho[home] += 1
            where = [home] + [draw(cores) for _ in range(u.ags - 1)]
            for k in where:
                y[k] += 1
                ell[k] += k == home
        used += y * u.crossbars_per_ag
        counts.append(LayerCounts(choice, r, y, rho, ell))
    return counts, used


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_valid_placements_pass_check_counts(data) -> None:
    inst = tiny()
    counts, used = data.draw(placements(inst))
    fits = bool((used <= inst.crossbars_per_core).all())
    why = check_counts(inst, counts)
    if fits:
        assert why is None
        mapping = decode(inst, counts, engine="test")
        assert [p.replication for p in mapping.layers] == [c.replication for c in counts]
    else:
        assert "crossbars used" in why


@settings(max_examples=100, deadline=None)
@given(ags=st.integers(1, 6), y=st.lists(st.integers(0, 9), min_size=1, max_size=6))
def test_homes_gives_valid_rho_and_ell(ags, y) -> None:
    y = np.array(y, dtype=np.int64)
    y[-1] += (-int(y.sum())) % ags
    rho, ell = homes(y, ags)
    assert rho.sum() * ags == y.sum()
    assert (ell <= y).all() and (ell <= ags * rho).all() and (ell >= rho).all()
    assert (ell >= y // ags * ags).all()  # whole replicas stay at home


def test_pack_keeps_a_split_replica_on_one_chip() -> None:
    """Two chips of two cores with 2 crossbars each; conv1's 3-AG replica needs two cores and
    may use cores 1-3. Core 1 (chip 0) has the most room, but its chip holds only two of the
    AGs: pack homes the replica on chip 1 instead, so nothing crosses the off-chip link."""
    target = small_target(2, 2).model_copy(update={
        "chips": 2, "off_chip": load_target("arch-c").off_chip})
    graph = load_onnx(tiny_cnn())
    inst = build_instance(graph, lower(graph, target), target, "ht")
    assert inst.chips == 2 and inst.offchip_bytes_per_ns is not None
    choices = [[u.ags for u in layer.choices].index(n) for layer, n in
               zip(inst.layers, (3, 1, 1), strict=True)]
    counts = pack(inst, choices, [1, 1, 1], cores=[[1, 2, 3], range(4), range(4)])
    assert counts is not None and check_counts(inst, counts) is None
    assert counts[0].y.tolist() == [0, 0, 2, 1]
    assert predict(inst, counts).resources["offchip"] == 0.0


@functools.cache
def puma_vgg8():
    ins = inspect_model("vgg8-28", target="puma")
    inst = build_instance(ins.graph, ins.workload, ins.target, "ht")
    options = BASELINES["one-layer-per-core"](inst, "throughput")
    return inst, [c.choice for c in options], [c.replication for c in options]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(share=st.floats(1.8, 6.0))
def test_level_keeps_every_core_under_its_cap(share: float) -> None:
    """PUMA, vgg8-28 HT (sync: a core's MVM issue and transfers add up), one-layer-per-core's
    options, largest AGs first: from 1.8 times the cores' mean MVM issue time up, level
    finds a placement; it is valid, fits local memory, keeps every core's busiest resource
    within the cap, and homes each replica with most of the AGs one core can hold."""
    inst, choices, reps = puma_vgg8()
    mean = sum(layer.choices[u].ags * r * layer.windows_per_replica(r)
               * layer.choices[u].issue_ns
               for layer, u, r in zip(inst.layers, choices, reps, strict=True)) / inst.cores
    cap = share * mean
    counts = level(inst, choices, reps, cap, "crossbars")
    assert counts is not None
    assert check_counts(inst, counts) is None
    assert memory_per_core(inst, counts).max() <= inst.local_memory_bytes
    busy = per_core(inst, counts)
    assert "serial" in busy
    assert max(v.max() for v in busy.values()) <= cap * (1 + 1e-9)
    for layer, c in zip(inst.layers, counts, strict=True):
        u = layer.choices[c.choice]
        at_home = c.ell[c.rho > 0] / c.rho[c.rho > 0]
        assert (at_home >= np.ceil(SYNC_HOME_SHARE * min(
            u.ags, inst.crossbars_per_core // u.crossbars_per_ag)) - 1e-9).all()


def test_level_search_mixes_layers_on_puma() -> None:
    """One-layer-per-core's options for vgg8-28 on PUMA (HT): pack puts Conv_1's dense AGs
    (two windows per crossbar) on cores of their own; mixing them with sparse AGs of later
    layers shortens the busiest core's cycle by over 10% (16% measured)."""
    inst, choices, reps = puma_vgg8()
    packed = predict(inst, pack(inst, choices, reps)).time_ns
    leveled = level_search(inst, choices, reps, "throughput")
    assert check_counts(inst, leveled) is None
    assert predict(inst, leveled).time_ns < 0.9 * packed
    mixed = (np.array([c.y for c in leveled]) > 0).sum(axis=0)
    assert mixed.max() > 1


def test_level_search_shares_loads_where_global_memory_binds():
    """resnet18-28 on ISAAC (HT), balance's options: pack's placement is bound by the global
    memory (131.1 us). Homes of one layer on one core load their overlapping inputs once;
    level puts a replica's home with one or two of its layer where it can, and
    level_search tries caps up to that cycle time: 124.1 us measured, still bound by the
    global memory."""
    ins = inspect_model("resnet18-28", target="isaac")
    inst = build_instance(ins.graph, ins.workload, ins.target, "ht")
    options = BASELINES["balance"](inst, "throughput")
    choices, reps = [c.choice for c in options], [c.replication for c in options]
    packed = predict(inst, pack(inst, choices, reps))
    assert packed.bottleneck == "gm"
    leveled = level_search(inst, choices, reps, "throughput")
    assert check_counts(inst, leveled) is None
    assert predict(inst, leveled).time_ns < 0.96 * packed.time_ns
    shared = sum(int((c.rho > 1).sum()) for c in leveled)
    assert shared > sum(int((c.rho > 1).sum()) for c in pack(inst, choices, reps))


# -- even (LL) ---------------------------------------------------------------------------

@functools.cache
def even_case(name: str):
    """LL instances of the tiny CNN (3 layers, r <= 4 or 2) for ``even``."""
    graph = load_onnx(tiny_cnn())
    if name in ("xbm", "cm", "layers", "memory"):
        target = small_target(4, 6, "CM" if name == "cm" else "XBM")
        if name == "memory":  # 2 KiB a core: local memory turns some cores away
            memory = target.core.local_memory.model_copy(update={"size_kib": 2})
            target = target.model_copy(update={"core": target.core.model_copy(
                update={"local_memory": memory})})
        return build_instance(graph, lower(graph, target), target, "ll", max_replication=4,
                              max_layers_per_core=1 if name == "layers" else None)
    if name == "sync":
        return tiny_instance(3, 4, "ll", communication="sync", issue_ns=1600)
    return tiny_instance(3, 4, "ll", chips=2)


def random_option_sets(inst, count: int, seed: int = 0):
    """``count`` random (choices, reps) whose crossbars fit the cores in all."""
    rng = np.random.default_rng(seed)
    room = inst.cores * inst.crossbars_per_core
    out = []
    while len(out) < count:
        choices = [int(rng.integers(len(layer.choices))) for layer in inst.layers]
        reps = [int(rng.choice(layer.replications)) for layer in inst.layers]
        if sum(r * layer.choices[u].ags * layer.choices[u].crossbars_per_ag for layer, u, r
               in zip(inst.layers, choices, reps, strict=True)) <= room:
            out.append((choices, reps))
    return out


@pytest.mark.parametrize("homes_first", [False, True])
@pytest.mark.parametrize("name", ["xbm", "cm", "layers", "memory", "sync", "chips"])
def test_even_places_validly(name, homes_first) -> None:
    """40 random option sets that fit the crossbars in all: every placement ``even`` returns
    (homes among the AGs or first) is valid (all AGs, homes, crossbars, local memory, core
    mode, layers per core), and it places most of them (at least half: a greedy may miss a
    tight packing)."""
    inst = even_case(name)
    placed = 0
    for choices, reps in random_option_sets(inst, 40):
        counts = even(inst, choices, reps, homes_first=homes_first)
        if counts is not None:
            placed += 1
            assert check_counts(inst, counts) is None
            assert [c.replication for c in counts] == reps
    assert placed >= 20


@pytest.mark.parametrize("homes_first", [False, True])
def test_even_aligned_crosses_chips_less(homes_first) -> None:
    """Two chips of three cores, the 40 random option sets that both ways place: aligned,
    every placement is valid; with the homes among the AGs, no set sends more bytes across
    the chips than unaligned and 27 send fewer (5616 against 15880 in all, measured); either
    way the latencies add up to less (homes first: 7.76 against 18.80 ms)."""
    inst = even_case("chips")
    sent = {False: 0, True: 0}
    latency = {False: 0.0, True: 0.0}
    for choices, reps in random_option_sets(inst, 40):
        placed = {a: even(inst, choices, reps, homes_first=homes_first, aligned=a)
                  for a in (False, True)}
        if None in placed.values():
            continue
        assert check_counts(inst, placed[True]) is None
        crossing = {a: sum(chip_crossings(inst, c).edge_bytes.values())
                    for a, c in placed.items()}
        assert homes_first or crossing[True] <= crossing[False]
        for a, c in placed.items():
            sent[a] += crossing[a]
            latency[a] += predict(inst, c).time_ns
    assert latency[True] < latency[False]
    assert homes_first or sent[True] < sent[False]


def test_even_homes_first_places_where_homes_fill_the_memory() -> None:
    """2 KiB of local memory a core: with the homes placed among the AGs, 2 of 40 option
    sets find no core with memory for their last homes (38 placed, measured); with the homes
    placed first, largest first, all 40 are placed, and every set the first way places the
    second does too."""
    inst = even_case("memory")
    among = first = 0
    for choices, reps in random_option_sets(inst, 40):
        a = even(inst, choices, reps) is not None
        b = even(inst, choices, reps, homes_first=True) is not None
        assert b or not a
        among, first = among + a, first + b
    assert first > among


@functools.cache
def puma_vgg8_ll():
    ins = inspect_model("vgg8-28", target="puma")
    return build_instance(ins.graph, ins.workload, ins.target, "ll")


def test_even_spreads_each_layer_on_puma() -> None:
    """vgg8-28 on PUMA (LL; in-order issue and sync communication: a core's AGs of one layer
    issue one after another), w0h0's options: ``level_search`` stacks up to 12 AGs of a layer
    on a core (2473.1 us measured); ``even`` holds at most one more than the fewest any
    placement can (ceil(A r / K)) and less than half that latency (790.7 us)."""
    inst = puma_vgg8_ll()
    options = BASELINES["w0h0"](inst, "latency")
    choices, reps = [c.choice for c in options], [c.replication for c in options]
    spread_out = even(inst, choices, reps)
    assert check_counts(inst, spread_out) is None
    for layer, c in zip(inst.layers, spread_out, strict=True):
        assert c.y.max() <= -(-layer.choices[c.choice].ags * c.replication // inst.cores) + 1
    stacked = level_search(inst, choices, reps, "latency")
    assert predict(inst, spread_out).time_ns < 0.5 * predict(inst, stacked).time_ns


def test_even_search_places_the_slowest_layer_first() -> None:
    """vgg8-28 on PUMA (LL), the restricted diagram's option set (floor 488.0 us, 446.8
    before the floor counted the AGs a core holds): ``even`` leaves Conv_1 the scraps of
    crossbars, three AGs on some core (543.5 us measured); placing the layer furthest above
    its floor first, ``even_search`` gets within 12% of the floor (496.9 us), and never
    below it."""
    inst = puma_vgg8_ll()
    floor, picks = floor_options(inst, 2_000_000)
    choices = [ui for ui, _ in picks]
    reps = [layer.replications[ri] for layer, (_, ri) in zip(inst.layers, picks, strict=True)]
    assert floor == pytest.approx(floor_latency(inst, choices, reps))
    first = predict(inst, even(inst, choices, reps)).time_ns
    found = even_search(inst, choices, reps)
    assert check_counts(inst, found) is None
    assert floor <= predict(inst, found).time_ns < min(0.95 * first, 1.12 * floor)


def sync_tiny(mode: str = "ht"):
    """The tiny CNN on 2 cores of 4 crossbars, PUMA's issue interval and sync links."""
    return tiny_instance(2, 4, mode, communication="sync", link_gb_per_s=1.0, issue_ns=1600)


def _conv1_split(split: bool) -> list[LayerCounts]:
    """The tiny CNN on two cores: conv1 (2 AGs of 1 crossbar) homed on core 0, keeping both
    AGs or (``split``) one, the other on core 1 with conv2 and fc."""
    conv1 = (LayerCounts(2, 1, [1, 1], [1, 0], [1, 0]) if split
             else LayerCounts(2, 1, [2, 0], [1, 0], [2, 0]))
    return [conv1, LayerCounts(2, 1, [0, 1], [0, 1], [0, 1]),
            LayerCounts(0, 1, [0, 1], [0, 1], [0, 1])]


def test_a_home_keeping_less_than_levels_share_is_scattered_with_sync_links() -> None:
    """A core of 4 crossbars holds both of conv1's AGs, so its home must keep
    ceil(0.75 * 2) = 2; only HT with sync communication asks it."""
    for inst in (sync_tiny(), sync_tiny("ll"), tiny_instance(2, 4, "ht")):
        for split in (False, True):
            assert check_counts(inst, _conv1_split(split)) is None
    assert not scattered(sync_tiny(), _conv1_split(False))
    assert scattered(sync_tiny(), _conv1_split(True))
    assert not scattered(sync_tiny("ll"), _conv1_split(True))
    assert not scattered(tiny_instance(2, 4, "ht"), _conv1_split(True))
    # the greedy seed keeps the share by construction
    inst = sync_tiny()
    assert not scattered(inst, level_search(inst, [2, 2, 0], [1, 1, 1], "throughput"))
