"""One function run in a forked process beside the caller's own work.

pimsolve's steps are pure Python, one core each. Where two independent pieces of work follow
each other (codegen's two LL priorities; the verifier and the simulator on one program), a
second core can take one of them. The results are the same either way.

Fork, not spawn: the child starts with the caller's memory, so the inputs are not pickled
(only the result comes back through a pipe), and a user's script needs no ``__main__`` guard.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

__all__ = ["beside", "can_fork", "cores_to_run_on"]

T = TypeVar("T")


def cores_to_run_on() -> int:
    """The CPU cores this process may run on (its affinity where the OS tells it)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def can_fork() -> bool:
    """Whether ``beside`` forks: the OS forks and the process may run on two cores."""
    return "fork" in multiprocessing.get_all_start_methods() and cores_to_run_on() >= 2


@contextmanager
def beside(fn: Callable[..., T], *args: Any, wanted: bool = True) -> Iterator[Callable[[], T]]:
    """Run ``fn(*args)`` in a forked process while the ``with`` block runs (where ``wanted``
    and ``can_fork()``), else when its result is first asked for. Yields that ask: it returns
    the result, or raises what ``fn`` raised. A child still running when the block ends
    (its result never asked for, or the block raised) is stopped."""
    if not (wanted and can_fork()):
        done: list[T] = []

        def now() -> T:
            if not done:
                done.append(fn(*args))
            return done[0]

        yield now
        return
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)

    def child() -> None:
        receive.close()
        try:
            outcome = (True, fn(*args))
        except BaseException as exc:  # noqa: BLE001 (handed to the parent, which re-raises)
            outcome = (False, exc)
        send.send(outcome)
        send.close()

    process = context.Process(target=child, daemon=True)
    process.start()
    send.close()
    got: list[tuple[bool, Any]] = []

    def ask() -> T:
        if not got:
            try:
                got.append(receive.recv())
            except EOFError:
                process.join()
                raise RuntimeError(f"the forked process running {fn.__name__} died "
                                   f"(exit code {process.exitcode})") from None
            process.join()
        ok, value = got[0]
        if not ok:
            raise value
        return value

    try:
        yield ask
    finally:
        receive.close()
        if process.is_alive():
            process.terminate()
        process.join()
