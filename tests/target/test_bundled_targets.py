"""The bundled target files (``targets/*.yaml``) load, and reproduce the papers' numbers.

Each crossbar target's weight capacity is checked against the table it comes from: PIMCOMP
Table V (paper 000) for Arch-A/B/C and COMPASS Table I (paper 003) for chips S/M/L. Both papers
count capacity in MB of 2^20 bytes of crossbar cells:
``crossbars * rows * cols * cell_bits / 8 / 2**20``. PIMCOMP's whole-MB values and COMPASS's
1.125 / 2.0 / 4.5 happen to be exact for the configurations in those tables, but a table entry is
a rounded number, so the comparison allows 5%: enough for rounding to whole MB, too little to
hide a wrong cell precision or array size (a factor of 2 or more) or one crossbar too few or
too many per core on the COMPASS chips (6% or more). The CIM-MLC case studies must
keep their computing modes (paper 002, Figs. 17-19), and the DRAM-PIM targets the HBM3 hierarchy
of DCC's artifact (paper 001, Sec. 5): 32 banks per pseudo-channel, 64 per channel, one PIM group
per channel.
"""

from __future__ import annotations

import pytest
import yaml

from pimsolve.target import (
    SCHEMA_VERSION,
    CrossbarTarget,
    DramPimTarget,
    bundled_targets,
    load_target,
)

BUNDLED = bundled_targets()
MIB = 2**20

EXPECTED = (
    "isaac", "puma", "arch-c", "compass-s", "compass-m", "compass-l",
    "cimmlc-jia", "cimmlc-puma", "cimmlc-jain", "occ-pcm", "hbm-pim", "attacc",
)

# (target, capacity in MB as printed in the paper, where)
PAPER_CAPACITY_MB = [
    ("isaac", 63.0, "PIMCOMP Table V, Arch-A: 1 chip x 168 cores x 96 crossbars, 128x128, 2-bit"),
    ("puma", 69.0, "PIMCOMP Table V, Arch-B: 1 chip x 138 cores x 128 crossbars, 128x128, 2-bit"),
    ("arch-c", 64.0, "PIMCOMP Table V, Arch-C: 16 chips x 4 cores x 8 crossbars, 512x1024, 2-bit"),
    ("compass-s", 1.125, "COMPASS Table I, chip S: 16 cores x 9 crossbars, 256x256"),
    ("compass-m", 2.0, "COMPASS Table I, chip M: 16 cores x 16 crossbars, 256x256"),
    ("compass-l", 4.5, "COMPASS Table I, chip L: 36 cores x 16 crossbars, 256x256"),
]

CIM_MLC_MODES = [
    ("cimmlc-jia", "CM"),    # Fig. 17: Jia et al., core mode
    ("cimmlc-puma", "XBM"),  # Fig. 18: PUMA, crossbar mode
    ("cimmlc-jain", "WLM"),  # Fig. 19: Jain et al., wordline mode, 32 of 256 rows at once
]

DRAM_PIM = [
    # (target, banks per PIM core, special units)
    ("attacc", 1, ("softmax", "accumulator")),
    ("hbm-pim", 2, ()),
]


def _crossbar(name: str) -> CrossbarTarget:
    target = load_target(name)
    assert isinstance(target, CrossbarTarget), f"{name} is not a crossbar target"
    return target


def _dram(name: str) -> DramPimTarget:
    target = load_target(name)
    assert isinstance(target, DramPimTarget), f"{name} is not a DRAM-PIM target"
    return target


def test_all_expected_targets_are_bundled():
    missing = sorted(set(EXPECTED) - set(BUNDLED))
    assert not missing, f"bundled targets missing: {missing}"


@pytest.mark.parametrize("name", sorted(BUNDLED), ids=sorted(BUNDLED))
def test_loads(name):
    target = load_target(name)
    assert target.name == name, "the name key must equal the file name"


@pytest.mark.parametrize("name", sorted(BUNDLED), ids=sorted(BUNDLED))
def test_header_version_and_source(name):
    text = BUNDLED[name].read_text(encoding="utf-8")
    assert text.startswith("#"), "a target file starts with a header comment"
    raw = yaml.safe_load(text)
    assert raw["schema_version"] == SCHEMA_VERSION == 1
    assert isinstance(raw["source"], str) and raw["source"].strip()


@pytest.mark.parametrize(
    ("name", "paper_mb", "where"), PAPER_CAPACITY_MB, ids=[row[0] for row in PAPER_CAPACITY_MB])
def test_crossbar_capacity_matches_paper(name, paper_mb, where):
    target = _crossbar(name)
    xbar = target.crossbar
    cell_mib = target.crossbars * xbar.rows * xbar.cols * xbar.cell_bits / 8 / MIB
    assert cell_mib == pytest.approx(paper_mb, rel=0.05), f"{where}: got {cell_mib:.4f} MiB"
    # None of these stores differential pairs, so the weights fill every cell.
    weight_mib = target.weight_capacity * target.numerics.weight_bits / 8 / MIB
    assert weight_mib == pytest.approx(cell_mib), "weights should use every cell"


@pytest.mark.parametrize(("name", "mode"), CIM_MLC_MODES, ids=[row[0] for row in CIM_MLC_MODES])
def test_cim_mlc_computing_modes(name, mode):
    target = _crossbar(name)
    assert target.computing_mode == mode
    if mode == "WLM":
        assert target.crossbar.parallel_rows < target.crossbar.rows
    else:
        assert target.crossbar.parallel_rows == target.crossbar.rows


def test_occ_pcm_matches_table_ii():
    target = _crossbar("occ-pcm")
    # OCC Sec. V-E lifetime formula: S = 4 x (64 x 64) weights of 8 bit, differential PCM pairs.
    assert target.weight_capacity == 4 * 64 * 64
    assert target.crossbar.device.type == "pcm"
    assert target.crossbar.device.endurance_writes == pytest.approx(3.2e7)
    assert target.crossbar.device.write_latency_ns == pytest.approx(2500)


@pytest.mark.parametrize(("name", "banks_per_core", "special"), DRAM_PIM,
                         ids=[row[0] for row in DRAM_PIM])
def test_dram_pim_hierarchy(name, banks_per_core, special):
    target = _dram(name)
    org = target.organization
    per_rank = org.bank_groups_per_rank * org.banks_per_bank_group
    per_pseudo_channel = org.ranks_per_pseudo_channel * per_rank
    per_channel = org.pseudo_channels_per_channel * per_pseudo_channel
    assert (per_rank, per_pseudo_channel, per_channel) == (16, 32, 64)
    assert org.devices == 5 and org.channels_per_device == 16
    assert org.banks == 5 * 16 * 64
    # One PIM group per channel: DCC's artifact uses 16 groups of 64 banks per device.
    assert target.pim.group_level == "channel"
    assert per_channel // target.pim.banks_per_pim_core == 64 // banks_per_core
    assert target.pim.banks_per_pim_core == banks_per_core
    assert target.pim.simd_width == 16 and target.pim.dtype_bits == 16
    assert tuple(target.pim.special_units) == special
    assert target.timing.tck_ns == pytest.approx(1 / (5.2 / 4), rel=1e-3)  # 5.2 Gbps, QDR
    assert target.host.peak_tflops == pytest.approx(312)
