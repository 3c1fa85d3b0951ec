"""Human-readable tables (rich) of the reports; formats only, computes nothing."""

from __future__ import annotations

from typing import Any

from rich.table import Table

__all__ = ["inspection_tables", "targets_table", "map_tables", "si"]


def _shape(shapes: list[list[int]]) -> str:
    return ", ".join("x".join(str(d) for d in s) for s in shapes)


def inspection_tables(report: dict[str, Any]) -> list[Table]:
    """The layer table and the totals table of an ``inspect`` report."""
    with_target = report["target"] is not None
    layers = Table(title=f"{report['model']}: layers", title_justify="left")
    for column in ("#", "layer", "op", "input", "output", "weights"):
        layers.add_column(column, justify="right" if column in ("#", "weights") else "left")
    layers.add_column("H x W x P" if with_target else "weight shape")
    for column in (["windows", "AGs", "xbars/AG", "xbars"] if with_target else ["windows",
                                                                                   "vector ops"]):
        layers.add_column(column, justify="right")
    for index, row in enumerate(report["layers"]):
        cells = [str(index), row["name"], row["op"], _shape(row["input_shapes"]),
                 _shape(row["output_shapes"]), f"{row['weights']:,}" if row["weights"] else ""]
        if with_target:
            matrix = " x ".join(str(d) for d in row["matrix"]) if "matrix" in row else ""
            cells += [matrix, _num(row.get("windows")), _num(row.get("array_groups")),
                      _num(row.get("crossbars_per_ag")), _num(row.get("crossbars"))]
        else:
            cells += ["x".join(map(str, row["weight_shape"])) if row["weight_shape"] else "",
                      _num(row.get("windows")), _num(row["vector_ops"] or None)]
        layers.add_row(*cells)
    totals = Table(title="totals", title_justify="left", show_header=False)
    totals.add_column("what")
    totals.add_column("value", justify="right")
    t = report["totals"]
    totals.add_row("layers (crossbar layers)", f"{t['layers']} ({t['crossbar_layers']})")
    totals.add_row("weights", f"{t['weights']:,}")
    totals.add_row("vector-unit operations", f"{t['vector_ops']:,}")
    if with_target:
        target = report["target"]
        totals.add_row("weight bytes", f"{t['weight_bytes']:,}")
        totals.add_row("crossbars needed (one replica each)", f"{t['crossbars_needed']:,}")
        totals.add_row(f"crossbars on {target['name']}", f"{t['crossbars_available']:,}")
        totals.add_row("verdict", t["verdict"])
    return [layers, totals]


def _num(value: int | None) -> str:
    return "" if value is None else f"{value:,}"


def targets_table(rows: list[dict[str, Any]]) -> Table:
    """The table of ``pimsolve targets``."""
    table = Table(title="bundled targets", title_justify="left")
    for column in ("name", "kind", "mode", "capacity", "description"):
        table.add_column(column)
    for row in rows:
        table.add_row(row["name"], row["kind"], row["mode"], row["capacity"],
                      row["description"])
    return table


def si(value: float | None, unit: str) -> str:
    """``value`` with an SI prefix (m, u, n below 1) and ``unit``, four digits."""
    if value is None:
        return "-"
    for scale, prefix in ((1, ""), (1e-3, "m"), (1e-6, "u"), (1e-9, "n")):
        if abs(value) >= scale or scale == 1e-9:
            return f"{value / scale:.4g} {prefix}{unit}"
    return f"{value:.4g} {unit}"


def map_tables(report: dict[str, Any]) -> list[Table]:
    """The summary of a ``map`` / ``simulate`` report: metrics beside bounds, and checks."""
    table = Table(title=f"{report['model']} on {report['target']} ({report['mode']} mode, "
                        f"engine {report['engine']})")
    for column in ("metric", "simulated", "bound", "achieved / bound"):
        table.add_column(column)
    metrics, bound = report.get("metrics"), report.get("bounds")
    ratio = report.get("achieved_over_bound", {})
    if metrics:
        for key, unit in (("latency_s", "s"), ("throughput_per_s", "/s"), ("energy_j", "J")):
            r = ratio.get(key)
            table.add_row(key, si(metrics[key], unit), si(bound and bound[key], unit),
                          "-" if r is None else f"{r:.3g}")
        table.add_row("crossbar utilization", f"{metrics['crossbar_utilization']:.3g}", "", "")
        table.add_row("instructions", f"{metrics['instructions']:,}", "", "")
        table.add_row("peak local memory", f"{metrics['peak_local_memory_bytes']:,} B", "", "")
        table.add_row("peak active crossbars", f"{metrics['peak_active_crossbars']:,}", "", "")
    if prediction := report.get("prediction"):
        key, error = prediction["metric"], prediction["relative_error"]
        table.add_row(f"model's {key}", si(prediction[key], "s"), "",
                      "-" if error is None else f"error {error:+.1%}")
        if late := prediction.get("late_layer"):
            table.add_row("simulator late from", late["layer"], "",
                          f"+{si(late['late_s'], 's')}")
    if timing := report.get("timing"):
        table.caption = "seconds: " + ", ".join(f"{key.removesuffix('_s')} {value:.3g}"
                                                for key, value in timing.items())
    checks = Table(title="checks: " + ("passed" if report["checks"]["passed"] else "FAILED"))
    checks.add_column("violation")
    for message in report["checks"]["violations"][:20]:
        checks.add_row(message)
    return [table, checks] if report["checks"]["violations"] else [table]
