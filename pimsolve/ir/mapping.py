"""The decision record every stage fills, and ``mapping.json`` (schema version 1).

A Mapping says which layers run together (partitions, each with a batch size), and for every
crossbar layer its unfolding, its replication factor and the core of every array group of every
replica: ``cores[r][g]`` is where AG ``g`` of replica ``r`` sits, so a replica whose AGs sit on
several cores (and whose partial sums therefore cross the interconnect) is explicit.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["MAPPING_SCHEMA_VERSION", "LayerPlacement", "Partition", "Mapping"]

MAPPING_SCHEMA_VERSION = 1


@dataclass(frozen=True)
class LayerPlacement:
    """Where the array groups of one crossbar layer sit."""

    layer: str
    unfolding: str
    """PIMCOMP Table IV tuple, e.g. 'IK2,O,1'."""
    replication: int
    cores: tuple[tuple[int, ...], ...]
    """``cores[r][g]``: the core of array group ``g`` of replica ``r``."""

    def __post_init__(self) -> None:
        if self.replication != len(self.cores):
            raise ValueError(f"layer {self.layer}: replication {self.replication} but "
                             f"{len(self.cores)} replicas placed")


@dataclass(frozen=True)
class Partition:
    """Layers that sit on the chip at the same time (COMPASS), run ``batch`` inputs at once."""

    layers: tuple[str, ...]
    batch: int = 1


@dataclass(frozen=True)
class Mapping:
    """All decisions for one model on one target."""

    model: str
    target: str
    mode: str
    """'ht' (high-throughput batch pipeline) or 'll' (low-latency element pipeline)."""
    engine: str
    """Who decided: 'none' (the reference mapping), 'cpsat', 'balance', ..."""
    partitions: tuple[Partition, ...]
    layers: tuple[LayerPlacement, ...]
    schema_version: int = MAPPING_SCHEMA_VERSION
