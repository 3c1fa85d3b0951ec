"""The cost model on two tiny drafts, derived by hand from the bundled targets' timings.

Constants (both targets: tCK 0.769 ns = 769,000 fs, tCCD 4, tRCD = tRP = tCL = 19, BL 2,
32 B per burst per pseudo-channel, 2 pseudo-channels per group, 1 KiB rows, 16 FP16 lanes,
host 3352 GB/s):
  t_cmd   = 4 x 769,000                          =   3,076,000 fs per PIM command
  t_row   = (19 + 19) x 769,000                  =  29,222,000 fs per row opened
  cols    = 1024 B / (16 x 2 B)                  =          32 commands per row
  t_phase = (19 + 19 + 19) x 769,000             =  43,833,000 fs, three phases: 131,499,000
  host    = round(1e6 / 3352)                    =         298 fs per byte
  group   = round(769,000 x 2 / (32 B x 2))      =      24,031 fs per byte (24,031.25)
"""

from __future__ import annotations

from pimsolve.frontend.kernels import gemv, va
from pimsolve.stages.drafts.baselines import default_layout
from pimsolve.stages.drafts.cost import FS_PER_S, draft_cost, gpu_time_s
from pimsolve.stages.drafts.instance import SetOption, build_instance
from pimsolve.target import load_target


def test_constants_from_the_target() -> None:
    hw = build_instance(va(1, 64), load_target("hbm-pim")).hw
    assert (hw.t_cmd_fs, hw.t_row_fs, hw.cols_per_row, hw.t_phase_fs) == (
        3_076_000, 29_222_000, 32, 43_833_000)
    assert (hw.host_fs_per_byte, hw.group_fs_per_byte) == (298, 24_031)
    assert (hw.groups, hw.cores_per_group, hw.simd) == (80, 32, 16)
    assert build_instance(gemv(1, 32, 32), load_target("attacc")).hw.cores_per_group == 64


def test_va_on_hbm_pim_by_hand() -> None:
    """c[b,i] = a[b,i] + d[b,i], 1 x 64 FP16; draft b: [1, 1], i: [2 groups, 2 cores] -> 16
    elements per core = 1 SIMD lane step.

    input, per tensor (a, d): host 128 B x 298 = 38,144; PIM writes one 32-B lane tile to each
      of 2 cores of a group: 64 B x 24,031 = 1,537,984; two tensors: 3,152,256
    compute: map with 2 reads + 1 write = 3 commands x 1 step: 9,228,000; rows ceil(3/32) = 1:
      29,222,000; together 38,450,000
    output c: PIM reads 64 B per group: 1,537,984; host writes 128 B: 38,144; 1,576,128
    fixed: 131,499,000.  Total 174,677,384 fs.
    """
    inst = build_instance(va(1, 64), load_target("hbm-pim"))
    choice = (SetOption(1, 1, 0, 0, 1), SetOption(2, 2, 0, 0, 16))
    cost = draft_cost(inst, choice, "exact")
    assert (cost.input_fs, cost.compute_fs, cost.output_fs, cost.fixed_fs) == (
        3_152_256, 38_450_000, 1_576_128, 131_499_000)
    assert cost.total_fs == 174_677_384


def test_gemv_on_attacc_by_hand() -> None:
    """y[b,i] += x[b,j] * W[i,j], 1 x 32 x 32; draft b: [1, 1], i: [2, 4] (4 rows per core),
    j: [1, 2] (16 columns per core). W is resident; x goes to the group buffer.

    input x: host 64 B x 298 = 19,072; PIM: one lane tile for each of the 2 j-cores:
      64 B x 24,031 = 1,537,984
    compute: 4 rows x 1 lane step = 4 MACs: 12,304,000; rows ceil(4/32) = 1: 29,222,000;
      write-back of the 4 outputs (1 lane step): 3,076,000; together 44,602,000
    output y: partial sums over j merged by the group's accumulator; 4 i-cores x 32 B = 128 B:
      3,075,968; host 64 B: 19,072; together 3,095,040
    fixed: 131,499,000.  Total 180,753,096 fs.
    """
    inst = build_instance(gemv(1, 32, 32), load_target("attacc"))
    choice = (SetOption(1, 1, 0, 0, 1), SetOption(2, 4, 0, 0, 4), SetOption(1, 2, 0, 0, 16))
    cost = draft_cost(inst, choice, "exact")
    assert (cost.input_fs, cost.compute_fs, cost.output_fs) == (
        1_557_056, 44_602_000, 3_095_040)
    assert cost.total_fs == 180_753_096
    # HBM-PIM has no accumulator: the 2 j-cores' partial sums are read separately (x2 PIM)
    hbm = build_instance(gemv(1, 32, 32), load_target("hbm-pim"))
    assert draft_cost(hbm, choice, "exact").output_fs == 2 * 3_075_968 + 19_072


def test_gpu_roofline_by_hand() -> None:
    """GEMV 1 x 4096 x 4096: 2 x 4096^2 FLOPs / 312e12 = 0.1 us < bytes (W + x + y =
    33,570,816 B) / 3352e9 = 10.0152 us; plus one DRAM latency 43.833 ns."""
    inst = build_instance(gemv(1, 4096, 4096), load_target("attacc"))
    expected = (4096 * 4096 + 2 * 4096) * 2 / 3352e9 + 43_833_000 / FS_PER_S
    assert abs(gpu_time_s(inst.spec, inst.hw) - expected) < 1e-15


def test_default_layout_follows_attacc() -> None:
    """Batches across groups; the matrix's first dimension across 16 bank groups (with the
    groups left over), its second across the 4 banks of a bank group (DCC Sec. 5)."""
    inst = build_instance(gemv(4, 4096, 4096), load_target("attacc"))
    choice, _ = default_layout(inst)
    assert [(o.groups, o.cores) for o in choice] == [(4, 1), (20, 16), (1, 4)]
    hbm = build_instance(gemv(4, 4096, 4096), load_target("hbm-pim"))
    assert [(o.groups, o.cores) for o in default_layout(hbm)[0]] == [(4, 1), (20, 16), (1, 2)]
