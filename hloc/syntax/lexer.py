"""Context-aware lexer feeding Lark's LALR parser.

Token design decides both speed and correctness (see grammar/hlo.lark):
- a whole shape (`f32[2,3]{1,0}`, tuple shapes) is one SHAPE token;
- a whole attribute (`, metadata={...}`) is one ATTR token whose value text is cut out
  with brace/quote balancing and interpreted later by its typed kind;
- `constant(...)` contents are one LITERAL token;
- the common instruction `ROOT? %name = shape opcode(simple operands), attrs` is one
  INSTR token, attributes included (a fast path; anything unusual falls back to
  fine-grained tokens).
Comments (`/* */`, `//`) and whitespace are skipped everywhere.
"""
from __future__ import annotations

import re

from ..diagnostics import ParseError, Source
from ..ir.dtypes import DTYPES
from ..ir.shape import ShapeSyntaxError, parse_shape, parse_shape_prefix


class Tok:
    """A light token (Lark's own Token is a str subclass and too slow to build)."""
    __slots__ = ("type", "value", "pos", "start_pos", "line", "column",
                 "end_line", "end_column", "end_pos")

    def __init__(self, type_, value, pos):
        self.type = type_
        self.value = value
        self.pos = self.start_pos = self.end_pos = pos
        self.line = self.column = self.end_line = self.end_column = None

    def __repr__(self):
        return f"Tok({self.type}, {self.value!r}, {self.pos})"


KEYWORDS = {"HloModule": "HLOMODULE", "ENTRY": "ENTRY", "ROOT": "ROOT",
            "FileNames": "FILENAMES", "FunctionNames": "FUNCTIONNAMES",
            "FileLocations": "FILELOCATIONS", "StackFrames": "STACKFRAMES"}

_IDENT = r"[A-Za-z_][\w.\-]*"
_ARRAY_SHAPE = r"[a-z][a-z0-9]*\[[^\]\[]*\](?:\{[\d,\s]*(?::[^{}]*(?:\{[^{}]*\}[^{}]*)*)?\})?"
_ARRAY_SHAPE_RE = re.compile(_ARRAY_SHAPE)
_TUPLE_SHAPE = r"\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)"
_SIMPLE_OPERAND = rf"(?:/\*[^*]*\*/\s*)?(?:(?:{_ARRAY_SHAPE}|{_TUPLE_SHAPE})\s+)?%?{_IDENT}"

# Fast path: an instruction head whose arguments contain no parentheses.
_HEAD_RE = re.compile(
    rf"(ROOT\s+)?(%?{_IDENT})[ \t]*=[ \t]*(?:({_ARRAY_SHAPE}|{_TUPLE_SHAPE})[ \t]+)?"
    rf"([a-z][a-z0-9\-]*)\(([^()]*)\)")
_SIMPLE_ARGS_RE = re.compile(
    rf"\s*(?:{_SIMPLE_OPERAND}\s*(?:,\s*{_SIMPLE_OPERAND}\s*)*)?")
_OPERAND_RE = re.compile(
    rf"\s*(?:/\*[^*]*\*/\s*)?(?:({_ARRAY_SHAPE}|{_TUPLE_SHAPE})\s+)?(%?{_IDENT})\s*,?")

_PARAM_PAIR = rf"\s*(%?{_IDENT}):[ \t]*({_ARRAY_SHAPE})\s*"
_PARAM_PAIR_RE = re.compile(_PARAM_PAIR)
_PARAMS_RE = re.compile(rf"\s*|{_PARAM_PAIR}(?:,{_PARAM_PAIR})*")
_PARAM_RE = re.compile(rf"(%?{_IDENT}):[ \t]*")
_SKIP_RE = re.compile(r"(?:\s+|//[^\n]*|/\*.*?\*/)*", re.S)
# One attribute in one match when its value is simple: a brace group without nested
# braces, a string, or a plain word not followed by brackets; else the general scanner.
_FAST_ATTR_RE = re.compile(
    rf"""[ \t]*,[ \t]*({_IDENT})=(\{{(?:[^{{}}"']++|"(?:[^"\\]++|\\.)*+")*+\}}|"(?:[^"\\\n]++|\\.)*+"|[\w%.\-?>]++(?![\[{{(<=:"']))""")
_ATTR_START_RE = re.compile(rf",\s*(?:/\*.*?\*/\s*)*({_IDENT})=", re.S)
_IDENT_RE = re.compile(rf"%?{_IDENT}")
_NUMBER_RE = re.compile(
    r"-?(?:\d+\.\d*(?:[eE][+-]?\d+)?|\d*\.\d+(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+)|-?\d+")
_STRING_RE = re.compile(r'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'')
_SIMPLE_BRACES_RE = re.compile(r"""\{(?:[^{}"']|"(?:[^"\\]|\\.)*")*\}""")
_BALANCE_RE = re.compile(r"""[{}()\[\]]|"(?:[^"\\]|\\.)*"|'(?:[^'\\\n]|\\.)*'""")
_RUN_RE = re.compile(r"[^\s,(){}\[\]\"']+")
_OPEN = {"{": "}", "(": ")", "[": "]"}


def split_operands(args: str) -> list[tuple[str | None, str, int]]:
    """(shape text, name, offset) for each operand of a fast-path head."""
    out = []
    pos = 0
    n = len(args)
    while pos < n:
        m = _OPERAND_RE.match(args, pos)
        if m is None or m.end() == pos:
            break
        out.append((m.group(1), m.group(2), m.start(2)))
        pos = m.end()
    return out


class Lexer:
    def __init__(self, source: Source, start: int = 0, end: int | None = None):
        self.source = source
        self.text = source.text
        self.start = start
        self.end = len(self.text) if end is None else end

    def error(self, message: str, pos: int) -> ParseError:
        return ParseError(message, self.source.loc(pos))

    # -- balanced scanning -------------------------------------------------------
    def scan_balanced(self, pos: int) -> int:
        """`text[pos]` is an opening bracket; return the index just past its match."""
        text = self.text
        if text[pos] == "{":
            m = _SIMPLE_BRACES_RE.match(text, pos)
            if m is not None:
                return m.end()
        stack = []
        for m in _BALANCE_RE.finditer(text, pos, self.end):
            tok = m.group(0)
            if tok in _OPEN:
                stack.append(_OPEN[tok])
            elif len(tok) == 1:
                if not stack or stack[-1] != tok:
                    raise self.error(f"unexpected '{tok}'", m.start())
                stack.pop()
                if not stack:
                    return m.end()
        raise self.error(f"unbalanced '{text[pos]}'", pos)

    def scan_value(self, pos: int, name: str) -> int:
        """End of an attribute value starting at pos."""
        text = self.text
        pos = _SKIP_RE.match(text, pos).end()
        if pos >= self.end:
            raise self.error(f"expects a value for attribute {name}", pos)
        c = text[pos]
        if c in "{([":
            end = self.scan_balanced(pos)
            if c == "[":  # iota replica groups / device lists: [2,4]<=[8]T(1,0)
                m = re.compile(r"\s*<=\s*\[[^\]]*\](?:T\([^)]*\))?").match(text, end)
                if m:
                    end = m.end()
            return end
        if c in "\"'":
            m = _STRING_RE.match(text, pos)
            if m is None:
                raise self.error("unterminated string", pos)
            return m.end()
        if name == "literal":  # literal=s32[2]{0} {1, 2}
            try:
                _, end = parse_shape_prefix(text, pos)
            except ShapeSyntaxError as e:
                raise self.error(str(e), e.offset) from None   # absolute offset
            p = _SKIP_RE.match(text, end).end()
            if p < self.end and text[p] in "{(":
                return self.scan_balanced(p)
            m = _RUN_RE.match(text, p)
            return m.end() if m else end
        m = _RUN_RE.match(text, pos)
        if m is None:
            raise self.error(f"expects a value for attribute {name}", pos)
        end = m.end()
        # shapes and replica-group-like values continue with brackets: f32[2]{0}
        while end < self.end and text[end] in "[{(" and not text[end - 1].isspace():
            end = self.scan_balanced(end)
            m = _RUN_RE.match(text, end)
            if m:
                end = m.end()
        return end

    # -- main loop ---------------------------------------------------------------
    def tokens(self):
        text = self.text
        end = self.end
        pos = self.start
        skip = _SKIP_RE.match
        attr_match = _ATTR_START_RE.match
        paren = 0           # depth of '(' inside an instruction
        body = 0            # depth of computation braces
        prev = None         # type of the previous token
        prev_value = None
        while True:
            m = skip(text, pos)
            pos = m.end()
            if pos >= end:
                break
            if text.startswith("/*", pos):
                raise self.error("unterminated comment", pos)
            c = text[pos]
            # fast path for a simple instruction
            if body and not paren and c != "}" and c != ",":
                fast = self._fast_instruction(pos)
                if fast is not None:
                    yield Tok("INSTR", fast[:2], pos)
                    prev = "INSTR"
                    pos = fast[2]
                    continue
            if c == ",":
                if not paren:
                    m = attr_match(text, pos)
                    if m is not None:
                        name = m.group(1)
                        vstart = skip(text, m.end()).end()
                        vend = self.scan_value(vstart, name)
                        yield Tok("ATTR", (name, text[vstart:vend], vstart), pos)
                        prev = "ATTR"
                        pos = vend
                        continue
                yield Tok("_COMMA", ",", pos)
                prev = "_COMMA"
                pos += 1
                continue
            if c == "(":
                if not body and prev in ("NAME", "OPCODE"):
                    sig = self._signature(pos)
                    if sig is not None:
                        yield sig
                        prev = "SIGNATURE"
                        pos = sig.value[2]
                        continue
                if prev == "OPCODE" and prev_value == "constant":
                    close = self.scan_balanced(pos)
                    yield Tok("LITERAL", (text[pos + 1:close - 1], pos + 1), pos)
                    prev = "LITERAL"
                    pos = close
                    continue
                if prev in ("_EQUAL", "_ARROW", "PARAM_NAME") or (
                        paren and prev in ("_LPAR", "_COMMA")):
                    shape_tok = self._try_shape(pos, must=prev != "_LPAR" and prev != "_COMMA")
                    if shape_tok is not None:
                        yield shape_tok
                        prev = "SHAPE"
                        pos = shape_tok.value[1]
                        continue
                if body:
                    paren += 1
                yield Tok("_LPAR", "(", pos)
                prev = "_LPAR"
                pos += 1
                continue
            if c == ")":
                if paren:
                    paren -= 1
                yield Tok("RPAR", ")", pos)
                prev = "RPAR"
                pos += 1
                continue
            if c == "{":
                if not body and prev in ("NAME", "OPCODE", "SIGNATURE"):
                    fast = self._fast_body(pos)
                    if fast is not None:
                        yield fast
                        prev = "BODY"
                        pos = fast.value[1]
                        continue
                if prev == "INT" and not body:   # stack-frame table entry
                    close = self.scan_balanced(pos)
                    yield Tok("BLOB", text[pos:close], pos)
                    prev = "BLOB"
                    pos = close
                    continue
                body += 1
                yield Tok("_LBRACE", "{", pos)
                prev = "_LBRACE"
                pos += 1
                continue
            if c == "}":
                if body:
                    body -= 1
                yield Tok("_RBRACE", "}", pos)
                prev = "_RBRACE"
                pos += 1
                continue
            if c == "=":
                yield Tok("_EQUAL", "=", pos)
                prev = "_EQUAL"
                pos += 1
                continue
            if c == "-" and text.startswith("->", pos):
                yield Tok("_ARROW", "->", pos)
                prev = "_ARROW"
                pos += 2
                continue
            if c == '"' or c == "'":
                m = _STRING_RE.match(text, pos)
                if m is None:
                    raise self.error("unterminated string", pos)
                yield Tok("STRING", m.group(0), pos)
                prev = "STRING"
                pos = m.end()
                continue
            if c.isdigit() or c == "-":
                m = _NUMBER_RE.match(text, pos)
                if m is None:
                    raise self.error(f"unexpected character '{c}'", pos)
                tt = "INT" if re.fullmatch(r"-?\d+", m.group(0)) else "DECIMAL"
                if m.end() < end and (text[m.end()].isalpha() or text[m.end()] == "_"):
                    raise self.error("expects name", pos)  # '1a' is not a name
                yield Tok(tt, m.group(0), pos)
                prev = tt
                pos = m.end()
                continue
            m = _IDENT_RE.match(text, pos)
            if m is None:
                raise self.error(f"unexpected character '{c}'", pos)
            word = m.group(0)
            after = m.end()
            nxt = text[after] if after < end else ""
            if (nxt == "[" and word in DTYPES) or (word == "b" and nxt == "(" and prev in (
                    "_EQUAL", "_ARROW", "PARAM_NAME", "_LPAR", "_COMMA")):
                tok = self._try_shape(pos, must=True)
                yield tok
                prev = "SHAPE"
                pos = tok.value[1]
                continue
            if nxt == ":":
                yield Tok("PARAM_NAME", word, pos)
                prev = "PARAM_NAME"
                pos = after + 1
                continue
            if word[0] != "%":
                kw = KEYWORDS.get(word)
                if kw is not None:
                    yield Tok(kw, word, pos)
                    prev = kw
                    pos = after
                    continue
                if nxt == "(":
                    yield Tok("OPCODE", word, pos)
                    prev = "OPCODE"
                    prev_value = word
                    pos = after
                    continue
            yield Tok("NAME", word, pos)
            prev = "NAME"
            pos = after

    def _fast_instruction(self, pos: int):
        """(head match, [(attr, value text, value pos)], next token) for an instruction
        in the common form `ROOT? %name = shape opcode(simple operands), attr=value...`,
        else None (the grammar's long rule takes it)."""
        text = self.text
        m = _HEAD_RE.match(text, pos)
        if m is None or m.end() > self.end:
            return None
        args = m.group(5)
        # Bare names need no check here: a malformed one fails the builder's lookup.
        if ("[" in args or "/" in args) and not _SIMPLE_ARGS_RE.fullmatch(args) and \
                m.group(4) not in ("constant", "parameter"):
            return None
        skip = _SKIP_RE.match
        fast_attr = _FAST_ATTR_RE.match
        p = m.end()
        attrs = []
        while True:
            a = fast_attr(text, p)
            while a is not None:
                attrs.append((a.group(1), a.group(2), a.start(2)))
                p = a.end()
                a = fast_attr(text, p)
            p = skip(text, p).end()
            if not text.startswith(",", p):
                return m, attrs, p
            a = _ATTR_START_RE.match(text, p)    # an attribute the fast pattern can't take
            if a is None:
                return m, attrs, p
            vstart = skip(text, a.end()).end()
            vend = self.scan_value(vstart, a.group(1))
            attrs.append((a.group(1), text[vstart:vend], vstart))
            p = vend

    def _fast_body(self, pos: int):
        """A computation body `{ ... }` whose instructions all take the fast path, as one
        BODY token: value ([(head match, attrs)], end). None if any instruction needs the
        grammar's long rule (the body is then lexed token by token)."""
        text = self.text
        end = self.end
        fast = self._fast_instruction
        instrs = []
        p = _SKIP_RE.match(text, pos + 1).end()
        while p < end:
            if text[p] == "}":
                return Tok("BODY", (instrs, p + 1), pos) if instrs else None
            one = fast(p)
            if one is None:
                return None
            instrs.append(one[:2])
            p = one[2]
        return None

    def _signature(self, pos: int):
        """`(p: f32[2], q: (s32[], f32[])) -> f32[2]` as one SIGNATURE token:
        value (params [(name, shape, pos)], result shape, end)."""
        text = self.text
        close = self.scan_balanced(pos)
        params = self._simple_params(pos + 1, close - 1)
        p = close - 1 if params is not None else pos + 1
        if params is None:
            params = []
        while True:
            p = _SKIP_RE.match(text, p).end()
            if p >= close - 1:
                break
            m = _PARAM_RE.match(text, p)
            if m is None:
                return None      # not a plain signature: let the grammar report it
            tok = self._try_shape(m.end(), must=True)
            params.append((m.group(1).lstrip("%"), tok.value[0], p))
            p = _SKIP_RE.match(text, tok.value[1]).end()
            if text.startswith(",", p):
                p += 1
            elif p != close - 1:
                return None
        p = _SKIP_RE.match(text, close).end()
        if not text.startswith("->", p):
            return None
        p = _SKIP_RE.match(text, p + 2).end()
        result = self._try_shape(p, must=True)
        return Tok("SIGNATURE", (params, result.value[0], result.value[1]), pos)

    def _simple_params(self, start: int, end: int):
        """Parameters whose shapes are plain arrays, in one regex pass (fused
        computations have hundreds); None when the list needs the general loop."""
        inner = self.text[start:end]
        if "(" in inner or "/" in inner or not _PARAMS_RE.fullmatch(inner):
            return None
        params = []
        for m in _PARAM_PAIR_RE.finditer(inner):
            try:
                shape = parse_shape(m.group(2))
            except ShapeSyntaxError:
                return None
            params.append((m.group(1).lstrip("%"), shape, start + m.start(1)))
        return params

    def _try_shape(self, pos: int, must: bool):
        text = self.text
        try:
            # Find the shape's extent cheaply, then parse through the shape cache.
            if text.startswith("(", pos) or text.startswith("b(", pos):
                end = self.scan_balanced(pos + text.startswith("b", pos))
            else:
                m = _ARRAY_SHAPE_RE.match(text, pos)
                end = m.end() if m else -1
            if end > 0:
                try:
                    return Tok("SHAPE", (parse_shape(text[pos:end]), end), pos)
                except ShapeSyntaxError:
                    pass  # re-parse in place below for an exact error location
            shape, end = parse_shape_prefix(text, pos)
        except (ShapeSyntaxError, ParseError) as e:
            if must:
                if isinstance(e, ParseError):
                    raise
                raise self.error(str(e), e.offset) from None   # absolute offset
            return None
        return Tok("SHAPE", (shape, end), pos)
