"""Write the pimsolve zoo models as ``<name>.onnx`` files.

Usage::

    python benchmarks/models/build.py [--out DIR] [--weights random|shape] [--seed N] [NAME ...]

With no names every zoo model is written. The default output folder is the
folder of this script and the default weight mode is ``shape`` (tiny files
whose weights are ``ConstantOfShape`` nodes).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

try:
    from pimsolve.frontend import zoo
except ImportError:  # running from a source checkout without installing pimsolve
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from pimsolve.frontend import zoo


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description="Build the pimsolve model zoo as ONNX files.")
    parser.add_argument("names", nargs="*", metavar="NAME",
                        help=f"models to build (default: all of {', '.join(zoo.names())})")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent,
                        help="output folder (default: this script's folder)")
    parser.add_argument("--weights", choices=("random", "shape"), default="shape",
                        help="weight mode (default: shape)")
    parser.add_argument("--seed", type=int, default=0, help="seed for --weights random")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Build the requested models; return the process exit code."""
    parser = _parser()
    args = parser.parse_args(argv)
    unknown = [n for n in args.names if n not in zoo.MODELS]
    if unknown:
        parser.error(f"unknown model(s) {', '.join(unknown)}; available: {', '.join(zoo.names())}")
    args.out.mkdir(parents=True, exist_ok=True)
    for name in args.names or zoo.names():
        data = zoo.build(name, weights=args.weights, seed=args.seed).SerializeToString()
        path = args.out / f"{name}.onnx"
        path.write_bytes(data)
        print(f"{path}  {len(data):,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
