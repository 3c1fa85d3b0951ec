"""The exception hierarchy: what went wrong, and which exit code the CLI gives it.

``InputError`` (exit 2) is the user's to fix: a corrupt model, an unsupported op, a wrong target
file. ``InfeasibleError`` is an ``InputError`` for requests no mapping can satisfy. Anything
else, ``InternalError`` included, is a bug in pimsolve (exit 1).
"""

from __future__ import annotations

__all__ = ["PimsolveError", "InputError", "InfeasibleError", "InternalError"]


class PimsolveError(Exception):
    """Base class of every error pimsolve raises on purpose."""

    exit_code = 1


class InputError(PimsolveError):
    """Bad input: the message names the file, node or key and what is wrong with it."""

    exit_code = 2


class InfeasibleError(InputError):
    """The request is well-formed but no mapping satisfies it."""


class InternalError(PimsolveError):
    """An invariant of pimsolve itself broke: a bug to report."""

    exit_code = 1
