"""Typed, frozen, unit-named descriptions of accelerators, and the schema of target files.

One pydantic model serves both as the schema at the boundary (unknown keys and impossible
values are errors) and as the frozen object passed inside pimsolve, so the two cannot drift.
Units are part of every key: ``_ns``, ``_pj``, ``_kib``, ``_mib``, ``_gb_per_s`` (gigabytes per
second), ``_mw``. Two kinds of target exist: crossbar PIM (PIMCOMP Table II, CIM-MLC Figs. 5, 6,
8) and near-bank DRAM-PIM (DCC Sec. 4.1 and 5).
"""

from __future__ import annotations

import math
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = [
    "SCHEMA_VERSION", "Target", "CrossbarTarget", "DramPimTarget", "Numerics", "Device",
    "Crossbar", "VectorUnit", "LocalMemory", "Core", "GlobalMemory", "Interconnect", "Chip",
    "OffChipLink", "DramOrganization", "DramTiming", "PimUnits", "Host",
]

SCHEMA_VERSION = 1

PosInt = Annotated[int, Field(gt=0)]
PosFloat = Annotated[float, Field(gt=0)]
NonNegFloat = Annotated[float, Field(ge=0)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=False)


class Numerics(_Strict):
    """Number formats the mapping assumes."""

    weight_bits: PosInt = Field(description="Bits per weight (PIMCOMP quantizes to 16).")
    activation_bits: PosInt = Field(description="Bits per activation element.")
    signed_weights: Literal["native", "differential", "offset"] = Field(
        description="How signed weights are stored: 'native' (PIMCOMP's logical signed cells), "
        "'differential' (a positive and a negative column per weight: twice the columns), "
        "'offset' (an offset added and subtracted digitally: no extra columns).")


class Device(_Strict):
    """The memory device of the crossbar cells."""

    type: Literal["reram", "pcm", "sram", "mram", "flash", "fefet"]
    read_latency_ns: PosFloat = Field(description="Latency of one cell read.")
    write_latency_ns: PosFloat = Field(description="Latency to program one crossbar row.")
    write_energy_pj_per_cell: NonNegFloat
    endurance_writes: PosFloat = Field(description="Writes a cell survives (OCC Table II).")


class Crossbar(_Strict):
    """One crossbar array and its periphery."""

    rows: PosInt
    cols: PosInt
    cell_bits: PosInt
    dac_bits: PosInt = Field(description="Input bits applied per cycle (1 for bit-serial).")
    adc_bits: PosInt
    parallel_rows: PosInt = Field(description="Rows activated at once (CIM-MLC wordline mode); "
                                  "equal to rows when all rows are read together.")
    mvm_latency_ns: PosFloat = Field(description="One full MVM over all rows and input bits.")
    mvm_energy_pj: NonNegFloat = Field(description="Array read energy of one full MVM.")
    adc_energy_pj: NonNegFloat = Field(description="ADC energy of one full MVM.")
    dac_energy_pj: NonNegFloat = Field(description="DAC / driver energy of one full MVM.")
    device: Device

    @model_validator(mode="after")
    def _rows_fit(self) -> Crossbar:
        if self.parallel_rows > self.rows:
            raise ValueError(f"parallel_rows ({self.parallel_rows}) exceeds rows ({self.rows})")
        return self


class VectorUnit(_Strict):
    """The core's vector functional unit (VFU)."""

    lanes: PosInt
    op_latency_ns: PosFloat = Field(description="One lanes-wide vector operation.")
    energy_pj_per_op: NonNegFloat = Field(description="Energy of one element operation.")


class LocalMemory(_Strict):
    """The core's scratchpad (PIMCOMP LocalMem)."""

    size_kib: PosFloat
    bandwidth_gb_per_s: PosFloat
    energy_pj_per_byte: NonNegFloat

    def elements(self, bits: int) -> int:
        """Elements of ``bits`` bits the scratchpad holds."""
        return int(self.size_kib * 1024 * 8 // bits)


class Core(_Strict):
    """One core: crossbars, vector unit, local memory, control."""

    crossbars: PosInt
    mvm_issue_interval_ns: NonNegFloat = Field(
        description="Minimum interval between two MVM issues on one core.")
    execution: Literal["in_order", "out_of_order"]
    local_memory: LocalMemory
    vector_unit: VectorUnit
    leakage_mw: NonNegFloat


class GlobalMemory(_Strict):
    """The chip's shared global memory (PIMCOMP GlobalMem)."""

    size_mib: PosFloat
    bandwidth_gb_per_s: PosFloat
    latency_ns: NonNegFloat
    energy_pj_per_byte: NonNegFloat


class Interconnect(_Strict):
    """The on-chip network between cores."""

    topology: Literal["bus", "mesh"]
    bandwidth_gb_per_s: PosFloat = Field(description="Per link (mesh) or shared (bus).")
    hop_latency_ns: NonNegFloat
    energy_pj_per_byte_hop: NonNegFloat
    communication: Literal["sync", "async"] = Field(
        description="'sync': send and recv pair up and block; 'async': send only (PIMCOMP III-C).")
    mesh_columns: PosInt | None = Field(
        default=None, description="Cores per mesh row; default: the most square layout.")


class Chip(_Strict):
    """One chip: cores, global memory, interconnect."""

    cores: PosInt
    global_memory: GlobalMemory
    interconnect: Interconnect
    leakage_mw: NonNegFloat


class OffChipLink(_Strict):
    """The link between chips."""

    bandwidth_gb_per_s: PosFloat
    latency_ns: NonNegFloat
    energy_pj_per_byte: NonNegFloat


class CrossbarTarget(_Strict):
    """A crossbar PIM accelerator: chips of cores of crossbars (PIMCOMP Table II)."""

    schema_version: Literal[1]
    kind: Literal["crossbar"]
    name: str = Field(min_length=1)
    description: str
    source: str = Field(min_length=1, description="Where the numbers come from.")
    chips: PosInt
    computing_mode: Literal["CM", "XBM", "WLM"] = Field(
        description="CIM-MLC computing mode: core (CM), crossbar (XBM) or wordline (WLM).")
    numerics: Numerics
    chip: Chip
    core: Core
    crossbar: Crossbar
    off_chip: OffChipLink | None = None

    @model_validator(mode="after")
    def _consistent(self) -> CrossbarTarget:
        if self.chips > 1 and self.off_chip is None:
            raise ValueError(f"off_chip: required when chips > 1 (chips = {self.chips})")
        if self.crossbar.cell_bits > self.numerics.weight_bits:
            raise ValueError(f"crossbar.cell_bits ({self.crossbar.cell_bits}) exceeds "
                             f"numerics.weight_bits ({self.numerics.weight_bits})")
        if self.computing_mode != "WLM" and self.crossbar.parallel_rows != self.crossbar.rows:
            raise ValueError("crossbar.parallel_rows: must equal rows unless computing_mode "
                             "is WLM (wordline mode)")
        return self

    @property
    def cores(self) -> int:
        """Cores on all chips."""
        return self.chips * self.chip.cores

    @property
    def column_slices(self) -> int:
        """Crossbar columns one weight occupies (bit slices, doubled for differential)."""
        slices = math.ceil(self.numerics.weight_bits / self.crossbar.cell_bits)
        return slices * (2 if self.numerics.signed_weights == "differential" else 1)

    @property
    def crossbars(self) -> int:
        """Crossbars on the whole accelerator."""
        return self.cores * self.core.crossbars

    @property
    def weight_capacity(self) -> int:
        """Weights the accelerator holds at once."""
        return self.crossbars * self.crossbar.rows * (self.crossbar.cols // self.column_slices)


class DramOrganization(_Strict):
    """The DRAM hierarchy (DCC Sec. 5 / its artifact)."""

    devices: PosInt
    channels_per_device: PosInt
    pseudo_channels_per_channel: PosInt
    ranks_per_pseudo_channel: PosInt
    bank_groups_per_rank: PosInt
    banks_per_bank_group: PosInt
    row_buffer_bytes: PosInt
    bus_bytes_per_burst: PosInt = Field(description="Bytes one burst moves per pseudo-channel.")
    capacity_gib_per_device: PosFloat

    @property
    def banks(self) -> int:
        """Banks in the whole system."""
        return (self.devices * self.channels_per_device * self.pseudo_channels_per_channel
                * self.ranks_per_pseudo_channel * self.bank_groups_per_rank
                * self.banks_per_bank_group)


class DramTiming(_Strict):
    """DRAM timings, in clock cycles of ``tck_ns``."""

    tck_ns: PosFloat
    trcd_cycles: PosInt
    trp_cycles: PosInt
    tcl_cycles: PosInt
    tccd_cycles: PosInt
    burst_length: PosInt


class PimUnits(_Strict):
    """The near-bank processing units (DCC's PIM cores and groups)."""

    unit: Literal["fpu", "gemv"] = Field(description="SIMD FPU (HBM-PIM) or GEMV unit (AttAcc).")
    banks_per_pim_core: PosInt
    simd_width: PosInt = Field(description="Elements one PIM core processes per command.")
    dtype_bits: PosInt
    group_level: Literal["channel", "pseudo_channel", "rank", "bank_group"] = Field(
        description="Which DRAM level forms one PIM group (shares commands and group units).")
    group_level_commands: bool = Field(description="Broadcast (all-bank) commands per group.")
    special_units: tuple[str, ...] = Field(
        default=(), description="Per-group units, e.g. ('softmax', 'accumulator') on AttAcc.")
    compute_energy_pj_per_op: NonNegFloat
    dram_energy_pj_per_bit: NonNegFloat


class Host(_Strict):
    """The host processor (GPU) the PIM devices serve."""

    name: str
    peak_tflops: PosFloat = Field(description="Peak FLOP/s in units of 1e12, at the kernel dtype.")
    bandwidth_gb_per_s: PosFloat


class DramPimTarget(_Strict):
    """A near-bank DRAM-PIM system: host plus PIM-enabled DRAM devices (DCC Sec. 4.1)."""

    schema_version: Literal[1]
    kind: Literal["dram-pim"]
    name: str = Field(min_length=1)
    description: str
    source: str = Field(min_length=1)
    organization: DramOrganization
    timing: DramTiming
    pim: PimUnits
    host: Host

    @model_validator(mode="after")
    def _consistent(self) -> DramPimTarget:
        per_group = {
            "channel": self.organization.pseudo_channels_per_channel
            * self.organization.ranks_per_pseudo_channel * self.organization.bank_groups_per_rank
            * self.organization.banks_per_bank_group,
            "pseudo_channel": self.organization.ranks_per_pseudo_channel
            * self.organization.bank_groups_per_rank * self.organization.banks_per_bank_group,
            "rank": self.organization.bank_groups_per_rank * self.organization.banks_per_bank_group,
            "bank_group": self.organization.banks_per_bank_group,
        }[self.pim.group_level]
        if per_group % self.pim.banks_per_pim_core:
            raise ValueError(f"pim.banks_per_pim_core ({self.pim.banks_per_pim_core}) does not "
                             f"divide the {per_group} banks of one {self.pim.group_level}")
        return self


Target = Annotated[CrossbarTarget | DramPimTarget, Field(discriminator="kind")]
"""Any target; ``kind`` says which."""
