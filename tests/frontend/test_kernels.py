"""The kernel spec notation and the built-ins: parsing, round trips and one-line errors."""

from __future__ import annotations

import pytest

from pimsolve.errors import InputError
from pimsolve.frontend.kernels import (
    BUILTINS,
    LLM_MODELS,
    builtin,
    kernel_text,
    load_kernel,
    parse_kernel,
)
from pimsolve.ir.kernel import Affine, KernelSpec
from pimsolve.ir.serialize import from_json, to_json

FIG5 = """kernel fig5
loops b=11, i=8, k=16
output A[12, 16]
input B[8, 16]
input C[12, 16]
A[b][i] += B[i][k] * C[b][k]
A[b+1][i*2] = A[b][i]
"""


@pytest.mark.parametrize("text", ["gemv:batch=4,in=5120,out=15360", "red:batch=2,size=4096",
                                  "va:size=8192", "relu:batch=3,size=64",
                                  "attn:batch=8,heads=32,seq=2048,dim=128",
                                  "qkv:batch=2,model=llama2-33b", "proj", "ffn_up:batch=2",
                                  "ffn_down:model=opt-1.3b"])
def test_builtins_round_trip(text: str) -> None:
    spec = builtin(text)
    assert parse_kernel(kernel_text(spec), origin=spec.name) == spec
    assert from_json(KernelSpec, to_json(spec)) == spec


def test_gemv_shapes_and_kinds() -> None:
    spec = builtin("gemv:batch=4,in=5120,out=15360")
    assert {lp.var: lp.size for lp in spec.loops} == {"b": 4, "i": 15360, "j": 5120}
    assert spec.tensor("W").shape == (15360, 5120) and spec.tensor("W").role == "resident"
    assert [s.kind for s in spec.statements] == ["mac"]
    attn = builtin("attn:batch=2,heads=4,seq=64,dim=16")
    assert [s.kind for s in attn.statements] == ["mac", "softmax", "mac"]
    assert attn.statements[1].axis == "l" and attn.loop("n").size == 8


def test_llm_builtins_use_model_shapes() -> None:
    gpt = LLM_MODELS["gpt3-13b"]
    assert builtin("qkv:batch=1").loop("i").size == 3 * gpt.hidden
    llama = LLM_MODELS["llama2-33b"]
    assert builtin("ffn_up:model=llama2-33b").loop("i").size == 2 * llama.ffn


def test_fig5_affine_indices() -> None:
    spec = parse_kernel(FIG5)
    second = spec.statements[1]
    assert second.target.indices == (Affine("b", 1, 1), Affine("i", 2, 0))
    assert [str(i) for i in second.target.indices] == ["b+1", "i*2"]
    assert parse_kernel(kernel_text(spec)) == spec


@pytest.mark.parametrize("text, needle", [
    ("nope:x=1", "unknown built-in kernel 'nope'"),
    ("gemv:foo=3", "unknown key 'foo'"),
    ("gemv:batch=0", "not a positive integer"),
    ("gemv:batch=two", "not a positive integer"),
    ("gemv:batch", "not key=value"),
    ("gemv:batch=1,batch=2", "given twice"),
    ("qkv:model=gpt9", "unknown model 'gpt9'"),
])
def test_builtin_errors(text: str, needle: str) -> None:
    with pytest.raises(InputError, match=needle.replace("(", r"\(")):
        builtin(text)
    assert set(BUILTINS) >= {"gemv", "red", "va", "relu", "attn", "qkv", "proj"}


@pytest.mark.parametrize("body, needle", [
    ("loops i=4\ninput x[4]\noutput y[4]\ny[i] = x[i+j]", "two loop variables"),
    ("loops i=4\ninput x[4]\noutput y[4]\ny[i] = x[i*i]", "not affine"),
    ("loops i=4\ninput x[4]\noutput y[4]\ny[i] = x[i+1]", "outside dimension 0 of size 4"),
    ("loops i=4\ninput x[4]\noutput y[4]\ny[i] = z[i]", "'z' is used but not declared"),
    ("loops i=4\ninput x[4, 2]\noutput y[4]\ny[i] = x[i]", "has 1 indices"),
    ("loops i=4, j=2\ninput x[4]\noutput y[4]\ny[i] = x[i]", "j index no tensor"),
    ("loops i=4\ninput x[4]\noutput y[4]\ny[i] = exp(x[i])", "unknown function 'exp'"),
    ("loops i=4\ninput x[4]\ninput y[4]\ny[i] = x[i]", "declared input"),
    ("loops i=4\ninput x[4]\noutput y[4]\ny[i] += x[i] + x[i]", "'+=' takes a product"),
    ("loops i=0\ninput x[4]\noutput y[4]\ny[i] = x[i]", "not a positive integer"),
    ("dtype f8\nloops i=4\ninput x[4]\noutput y[4]\ny[i] = x[i]", "unknown dtype 'f8'"),
    ("loops i=4\ninput x[4]\noutput y[4]\nthis is not a statement", "cannot parse"),
    ("loops i=4\ninput x[4]\noutput y[4]\noutput z[4]\ny[i] = x[i]", "never written"),
])
def test_spec_errors_name_the_line(body: str, needle: str) -> None:
    with pytest.raises(InputError) as info:
        parse_kernel("kernel bad\n" + body, origin="bad.k")
    message = str(info.value)
    assert "\n" not in message and needle in message and message.startswith("bad.k")


def test_load_kernel_file_and_missing(tmp_path) -> None:
    path = tmp_path / "fig5.k"
    path.write_text(FIG5)
    assert load_kernel(path).name == "fig5"
    with pytest.raises(InputError, match="not found"):
        load_kernel(tmp_path / "missing.k")
