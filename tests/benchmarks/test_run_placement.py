"""The placement benchmark's ``--update``: rerun rows replace their own rows of a table."""

from __future__ import annotations

from benchmarks.placement.run_placement import merge


def _row(model, target, mode, engine, value):
    return {"model": model, "target": target, "mode": mode, "engine": engine, "value": value}


def test_rerun_rows_replace_their_own_and_the_rest_stay_in_order():
    kept = [_row("vgg8-28", "isaac", "ht", "cpsat", 1.0),
            _row("vgg8-28", "isaac", "ht", "balance", 2.0),
            _row("vgg8-28", "isaac", "ll", "cpsat", 3.0),
            _row("vgg8-28", "puma", "ht", "cpsat", 4.0)]
    new = [_row("vgg8-28", "puma", "ht", "balance", 5.0),  # a row the table lacked
           _row("vgg8-28", "isaac", "ll", "cpsat", 6.0),  # a rerun
           _row("resnet34", "isaac", "ht", "cpsat", 7.0)]  # a model the table lacked
    merged = merge(kept, new)
    assert [r["value"] for r in merged] == [1.0, 2.0, 6.0, 4.0, 5.0, 7.0]


def test_engines_follow_the_benchmark_order_whatever_order_they_ran_in():
    new = [_row("vgg8-28", "isaac", "ht", e, i)
           for i, e in enumerate(["no-replication", "ga", "cpsat", "someday"])]
    assert [r["engine"] for r in merge([], new)] == ["cpsat", "ga", "no-replication",
                                                     "someday"]
