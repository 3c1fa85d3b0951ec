"""The instance's pixel counts (the one-pass count equals a per-range set count) and its LL
edges on a real residual network."""

from __future__ import annotations

import dataclasses
from fractions import Fraction
from types import SimpleNamespace

from hypothesis import given, settings
from hypothesis import strategies as st

from pimsolve.api import _crossbar_target, inspect_model
from pimsolve.stages.placement.instance import _range_pixels, build_instance


def _naive(geo, windows: range) -> int:
    ho, wo = geo.output_hw
    hi, wi = geo.input_hw
    seen = set()
    for t in windows:
        n, rest = divmod(t, ho * wo)
        oy, ox = divmod(rest, wo)
        for i in range(geo.kernel[0]):
            for j in range(geo.kernel[1]):
                y = oy * geo.strides[0] - geo.pads[0] + i * geo.dilations[0]
                x = ox * geo.strides[1] - geo.pads[1] + j * geo.dilations[1]
                if 0 <= y < hi and 0 <= x < wi:
                    seen.add((n, y, x))
    return len(seen)


@settings(max_examples=40, deadline=None)
@given(st.integers(3, 9), st.integers(3, 9), st.integers(1, 3), st.integers(1, 2),
       st.integers(0, 1), st.integers(1, 2), st.integers(1, 2), st.data())
def test_range_pixels_match_a_set_count(hi, wi, k, stride, pad, dilation, batch, data):
    span = (k - 1) * dilation + 1
    ho, wo = (hi + 2 * pad - span) // stride + 1, (wi + 2 * pad - span) // stride + 1
    if ho < 1 or wo < 1:
        return
    geo = SimpleNamespace(output_hw=(ho, wo), input_hw=(hi, wi), kernel=(k, k),
                          strides=(stride, stride), dilations=(dilation, dilation),
                          pads=(pad, pad, pad, pad))
    windows = batch * ho * wo
    reps = sorted(set(data.draw(st.lists(st.integers(1, windows), min_size=1, max_size=4))))
    sums, whole = _range_pixels(geo, windows, reps)
    assert whole == _naive(geo, range(windows))
    for r, got in zip(reps, sums, strict=True):
        assert got == sum(_naive(geo, range(i * windows // r, (i + 1) * windows // r))
                          for i in range(r))


def test_residual_edges_and_spread_on_resnet18():
    """resnet18-28 on arch-c (16 chips), LL: a branch's conv feeds the next directly, while
    what crosses an Add is the Add's output (not direct); n home cores of a 3x3 conv receive
    the rows neighbouring ranges share once each, so the fan-out grows with n from 1."""
    target = _crossbar_target("arch-c")
    inspection = inspect_model("resnet18-28", target=target)
    inst = build_instance(inspection.graph, inspection.workload, target, "ll")
    direct = {(inst.layers[e.producer].name, inst.layers[e.consumer].name): e.direct
              for e in inst.edges}
    assert direct["Conv_0", "layer1.0/Conv_1"]
    assert direct["layer1.0/Conv_1", "layer1.0/Conv_2"]
    assert not direct["layer1.0/Conv_2", "layer1.1/Conv_3"]  # through Add + Relu
    assert not direct["Conv_0", "layer1.1/Conv_3"]  # the skip
    conv1 = inst.layer_index("layer1.0/Conv_1")
    layer = inst.layers[conv1]
    assert len(layer.spread_bytes) == min(target.cores, max(layer.replications))
    assert layer.spread_bytes[0] == layer.load_bytes[0]
    # while each core's range is at least one row of 28 windows (thinner ranges straddle
    # rows or not depending on how 784 divides)
    phis = [inst.fanout(conv1, n) for n in range(1, 29)]
    assert phis[0] == 1 and all(a <= b for a, b in zip(phis, phis[1:], strict=False))
    assert phis[1] == Fraction(30, 28)  # two halves of 28 rows: each reads one row more


def test_home_least_is_one_but_in_core_mode_and_sync_ht():
    """A home keeps all its AGs in core mode, ceil(3/4 min(A, C / X)) in HT with sync links
    (a core of 4 crossbars, AGs of 1: 3 of a replica of 9 or 3 AGs, 2 of one of 2), one
    otherwise."""
    from tests.stages.placement.test_baselines import sync_tiny, tiny_instance

    def least(inst):
        return [inst.home_least(u) for u in inst.layers[0].choices]

    assert [u.ags for u in sync_tiny().layers[0].choices] == [9, 3, 2]
    assert [u.crossbars_per_ag for u in sync_tiny().layers[0].choices] == [1, 1, 1]
    assert least(sync_tiny()) == [3, 3, 2]
    assert least(sync_tiny("ll")) == least(tiny_instance(2, 4, "ht")) == [1, 1, 1]
    cm = dataclasses.replace(sync_tiny("ll"), computing_mode="CM")
    assert least(cm) == [9, 3, 2]


def test_unfoldings_alike_in_every_cost_are_offered_once():
    """vgg8-28 on PUMA: Conv_1 to Conv_5 fill a crossbar's rows with their input channels, so
    I,O,K2, IK,O,K and IK2,O,1 give each the same AGs and costs; only the default IK2,O,1
    is offered. Conv_0 (3 input channels) keeps its three, which differ."""
    target = _crossbar_target("puma")
    inspection = inspect_model("vgg8-28", target=target)
    inst = build_instance(inspection.graph, inspection.workload, target, "ht")
    names = {layer.name: [c.unfolding for c in layer.choices] for layer in inst.layers}
    assert names["Conv_0"] == ["I,O,K2", "IK,O,K", "IK2,O,1"]
    assert all(names[f"Conv_{i}"] == ["IK2,O,1"] for i in range(1, 6))
    for layer in inst.layers:  # no two left alike
        costs = [dataclasses.replace(c, unfolding="") for c in layer.choices]
        assert len(set(costs)) == len(costs)
    everything = {m.layer: [u.name for u in m.unfoldings] for m in inspection.workload.mvm_layers}
    assert len(everything["Conv_1"]) >= 3  # the workload still lists them all


def test_inputs_ahead_only_on_one_chip_with_async_links_in_ll():
    """A home takes its input pixels ahead of its windows on ISAAC (async, one chip) in LL;
    not in HT (they come from the global memory), not on PUMA (sync), not across Arch-C's
    chips."""
    def ahead(name, mode):
        target = _crossbar_target(name)
        inspection = inspect_model("vgg8-28", target=target)
        return build_instance(inspection.graph, inspection.workload, target, mode).inputs_ahead

    assert ahead("isaac", "ll")
    assert not ahead("isaac", "ht") and not ahead("puma", "ll") and not ahead("arch-c", "ll")
