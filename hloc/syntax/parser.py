"""Text -> syntax records: Lark LALR set-up, glog-prefix stripping, module splitting.

The Lark parser is built once, lazily, from grammar/hlo.lark (package data, with a
fallback to the repository path for editable installs). Callbacks build records while
parsing, so no parse tree is materialised.
"""
from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from lark import Lark, Transformer
from lark.exceptions import UnexpectedInput, UnexpectedToken
from lark.lexer import Lexer as LarkLexer

from ..diagnostics import ParseError, Source
from ..ir.shape import _CACHE as _SHAPES, ShapeSyntaxError, parse_shape
from .lexer import Lexer, split_operands
from .records import CompRec, InstrRec, ModuleRec, OperandRec

_GLOG_RE = re.compile(r"^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+\s+[\w.\-]+:\d+\] ?", re.M)
_SEPARATOR_RE = re.compile(r"^---[ \t]*\r?$", re.M)


def _grammar_text() -> str:
    try:
        from importlib.resources import files
        return files("hloc.grammar").joinpath("hlo.lark").read_text()
    except (ModuleNotFoundError, FileNotFoundError):
        return (Path(__file__).resolve().parents[2] / "grammar" / "hlo.lark").read_text()


class _TokenFeed(LarkLexer):
    """Adapter: Lark asks this for tokens; they come from hloc's own lexer."""

    def __init__(self, lexer_conf):
        pass

    def lex(self, data):
        return data.lexer.tokens()


class _LexInput(str):
    """The source text, carrying the hloc Lexer that Lark's adapter hands back to us."""
    lexer: Lexer


class PosError(Exception):
    """An error found while building records; the caller adds the location."""

    def __init__(self, message: str, pos: int):
        super().__init__(message)
        self.message = message
        self.pos = pos


_INT_RE = re.compile(r"-?\d+")


def _attr_end(attr) -> int:
    name, text, pos = attr
    return pos + len(text)


def _fast_record(m, attrs) -> InstrRec:
    """The record for one fast-path instruction (head match + attributes)."""
    root, name, shape_text, opcode, args = m.group(1, 2, 3, 4, 5)
    shape = None
    shape_pos = 0
    if shape_text is not None:
        shape_pos = m.start(3)
        try:
            shape = _SHAPES.get(shape_text) or parse_shape(shape_text)
        except ShapeSyntaxError as e:
            raise PosError(str(e), shape_pos + e.offset) from None
    args_pos = m.start(5)
    operands = []
    literal = None
    names = None
    if opcode == "constant":
        literal = (args, args_pos)
    elif opcode == "parameter":
        s = args.strip()
        if not _INT_RE.fullmatch(s):
            raise PosError("expects integer", args_pos)
        operands.append(OperandRec("int", args_pos, value=int(s)))
    elif "[" not in args and "/" not in args:
        # Modern dumps: bare names (the lexer checked the syntax already).
        names = [p.strip().lstrip("%") for p in args.split(",")] if args.strip() else []
    else:
        for op_shape_text, op_name, off in split_operands(args):
            op_shape = None
            if op_shape_text is not None:
                try:
                    op_shape = parse_shape(op_shape_text)
                except ShapeSyntaxError as e:
                    raise PosError(str(e), args_pos + off) from None
            operands.append(OperandRec("name", args_pos + off, name=op_name.lstrip("%"),
                                       shape=op_shape, shape_pos=args_pos + off))
    end = _attr_end(attrs[-1]) if attrs else m.end(5) + 1
    return InstrRec(root is not None, name.lstrip("%"), m.start(2), shape, shape_pos,
                    opcode, m.start(4), operands, literal, attrs, end, names, args_pos)


class _Build(Transformer):
    """Parse callbacks (stateless): grammar rules -> records."""

    # -- instructions ------------------------------------------------------------
    def fast_instruction(self, c):
        m, attrs = c[0].value
        return _fast_record(m, attrs)

    def instruction(self, c):
        i = 0
        root = c[0].type == "ROOT"
        if root:
            i = 1
        name_tok = c[i]
        i += 1
        shape = None
        shape_pos = 0
        if c[i].type == "SHAPE":
            shape = c[i].value[0]
            shape_pos = c[i].pos
            i += 1
        op_tok = c[i]
        args = c[i + 1]
        attrs = [t.value for t in c[i + 2:]]
        operands, literal, args_end = args
        end = _attr_end(attrs[-1]) if attrs else args_end
        return InstrRec(root, name_tok.value.lstrip("%"), name_tok.pos, shape, shape_pos,
                        op_tok.value, op_tok.pos, operands, literal, attrs, end)

    def arguments(self, c):
        # the closing ')' is filtered out of the tree; the lexer recorded nothing we need
        # except its end, which the last operand or the open paren bounds
        return ([x for x in c[:-1] if x is not None], None, c[-1].pos + 1)

    def literal_argument(self, c):
        text, pos = c[0].value
        return ([], c[0].value, pos + len(text) + 1)

    def named_operand(self, c):
        if len(c) == 2:
            return OperandRec("name", c[1].pos, name=c[1].value.lstrip("%"),
                              shape=c[0].value[0], shape_pos=c[0].pos)
        return OperandRec("name", c[0].pos, name=c[0].value.lstrip("%"))

    def nested_operand(self, c):
        shape = None
        shape_pos = 0
        if c[0].type == "SHAPE":
            shape, shape_pos = c[0].value[0], c[0].pos
            c = c[1:]
        op_tok, (operands, literal, _) = c[0], c[1]
        rec = InstrRec(False, "", op_tok.pos, shape, shape_pos, op_tok.value, op_tok.pos,
                       operands, literal, [], op_tok.pos)
        return OperandRec("nested", op_tok.pos, nested=rec)

    def int_operand(self, c):
        return OperandRec("int", c[0].pos, value=int(c[0].value))

    # -- computations and modules -------------------------------------------------
    def param(self, c):
        return (c[0].value.lstrip("%"), c[1].value[0], c[0].pos)

    def fast_signature(self, c):
        params, result, _ = c[0].value
        return ("signature", params, result)

    def signature(self, c):
        params = [p for p in c[:-2] if p is not None]
        return ("signature", params, c[-1].value[0])

    def computation(self, c):
        i = 0
        is_entry = c[0].type == "ENTRY"
        if is_entry:
            i = 1
        name_tok = c[i]
        i += 1
        params = result = None
        if i < len(c) and isinstance(c[i], tuple) and c[i][0] == "signature":
            params, result = c[i][1], c[i][2]
            i += 1
        instrs = []
        attrs = []
        for x in c[i:]:
            if isinstance(x, InstrRec):
                instrs.append(x)
            elif x.type == "BODY":
                instrs = [_fast_record(m, a) for m, a in x.value[0]]
            else:
                attrs.append(x.value)
        return CompRec(is_entry, name_tok.value.lstrip("%"), name_tok.pos, params, result,
                       instrs, attrs)

    def header(self, c):
        return ("header", c[1].value, c[1].pos, [t.value for t in c[2:]])

    def table_entry(self, c):
        return (int(c[0].value), c[1].value, c[0].pos)

    def stack_index(self, c):
        sections = []
        for x in c:
            if hasattr(x, "type"):
                sections.append((x.value, []))
            else:
                sections[-1][1].append(x)
        return ("stack_index", sections)

    def module(self, c):
        rec = ModuleRec(None, 0, [], None)
        for x in c:
            if isinstance(x, CompRec):
                rec.comps.append(x)
            elif x[0] == "header":
                rec.name, rec.name_pos, rec.attrs = x[1].lstrip("%"), x[2], x[3]
            else:
                rec.stack_index = x[1]
        return rec

    def single_instruction(self, c):
        return c[0]

    def start(self, c):
        return c[0]

    def instruction_list(self, c):
        return c


@lru_cache(maxsize=None)
def _lark(start: str) -> Lark:
    return Lark(_grammar_text(), parser="lalr", lexer=_TokenFeed, start=start,
                maybe_placeholders=True, transformer=_Build())


_EXPECT_NAMES = {"NAME": "name", "OPCODE": "opcode", "SHAPE": "shape", "_EQUAL": "'='",
                 "RPAR": "')'", "_LPAR": "'('", "_LBRACE": "'{'", "_RBRACE": "'}'",
                 "_COMMA": "','", "ATTR": "attribute", "INSTR": "instruction",
                 "ROOT": "ROOT", "ENTRY": "ENTRY", "_ARROW": "'->'", "INT": "integer",
                 "PARAM_NAME": "parameter name", "LITERAL": "literal"}


def _describe(tok) -> str:
    if tok.type == "$END":
        return "end of file"
    v = tok.value
    if tok.type == "SHAPE":
        return f"shape {v[0]}"
    if tok.type == "ATTR":
        return f"attribute {v[0]}"
    if tok.type == "INSTR":
        return f"instruction {v[0].group(2)}"
    return f"'{v}'"


def _syntax_error(err: UnexpectedInput, source: Source, start: int, end: int) -> ParseError:
    tok = getattr(err, "token", None)
    pos = tok.pos if tok is not None and getattr(tok, "pos", None) is not None else end
    if tok is not None and tok.type == "$END":
        pos = end
    expected = sorted(getattr(err, "expected", ()) or ())
    exp = [_EXPECT_NAMES.get(e, e.lower()) for e in expected if not e.startswith("__")]
    what = _describe(tok) if tok is not None else "input"
    if "opcode" in exp and len(exp) <= 3:
        msg = f"expects opcode but sees: {what}"
    elif exp:
        msg = f"expects {' or '.join(exp[:6])} but sees: {what}"
    else:
        msg = f"unexpected {what}"
    return ParseError(msg, source.loc(min(pos, len(source.text))))


def parse_records(source: Source, start: int = 0, end: int | None = None,
                  rule: str = "start"):
    """Parse text[start:end] into records (ModuleRec, InstrRec or list of InstrRec)."""
    end = len(source.text) if end is None else end
    lexer = Lexer(source, start, end)
    parser = _lark(rule)
    data = _LexInput(source.text)
    data.lexer = lexer
    try:
        return parser.parse(data)
    except UnexpectedInput as e:
        raise _syntax_error(e, source, start, end) from None
    except PosError as e:
        raise ParseError(e.message, source.loc(e.pos)) from None


_GLOG_LINE_RE = re.compile(r"\n[IWEF]\d{4} ")   # literal '\n' first: a fast scan


def strip_glog_prefixes(text: str) -> str:
    if _GLOG_LINE_RE.search(text) is None and _GLOG_RE.match(text) is None:
        return text
    return _GLOG_RE.sub("", text)


def split_modules(text: str) -> list[tuple[int, int]]:
    """(start, end) offsets of the modules in a file (`---` lines separate them)."""
    if "---" not in text:
        return [(0, len(text))] if text.strip() else []
    bounds = []
    start = 0
    for m in _SEPARATOR_RE.finditer(text):
        bounds.append((start, m.start()))
        start = m.end()
    bounds.append((start, len(text)))
    return [b for b in bounds if text[b[0]:b[1]].strip()]
