"""Turn an engine's choice (one option per dimension set) into the ``ir.Draft`` it stands for."""

from __future__ import annotations

from collections.abc import Sequence

from pimsolve.ir.kernel import Draft, DraftPart, IndexStrategy
from pimsolve.stages.drafts.instance import DraftInstance, SetOption

__all__ = ["decode", "representative_name"]


def representative_name(inst: DraftInstance, s: int, opt: SetOption) -> str:
    """DCC's notation for the representative mapping, e.g. 'A_0^b+1'."""
    member, ref = inst.representative(s, opt)
    return f"{member.name}^{ref}"


def decode(inst: DraftInstance, choice: Sequence[SetOption], strategy: IndexStrategy) -> Draft:
    """The draft: per dimension set ``[groups, cores per group, per-core size]`` and its
    representative mapping, plus the index strategy."""
    parts = tuple(DraftPart(dset.name, opt.groups, opt.cores, opt.per_core,
                            representative_name(inst, s, opt))
                  for s, (dset, opt) in enumerate(zip(inst.sets, choice, strict=True)))
    return Draft(inst.spec.name, parts, strategy)
