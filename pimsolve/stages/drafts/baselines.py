"""Baselines: the backend's default layout (AttAcc's data distribution) and the GPU roofline.

DCC Sec. 5 'Comparison Points': AttAcc's default implementation "distributes different batches
or attention heads across 16 pCHs, partitions the first tensor dimension across 16 bank groups
per pCH, and partitions the second tensor dimension across 4 banks per bank group"; HBM-PIM
uses the same distribution. In pimsolve's hierarchy the '16 pCHs' are the PIM groups (see
targets/attacc.yaml), so: the first dimension set (batches, or batch x heads) across groups;
the matrix's first dimension across the bank groups of a group with the groups left over (as
DCC's artifact baseline does); its second dimension across the PIM cores of a bank group.
"""

from __future__ import annotations

from pimsolve.ir.kernel import IndexStrategy
from pimsolve.stages.drafts.instance import DraftInstance, SetOption

__all__ = ["default_layout"]


def _option(inst: DraftInstance, s: int, groups: int, cores: int) -> SetOption:
    member = inst.sets[s].members[0]
    ref = next(k for k, r in enumerate(member.refs) if r.var is not None)
    groups = max(1, min(groups, member.size))
    cores = max(1, min(cores, member.size // groups))
    return SetOption(groups, cores, 0, ref, -(-member.size // (groups * cores)))


def default_layout(inst: DraftInstance) -> tuple[tuple[SetOption, ...], IndexStrategy]:
    """The backend's fixed layout as a draft of ``inst`` (strategy: 'expand', contiguous)."""
    hw, n = inst.hw, len(inst.sets)
    strategy: IndexStrategy = inst.strategies[0]
    if n == 1:
        return (_option(inst, 0, hw.groups, hw.cores_per_group),), strategy
    outer = _option(inst, 0, hw.groups, 1)
    rest = hw.groups // outer.groups
    parts = [outer]
    # The matrix dimensions: the stream operand's last two sets, first then second.
    inner = list(range(1, n))
    if len(inner) == 1:
        parts.append(_option(inst, inner[0], rest, hw.cores_per_group))
    else:
        first, second = inner[-2], inner[-1]
        chosen = {first: _option(inst, first, rest, hw.bank_groups_per_group),
                  second: _option(inst, second, 1, hw.cores_per_bank_group)}
        for s in inner:
            parts.append(chosen.get(s, _option(inst, s, 1, 1)))
    return tuple(parts), strategy
