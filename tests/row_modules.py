"""The row modules the back end's row tests (and benchmarks/run.py) compile, written once:
softmax and layernorm over the minor dimension of an f32[rows, cols], as JAX lowers them,
with the variants the row tests need (another reducer, another sum, another last op).

Not a test module (no test_ prefix); tests import it from their own directory, as pytest
puts it on sys.path."""
from __future__ import annotations

_REDUCER = "{name} {{\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT r = f32[] {op}(a, b)\n}}\n"
ADD = _REDUCER.format(name="add_f", op="add")
_NAMES = {"maximum": "max_f", "minimum": "min_f"}


def softmax(rows: int, cols: int, sum_of: str = "e", op: str = "maximum", init: str = "-inf") -> str:
    """exp(x - max(x)) / sum(...) along the rows; `sum_of` "x": divided by the row's sum
    of x instead (no sum carried in e's loop: row_groups adds up only the member just
    before); `op`, `init`: the row's minimum (or maximum from another init) subtracted."""
    red = _NAMES[op]
    return f"""HloModule softmax
{ADD}
{_REDUCER.format(name=red, op=op)}
ENTRY e {{
  x = f32[{rows},{cols}] parameter(0)
  ninf = f32[] constant({init})
  mx = f32[{rows}] reduce(x, ninf), dimensions={{1}}, to_apply={red}
  mxb = f32[{rows},{cols}] broadcast(mx), dimensions={{0}}
  d = f32[{rows},{cols}] subtract(x, mxb)
  e = f32[{rows},{cols}] exponential(d)
  zero = f32[] constant(0)
  s = f32[{rows}] reduce({sum_of}, zero), dimensions={{1}}, to_apply=add_f
  sb = f32[{rows},{cols}] broadcast(s), dimensions={{0}}
  ROOT r = f32[{rows},{cols}] divide(e, sb)
}}
"""


def layernorm(rows: int, cols: int, tail: str = "multiply(d, rb)") -> str:
    """(x - mean(x)) * rsqrt(var(x) + 1e-5) along the rows; `tail`: the root's op."""
    return f"""HloModule layernorm
{ADD}
ENTRY e {{
  x = f32[{rows},{cols}] parameter(0)
  zero = f32[] constant(0)
  n = f32[] constant({cols})
  nb = f32[{rows}] broadcast(n), dimensions={{}}
  s = f32[{rows}] reduce(x, zero), dimensions={{1}}, to_apply=add_f
  mean = f32[{rows}] divide(s, nb)
  mb = f32[{rows},{cols}] broadcast(mean), dimensions={{0}}
  d = f32[{rows},{cols}] subtract(x, mb)
  d2 = f32[{rows},{cols}] multiply(d, d)
  v = f32[{rows}] reduce(d2, zero), dimensions={{1}}, to_apply=add_f
  var = f32[{rows}] divide(v, nb)
  eps = f32[] constant(1e-05)
  epsb = f32[{rows}] broadcast(eps), dimensions={{}}
  ve = f32[{rows}] add(var, epsb)
  rs = f32[{rows}] rsqrt(ve)
  rb = f32[{rows},{cols}] broadcast(rs), dimensions={{0}}
  ROOT y = f32[{rows},{cols}] {tail}
}}
"""


# emit-llvm's and the AOT library's softmax and layernorm
SOFTMAX = softmax(64, 2048)
LAYERNORM = layernorm(512, 1024)


def vector_code(module, numerics: str = "xla-cpu") -> bool:
    """Whether the module's code has explicit <W x float> row loops (hloc.backend.row_vector)."""
    from hloc.backend import emit_llvm
    return "load <" in emit_llvm(module, numerics=numerics, optimized=False)
