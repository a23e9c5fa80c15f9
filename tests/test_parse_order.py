"""Which of two problems in one instruction the parser reports, as jaxlib 0.10.2's does:
most ops check their operand count before their attributes, dot the other way round."""
from __future__ import annotations

import pytest

import hloc
from hloc.diagnostics import ParseError

TEXT = """HloModule m
ENTRY e {
  a = f32[2] parameter(0)
  b = f32[2] parameter(1)
  ROOT r = f32[2] {op}(a, b, a),
     bogus=1
}
"""


@pytest.mark.parametrize("op,line,col,words", [
    ("add", 5, 19, "expects 2 operand"),                    # XLA: 5:22 (at the '(')
    ("maximum", 5, 19, "expects 2 operand"),
    ("dot", 6, 6, 'unexpected attribute "bogus"'),          # XLA: 6:6
])
def test_operand_count_or_attribute_first(op, line, col, words):
    with pytest.raises(ParseError) as info:
        hloc.parse(TEXT.replace("{op}", op), "t.hlo")
    err = info.value
    assert (err.loc.line, err.loc.col) == (line, col) and words in err.message, err.render()
