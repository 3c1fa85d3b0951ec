"""Small hardware for draft tests: few groups and cores, so every space can be brute-forced."""

from __future__ import annotations

import dataclasses

from pimsolve.frontend.kernels import red
from pimsolve.stages.drafts.instance import Hardware, hardware
from pimsolve.target import load_target


def tiny_hardware(name: str = "attacc", *, groups: int = 4, cores: int = 4,
                  simd: int = 4) -> Hardware:
    """The bundled target's constants with a tiny PIM hierarchy and SIMD width."""
    base = hardware(load_target(name), red(1, 16))
    return dataclasses.replace(base, groups=groups, cores_per_group=cores, simd=simd,
                               cols_per_row=4, bank_groups_per_group=max(1, cores // 2),
                               cores_per_bank_group=min(2, cores))


