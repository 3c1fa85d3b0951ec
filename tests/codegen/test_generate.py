"""HT codegen: replicas homed on one core share their loads (PIMCOMP Fig. 8c), as the placement
model counts them, and still compute the right numbers."""

from __future__ import annotations

import numpy as np
import pytest

from pimsolve.api import PlacementSettings, functional_check, inspect_model, load_target, map_model
from pimsolve.ir.program import Op
from pimsolve.stages.placement.evaluate import counts_of
from pimsolve.stages.placement.instance import build_instance
from tests.simulate.test_functional import FLOAT_TOLERANCE, NETWORKS

pytest.importorskip("onnxruntime")

ONE_CORE = PlacementSettings(engine="one-layer-per-core")
"""Every replica of a layer on one core: the homes of a layer always share it."""


def _input_loads(program, layer: str, bias_bytes: int) -> np.ndarray:
    """Bytes core k loads from global memory for ``layer``, its bias loads left out."""
    tag = program.layers.index(layer)
    eb = program.element_bits / 8
    out = np.zeros(len(program.cores))
    for k, core in enumerate(program.cores):
        sel = (core.code[:, 0] == Op.LOAD) & (core.tags == tag)
        loads = core.code[sel, 5] * eb
        out[k] = loads.sum() - (bias_bytes if len(loads) else 0)
    return out


@pytest.mark.parametrize("network", sorted(NETWORKS))
def test_colocated_replicas_load_each_pixel_once(network: str) -> None:
    """h replicas (of r) homed on a core load what one replica of r / h would: the distinct
    input pixels of their joint window range, i.e. lam at r / h (the whole input at h = r)."""
    result = map_model(NETWORKS[network](), target="isaac", objective="throughput",
                       settings=ONE_CORE)
    target = load_target("isaac")
    inspection = inspect_model(NETWORKS[network](), target=target)
    instance = build_instance(inspection.graph, inspection.workload, target, "ht")
    shared = 0
    for layer, c in zip(instance.layers, counts_of(instance, result.mapping), strict=True):
        if not any(layer.overlap_bytes) or c.rho.max() < 2:
            continue
        homes = c.rho[c.rho > 0]
        assert (homes == homes[0]).all() and c.replication % homes[0] == 0
        shared += 1
        emitted = _input_loads(result.program, layer.name, int(layer.store_bytes))
        joint = layer.load_bytes[layer.replications.index(c.replication // homes[0])]
        assert (emitted[c.rho > 0] == joint).all()
        assert emitted[c.rho > 0].sum() < c.replication * layer.load_bytes[
            layer.replications.index(c.replication)]
        if homes[0] == c.replication:  # the model's lam h - delta (h - 1) is exact, rounded up
            ri = layer.replications.index(c.replication)
            model = layer.core_load_bytes(ri, c.rho).sum()
            assert joint <= model <= joint + 2 * c.replication
    assert shared, "the mapping co-locates no replicas of an overlapping layer"


@pytest.mark.parametrize("network", sorted(NETWORKS))
def test_colocated_replicas_compute_the_same(network: str) -> None:
    result = functional_check(NETWORKS[network](), target="isaac", mode="ht",
                              settings=ONE_CORE)
    assert result.max_rel_error < FLOAT_TOLERANCE


def test_global_pool_streams_its_pixels() -> None:
    """A global pool's task reads every pixel of its input once: each pixel is loaded into a
    slot that is freed after its read, so a few slots (shared with the other buffers of its
    size) serve all of them; held until the task's end, each pixel would need its own."""
    network = NETWORKS["residual"]()
    result = map_model(network, target="isaac", objective="throughput", settings=ONE_CORE)
    program = result.program
    tag = program.layers.index("gap")
    pixels = inspect_model(network).graph.layer("gap").inputs[0].shape[2:]
    slots = set()
    loads = 0
    for core in program.cores:
        sel = (core.code[:, 0] == Op.LOAD) & (core.tags == tag)
        slots |= {(id(core), a) for a in core.code[sel, 2]}
        loads += int(sel.sum())
    assert loads == int(np.prod(pixels))
    assert len(slots) <= loads // 4


def test_vector_buffers_are_kept_from_crossbar_layers() -> None:
    """mu^v comes off every core's local memory; a core too small for it is infeasible."""
    from pimsolve.errors import InfeasibleError

    target = load_target("isaac")
    inspection = inspect_model(NETWORKS["residual"](), target=target)
    instance = build_instance(inspection.graph, inspection.workload, target, "ht")
    memory = int(target.core.local_memory.size_kib * 1024)
    assert 0 < instance.vector_reserve_bytes < memory
    assert instance.local_memory_bytes == memory - instance.vector_reserve_bytes
    lm = target.core.local_memory.model_copy(
        update={"size_kib": instance.vector_reserve_bytes / 1024})
    small = target.model_copy(update={"core": target.core.model_copy(
        update={"local_memory": lm})})
    with pytest.raises(InfeasibleError, match="vector layers"):
        build_instance(inspection.graph, inspection.workload, small, "ht")
