"""Every solver backend imports and solves in one process, in either import order.

ortools 9.15 bundles HiGHS 1.12.0; highspy of another version next to it fails to import
(undefined symbol), so this is checked in fresh interpreters, importing highspy first and last.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from pimsolve.solve import BACKENDS, available_backends, smoke_solve


def test_every_backend_is_installed() -> None:
    assert available_backends() == list(BACKENDS)


@pytest.mark.parametrize("name", list(BACKENDS))
def test_backend_solves_the_knapsack(name: str) -> None:
    assert smoke_solve(name) == pytest.approx(8.0)


@pytest.mark.parametrize("order", [["pulp-highs", "cpsat", "ortools-highs", "ortools-scip",
                                    "pulp-cbc"],
                                   ["cpsat", "ortools-highs", "ortools-scip", "pulp-cbc",
                                    "pulp-highs"]], ids=["highspy-first", "highspy-last"])
def test_all_backends_in_one_fresh_process(order: list[str]) -> None:
    code = ("from pimsolve.solve import smoke_solve\n"
            f"print([smoke_solve(n) for n in {order!r}])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == str([8.0] * len(order))
