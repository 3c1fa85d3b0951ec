"""Kernel specs for DRAM-PIM: a small text notation, the built-in kernels, and LLM shapes.

A spec file is one declaration per line (``#`` starts a comment)::

    kernel gemv
    dtype f16
    loops b=4, i=15360, j=5120
    input x[4, 5120]
    resident W[15360, 5120]
    output y[4, 15360]
    y[b,i] += x[b,j] * W[i,j]

Statements are ``t += a * b`` (mac), ``t += a`` (reduce), ``t = a + b`` / ``a - b`` /
``a * b`` / ``relu(a)`` / ``a`` (elementwise map) and ``t = softmax(a, v)``. Indices are affine
in one loop variable each: ``A[b+1][i*2]`` or ``A[b+1, i*2]``. Built-ins are written
``NAME:key=value,...``, e.g. ``gemv:batch=4,in=5120,out=15360`` (see ``BUILTINS``).

>>> spec = builtin("red:batch=2,size=4096")
>>> [str(s.target) for s in spec.statements]
['y[b]']
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pimsolve.errors import InputError
from pimsolve.ir.kernel import (
    DTYPE_BITS,
    Access,
    Affine,
    KernelSpec,
    Loop,
    Statement,
    TensorDecl,
)

__all__ = [
    "BUILTINS", "LLM_MODELS", "LlmShape", "parse_kernel", "builtin", "load_kernel",
    "kernel_text", "gemv", "hgemv", "red", "va", "relu", "attn",
]

_NAME = r"[A-Za-z_]\w*"
_ACCESS = re.compile(rf"({_NAME})\s*((?:\[[^\[\]]*\]\s*)+)")
_ROLES = ("input", "resident", "output", "temp")


def _affine(text: str, where: str) -> Affine:
    """Parse ``2*i+1``-style text: a sum of integer terms and ``k*var`` terms in one var."""
    body = text.replace(" ", "")
    if not body or not re.fullmatch(r"[+-]?[\w*]+([+-][\w*]+)*", body):
        raise InputError(f"{where}: index '{text.strip()}' is not affine (use e.g. b, b+1, i*2)")
    var, coeff, offset = None, 0, 0
    for term in re.findall(r"[+-]?[^+-]+", body):
        sign = -1 if term.startswith("-") else 1
        factors = term.lstrip("+-").split("*")
        numbers = [f for f in factors if f.isdigit()]
        names = [f for f in factors if not f.isdigit()]
        if any(not re.fullmatch(_NAME, n) for n in names) or len(names) > 1:
            raise InputError(f"{where}: index '{text.strip()}' is not affine in one loop "
                             f"variable")
        value = sign
        for n in numbers:
            value *= int(n)
        if not names:
            offset += value
            continue
        if var is not None and names[0] != var:
            raise InputError(f"{where}: index '{text.strip()}' uses two loop variables "
                             f"({var}, {names[0]}); each index may use one")
        var, coeff = names[0], coeff + value
    if var is not None and coeff <= 0:
        raise InputError(f"{where}: index '{text.strip()}' needs a positive coefficient")
    return Affine(var, coeff, offset) if var is not None else Affine(None, 0, offset)


def _access(text: str, where: str) -> Access:
    match = _ACCESS.fullmatch(text.strip())
    if not match:
        raise InputError(f"{where}: '{text.strip()}' is not a tensor access like A[b,i]")
    groups = re.findall(r"\[([^\[\]]*)\]", match.group(2))
    parts = [p for g in groups for p in g.split(",")]
    return Access(match.group(1), tuple(_affine(p, where) for p in parts))


def _statement(text: str, where: str) -> Statement:
    if "+=" in text:
        lhs, rhs = text.split("+=", 1)
        accumulate = True
    elif "=" in text:
        lhs, rhs = text.split("=", 1)
        accumulate = False
    else:
        raise InputError(f"{where}: cannot parse '{text}' (expected a declaration or "
                         f"a statement 't[...] = ...' / 't[...] += ...')")
    target, rhs = _access(lhs, where), rhs.strip()
    func = re.fullmatch(rf"({_NAME})\s*\((.*)\)", rhs)
    if func and func.group(1) in ("relu", "max", "softmax"):
        args = [a.strip() for a in re.split(r",(?![^\[]*\])", func.group(2))]
        name = func.group(1)
        if accumulate:
            raise InputError(f"{where}: '{name}(...)' cannot be accumulated with '+='")
        if name == "softmax":
            if len(args) != 2 or not re.fullmatch(_NAME, args[1]):
                raise InputError(f"{where}: write softmax as 'softmax(a[...], var)'")
            return Statement(target, "softmax", (_access(args[0], where),), "", args[1], text)
        if name == "max" and (len(args) != 2 or args[1] not in ("0", "0.0")):
            raise InputError(f"{where}: only max(a[...], 0) (relu) is supported")
        if name == "relu" and len(args) != 1:
            raise InputError(f"{where}: write relu as 'relu(a[...])'")
        return Statement(target, "map", (_access(args[0], where),), "relu", None, text)
    if func:
        raise InputError(f"{where}: unknown function '{func.group(1)}' (known: relu, max, "
                         f"softmax)")
    operator = re.fullmatch(r"(.+\])\s*([*+-])\s*(.+)", rhs)
    if operator:
        a, b = _access(operator.group(1), where), _access(operator.group(3), where)
        sym = operator.group(2)
        if accumulate and sym != "*":
            raise InputError(f"{where}: '+=' takes a product 'a * b' or one access, "
                             f"not '{sym}'")
        if accumulate:
            return Statement(target, "mac", (a, b), "", None, text)
        return Statement(target, "map", (a, b), {"*": "mul", "+": "add", "-": "sub"}[sym],
                         None, text)
    operand = _access(rhs, where)
    if accumulate:
        return Statement(target, "reduce", (operand,), "", None, text)
    return Statement(target, "map", (operand,), "copy", None, text)


def _int(text: str, where: str) -> int:
    if not re.fullmatch(r"\d+", text.strip()) or int(text) <= 0:
        raise InputError(f"{where}: '{text.strip()}' is not a positive integer")
    return int(text)


def parse_kernel(text: str, *, origin: str = "<kernel>") -> KernelSpec:
    """Parse a kernel spec written in the text notation (module docstring).

    Raises
    ------
    InputError
        For any malformed line or inconsistent declaration; the message names ``origin``, the
        line number and the problem.
    """
    name, dtype = None, "f16"
    loops: list[Loop] = []
    tensors: list[TensorDecl] = []
    statements: list[Statement] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        where = f"{origin}:{number}"
        if not line:
            continue
        word, _, rest = line.partition(" ")
        rest = rest.strip()
        if word == "kernel" and rest and "=" not in rest:
            if not re.fullmatch(r"[\w.-]+", rest):
                raise InputError(f"{where}: kernel name '{rest}' must be one word")
            name = rest
        elif word == "dtype" and "=" not in rest:
            if rest not in DTYPE_BITS:
                raise InputError(f"{where}: unknown dtype '{rest}' (known: "
                                 f"{', '.join(DTYPE_BITS)})")
            dtype = rest
        elif word in ("loop", "loops") and "[" not in rest:
            for item in filter(None, (p.strip() for p in rest.split(","))):
                pieces = item.replace("=", " ").split()
                if len(pieces) != 2 or not re.fullmatch(_NAME, pieces[0]):
                    raise InputError(f"{where}: write loops as 'loops b=4, i=128'")
                loops.append(Loop(pieces[0], _int(pieces[1], where)))
        elif word in _ROLES and "=" not in rest:
            access = _ACCESS.fullmatch(rest)
            if not access:
                raise InputError(f"{where}: write a tensor as '{word} NAME[d0, d1, ...]'")
            dims = [d for g in re.findall(r"\[([^\[\]]*)\]", access.group(2))
                    for d in g.split(",")]
            shape = tuple(_int(d, where) for d in dims)
            tensors.append(TensorDecl(access.group(1), shape, word))
        else:
            statements.append(_statement(line, where))
    return validate_kernel(KernelSpec(name or Path(origin).stem or "kernel", dtype,
                                      tuple(loops), tuple(tensors), tuple(statements)),
                           origin=origin)


def validate_kernel(spec: KernelSpec, *, origin: str = "<kernel>") -> KernelSpec:
    """Check names, ranks, bounds and roles; return ``spec`` unchanged or raise InputError."""
    where = f"{origin}: kernel {spec.name}"
    if not spec.statements:
        raise InputError(f"{where}: no statements")
    vars_ = [lp.var for lp in spec.loops]
    if len(set(vars_)) != len(vars_):
        raise InputError(f"{where}: a loop variable is declared twice")
    names = [t.name for t in spec.tensors]
    if len(set(names)) != len(names):
        raise InputError(f"{where}: a tensor is declared twice")
    sizes = {lp.var: lp.size for lp in spec.loops}
    tensors = {t.name: t for t in spec.tensors}
    used: set[str] = set()
    written: set[str] = set()
    for st in spec.statements:
        for acc in st.accesses:
            decl = tensors.get(acc.tensor)
            if decl is None:
                raise InputError(f"{where}: tensor '{acc.tensor}' is used but not declared")
            if len(acc.indices) != len(decl.shape):
                raise InputError(f"{where}: {acc} has {len(acc.indices)} indices but "
                                 f"{acc.tensor} has {len(decl.shape)} dimensions")
            for axis, idx in enumerate(acc.indices):
                if idx.var is not None and idx.var not in sizes:
                    raise InputError(f"{where}: {acc} uses loop variable '{idx.var}', which "
                                     f"is not declared in 'loops'")
                top = idx(sizes[idx.var] - 1) if idx.var is not None else idx.offset
                if idx.offset < 0 or top >= decl.shape[axis]:
                    raise InputError(f"{where}: {acc} index {idx} reaches {top}, outside "
                                     f"dimension {axis} of size {decl.shape[axis]}")
            used.update(acc.variables)
        if st.axis is not None and st.axis not in st.target.variables:
            raise InputError(f"{where}: softmax axis '{st.axis}' is not an index of "
                             f"{st.target}")
        target = tensors[st.target.tensor]
        if target.role not in ("output", "temp"):
            raise InputError(f"{where}: '{st.target.tensor}' is written but declared "
                             f"{target.role}; declare it output or temp")
        for op in st.operands:
            role = tensors[op.tensor].role
            if role in ("output", "temp") and op.tensor not in written:
                raise InputError(f"{where}: '{op.tensor}' is read before it is written")
        written.add(st.target.tensor)
    missing = sorted(set(sizes) - used)
    if missing:
        raise InputError(f"{where}: loop variable(s) {', '.join(missing)} index no tensor")
    unwritten = [t.name for t in spec.tensors if t.role in ("output", "temp")
                 and t.name not in written]
    if unwritten:
        raise InputError(f"{where}: {', '.join(unwritten)} declared but never written")
    return spec


def kernel_text(spec: KernelSpec) -> str:
    """``spec`` in the text notation; ``parse_kernel(kernel_text(s)) == s``."""
    lines = [f"kernel {spec.name}", f"dtype {spec.dtype}",
             "loops " + ", ".join(f"{lp.var}={lp.size}" for lp in spec.loops)]
    lines += [f"{t.role} {t.name}[{', '.join(map(str, t.shape))}]" for t in spec.tensors]
    lines += [_statement_text(st) for st in spec.statements]
    return "\n".join(lines) + "\n"


def _statement_text(st: Statement) -> str:
    ops = [str(a) for a in st.operands]
    if st.kind == "mac":
        return f"{st.target} += {ops[0]} * {ops[1]}"
    if st.kind == "reduce":
        return f"{st.target} += {ops[0]}"
    if st.kind == "softmax":
        return f"{st.target} = softmax({ops[0]}, {st.axis})"
    if st.op == "relu":
        return f"{st.target} = relu({ops[0]})"
    if st.op == "copy":
        return f"{st.target} = {ops[0]}"
    return f"{st.target} = {ops[0]} {dict(mul='*', add='+', sub='-')[st.op]} {ops[1]}"


def gemv(batch: int = 1, in_: int = 4096, out: int = 4096, *, name: str = "gemv") -> KernelSpec:
    """``y[b,i] += x[b,j] * W[i,j]``: W (out x in) resident in PIM, x and y rearranged."""
    return parse_kernel(f"""kernel {name}
loops b={batch}, i={out}, j={in_}
input x[{batch}, {in_}]
resident W[{out}, {in_}]
output y[{batch}, {out}]
y[b,i] += x[b,j] * W[i,j]
""", origin=name)


def hgemv(batch: int = 1, heads: int = 32, in_: int = 128, out: int = 4096) -> KernelSpec:
    """Per-head GEMV of an attention layer (DCC Sec. 5's GEMV: 32 heads, input 128): each of
    the ``batch * heads`` vectors has its own resident matrix, ``y[n,i] += x[n,j] * W[n,i,j]``."""
    n = batch * heads
    return parse_kernel(f"""kernel hgemv
loops n={n}, i={out}, j={in_}
input x[{n}, {in_}]
resident W[{n}, {out}, {in_}]
output y[{n}, {out}]
y[n,i] += x[n,j] * W[n,i,j]
""", origin="hgemv")


def red(batch: int = 1, size: int = 4096) -> KernelSpec:
    """``y[b] += x[b,i]``: row sums of a host-produced matrix."""
    return parse_kernel(f"kernel red\nloops b={batch}, i={size}\ninput x[{batch}, {size}]\n"
                        f"output y[{batch}]\ny[b] += x[b,i]\n", origin="red")


def va(batch: int = 1, size: int = 4096) -> KernelSpec:
    """``c[b,i] = a[b,i] + d[b,i]``: vector addition."""
    return parse_kernel(f"kernel va\nloops b={batch}, i={size}\ninput a[{batch}, {size}]\n"
                        f"input d[{batch}, {size}]\noutput c[{batch}, {size}]\n"
                        f"c[b,i] = a[b,i] + d[b,i]\n", origin="va")


def relu(batch: int = 1, size: int = 4096) -> KernelSpec:
    """``y[b,i] = relu(x[b,i])``."""
    return parse_kernel(f"kernel relu\nloops b={batch}, i={size}\ninput x[{batch}, {size}]\n"
                        f"output y[{batch}, {size}]\ny[b,i] = relu(x[b,i])\n", origin="relu")


def attn(batch: int = 1, heads: int = 32, seq: int = 2048, dim: int = 128) -> KernelSpec:
    """Decode-step attention per head: score GEMV, softmax, context GEMV.

    Batches and heads are independent, so one loop ``n`` runs over ``batch * heads`` (as DCC's
    artifact does: dims ``[batch*nhead, dhead, seq_len]``). K and V (the KV cache) are resident.
    """
    n = batch * heads
    return parse_kernel(f"""kernel attn
loops n={n}, l={seq}, d={dim}
input q[{n}, {dim}]
resident K[{n}, {seq}, {dim}]
resident V[{n}, {seq}, {dim}]
temp s[{n}, {seq}]
temp p[{n}, {seq}]
output o[{n}, {dim}]
s[n,l] += q[n,d] * K[n,l,d]
p[n,l] = softmax(s[n,l], l)
o[n,d] += p[n,l] * V[n,l,d]
""", origin="attn")


@dataclass(frozen=True)
class LlmShape:
    """The decoder shapes of an LLM (one decode step needs only these)."""

    name: str
    layers: int
    hidden: int
    heads: int
    head_dim: int
    ffn: int
    gated: bool
    """SwiGLU feed-forward (gate and up projections, LLaMA) instead of one up projection."""
    vocab: int
    source: str


LLM_MODELS = {m.name: m for m in (
    LlmShape("gpt3-13b", 40, 5120, 40, 128, 20480, False, 50257,
             "GPT-3 (Brown et al. 2020) Table 2.1, GPT-3 13B: 40 layers, 40 heads of 128; "
             "d_model 5120 = 40 x 128 (the table prints 5140), d_ff = 4 d_model"),
    LlmShape("llama2-33b", 60, 6656, 52, 128, 17920, True, 32000,
             "LLaMA (Touvron et al. 2023) Table 2, 33B (DCC's 'LLaMA2-33B'): dim 6656, 52 "
             "heads, 60 layers; SwiGLU hidden 17920 (released config)"),
    LlmShape("opt-1.3b", 24, 2048, 32, 64, 8192, False, 50272,
             "OPT (Zhang et al. 2022) Table 1, 1.3B: 24 layers, 32 heads, d_model 2048; "
             "d_ff 8192"),
)}
"""LLM decoder shapes for the end-to-end decode step (DCC Fig. 11 uses the first two)."""


def _llm(key: str, params: dict[str, int | str]) -> LlmShape:
    model = str(params.pop("model", "gpt3-13b"))
    if model not in LLM_MODELS:
        raise InputError(f"{key}: unknown model '{model}'; known: {', '.join(LLM_MODELS)}")
    return LLM_MODELS[model]


def _qkv(batch: int = 1, hidden: int = 0, **kw: int | str) -> KernelSpec:
    shape = _llm("qkv", dict(kw))
    h = hidden or shape.hidden
    return gemv(batch, h, 3 * h, name="qkv")


def _proj(batch: int = 1, hidden: int = 0, **kw: int | str) -> KernelSpec:
    shape = _llm("proj", dict(kw))
    h = hidden or shape.hidden
    return gemv(batch, h, h, name="proj")


def _ffn_up(batch: int = 1, hidden: int = 0, ffn: int = 0, **kw: int | str) -> KernelSpec:
    shape = _llm("ffn_up", dict(kw))
    width = (ffn or shape.ffn) * (2 if shape.gated else 1)
    return gemv(batch, hidden or shape.hidden, width, name="ffn_up")


def _ffn_down(batch: int = 1, hidden: int = 0, ffn: int = 0, **kw: int | str) -> KernelSpec:
    shape = _llm("ffn_down", dict(kw))
    return gemv(batch, ffn or shape.ffn, hidden or shape.hidden, name="ffn_down")


BUILTINS: dict[str, tuple[Callable[..., KernelSpec], dict[str, str]]] = {
    "gemv": (lambda batch=1, in_=4096, out=4096: gemv(batch, in_, out),
             {"batch": "int", "in": "int", "out": "int"}),
    "hgemv": (lambda batch=1, heads=32, in_=128, out=4096: hgemv(batch, heads, in_, out),
              {"batch": "int", "heads": "int", "in": "int", "out": "int"}),
    "red": (red, {"batch": "int", "size": "int"}),
    "va": (va, {"batch": "int", "size": "int"}),
    "relu": (relu, {"batch": "int", "size": "int"}),
    "attn": (attn, {"batch": "int", "heads": "int", "seq": "int", "dim": "int"}),
    "qkv": (_qkv, {"batch": "int", "hidden": "int", "model": "str"}),
    "proj": (_proj, {"batch": "int", "hidden": "int", "model": "str"}),
    "ffn_up": (_ffn_up, {"batch": "int", "hidden": "int", "ffn": "int", "model": "str"}),
    "ffn_down": (_ffn_down, {"batch": "int", "hidden": "int", "ffn": "int", "model": "str"}),
}
"""Built-in kernels by name: builder and accepted keys (``NAME:key=value,...``)."""


def builtin(text: str) -> KernelSpec:
    """Build a built-in kernel from ``NAME:key=value,...`` (``NAME`` alone uses defaults).

    Raises
    ------
    InputError
        For an unknown name or key, or a value that is not a positive integer.
    """
    name, _, rest = text.strip().partition(":")
    if name not in BUILTINS:
        raise InputError(f"unknown built-in kernel '{name}'; built-ins: {', '.join(BUILTINS)}")
    build, keys = BUILTINS[name]
    params: dict[str, int | str] = {}
    for item in filter(None, (p.strip() for p in rest.split(","))):
        key, eq, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not eq or key not in keys:
            raise InputError(f"{name}: unknown key '{key}' (keys: {', '.join(keys)})"
                             if eq else f"{name}: '{item}' is not key=value")
        if key in params:
            raise InputError(f"{name}: key '{key}' given twice")
        params[key] = value if keys[key] == "str" else _int(value, f"{name}: {key}")
    if "in" in params:
        params["in_"] = params.pop("in")
    return build(**params)


def load_kernel(spec: str | Path) -> KernelSpec:
    """A kernel from a spec file path, or a built-in ``NAME:key=value,...``."""
    path = Path(spec)
    text = str(spec)
    if path.is_file():
        try:
            content = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"{path}: cannot read kernel spec: {exc}") from None
        return parse_kernel(content, origin=path.name)
    if ":" in text or text in BUILTINS:
        return builtin(text)
    if path.suffix or path.parent != Path("."):
        raise InputError(f"kernel spec file not found: {spec}")
    raise InputError(f"unknown built-in kernel '{text}'; built-ins: {', '.join(BUILTINS)}; "
                     f"or give a spec file")
