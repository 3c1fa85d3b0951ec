"""``parallel.beside``: the same result, or the same exception, forked or not."""

from __future__ import annotations

import os
import time

import pytest

from pimsolve import parallel


def _square_and_pid(x: int) -> tuple[int, int]:
    return x * x, os.getpid()


def _fail(message: str) -> None:
    raise ValueError(message)


@pytest.mark.parametrize("cores", [1, 2])
def test_beside_returns_the_result(monkeypatch, cores: int) -> None:
    """With two cores (and fork) the function runs in another process while the block runs;
    with one, in this process when asked. Either way the result is the function's."""
    monkeypatch.setattr(parallel, "cores_to_run_on", lambda: cores)
    forks = cores == 2 and "fork" in parallel.multiprocessing.get_all_start_methods()
    with parallel.beside(_square_and_pid, 7) as result:
        value, pid = result()
        assert result() == (value, pid)  # asked twice, computed once
    assert value == 49
    assert (pid != os.getpid()) == forks


@pytest.mark.parametrize("cores", [1, 2])
def test_beside_raises_what_the_function_raised(monkeypatch, cores: int) -> None:
    monkeypatch.setattr(parallel, "cores_to_run_on", lambda: cores)
    with parallel.beside(_fail, "no room") as result, pytest.raises(ValueError, match="no room"):
        result()


def test_beside_not_wanted_runs_here(monkeypatch) -> None:
    monkeypatch.setattr(parallel, "cores_to_run_on", lambda: 2)
    with parallel.beside(_square_and_pid, 3, wanted=False) as result:
        assert result() == (9, os.getpid())


def test_a_child_not_asked_is_stopped(monkeypatch, tmp_path) -> None:
    """A block that ends without asking (here: it raises) stops the child rather than wait
    for it: the child, which would write a file after 1 s, never does."""
    monkeypatch.setattr(parallel, "cores_to_run_on", lambda: 2)
    marker = tmp_path / "finished"
    with pytest.raises(KeyError), parallel.beside(_sleep_then_touch, marker):
        raise KeyError("the block failed")
    time.sleep(1.5)  # past when the child would have written it
    assert not marker.exists()


def _sleep_then_touch(path) -> None:
    time.sleep(1)
    path.touch()
