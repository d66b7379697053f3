"""Regular expressions from people and agents, run on a linear-time engine (RE2).

Python's ``re`` backtracks: ``.*`` thirty times then ``Z``, or ``(a|aa)*b``, runs for hours on a
line of ``a``s and holds the GIL meanwhile, so one query froze every other call. Patterns are
still written in Python syntax (what users and models know): Python's own parser reads them and
this module writes the same expression in RE2 syntax, refusing by name the constructs no
linear-time engine runs (backreferences, lookaround, atomic groups, possessive quantifiers,
conditional groups). RE2 releases the GIL while it matches, and its time is linear in the text.

Meaning is kept: ``\\d \\w \\s`` (and their negations) match what they match in Python for text
(Unicode classes computed here from ``str.isdecimal/isalnum/isspace``); ``(?a)`` makes them
ASCII as in Python. One difference remains: ``\\b`` and ``\\B`` are ASCII word boundaries (a
Chinese character counts as a non-word character); RE2 has no Unicode word boundary.

This module is the one seam for untrusted patterns: another linear engine (the native core's
``regex`` crate) can replace ``_compile_engine`` without touching the callers.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

import re2

from moddesk.kit.errors import ServiceError, register_codes
from moddesk.kit.regex_worker import POOL, WorkersBusy, WorkerTimeout, first_match_per_segment

# Python's own regex parser: the syntax users know, read exactly as ``re`` reads it.
_parser: Any = importlib.import_module("re._parser")
_const: Any = importlib.import_module("re._constants")

MAX_REPEAT_COUNT = 1000  # RE2's limit for a counted repetition like {5,1000}
MAX_PROGRAM_SIZE = 100_000  # compiled instructions (one Unicode \\w is about 1,300)
ENGINE_MEMORY = 8 << 20  # bytes RE2 may use for one pattern (its program and DFA caches)
# program size × text bytes a call may cost in this process: when RE2's DFA gives up, its NFA
# spends about 1.3e-8 s per unit here (a[ab]{200}x: 10 s on 4 MiB of random a/b), so at most
# ~0.3 s. A costlier call runs in a worker process killed at the caller's deadline.
INLINE_COST = 20_000_000

register_codes(
    {
        "INVALID_PATTERN": "The glob or regular expression is malformed, too long or too costly.",
        "QUERY_TOO_COSTLY": "The query would cost more time or memory than one call may spend.",
    },
    zh={
        "INVALID_PATTERN": "通配符或正则表达式有误、过长或代价过高。请简化后重试。",
        "QUERY_TOO_COSTLY": "这个查询的开销超过了一次调用允许的时间或内存，已拒绝执行。请简化后重试。",
    },
)

TOO_COSTLY_HINT = (
    "Use a simpler pattern: fewer or smaller counted repetitions like {n,m}, fewer alternatives, "
    "or a plain content search for fixed text."
)
UNSUPPORTED_HINT = (
    "Search with a pattern RE2 supports (https://github.com/google/re2/wiki/Syntax): no "
    "backreferences, lookahead/lookbehind, atomic groups or possessive quantifiers; search for "
    "a wider pattern and check the hits."
)

# construct -> (English name, Chinese name)
_UNSUPPORTED: dict[str, tuple[str, str]] = {
    "GROUPREF": ("a backreference like \\1 or (?P=name)", "反向引用（如 \\1、(?P=name)）"),
    "GROUPREF_EXISTS": ("a conditional group (?(1)…|…)", "条件分组 (?(1)…|…)"),
    "ASSERT+1": ("a lookahead (?=…)", "正向先行断言 (?=…)"),
    "ASSERT-1": ("a lookbehind (?<=…)", "正向后行断言 (?<=…)"),
    "ASSERT_NOT+1": ("a negative lookahead (?!…)", "负向先行断言 (?!…)"),
    "ASSERT_NOT-1": ("a negative lookbehind (?<!…)", "负向后行断言 (?<!…)"),
    "ATOMIC_GROUP": ("an atomic group (?>…)", "原子分组 (?>…)"),
    "POSSESSIVE_REPEAT": ("a possessive quantifier like a*+", "占有量词（如 a*+）"),
}


def unsupported_construct(pattern: str, english: str, chinese: str) -> ServiceError:
    """``INVALID_PATTERN`` naming the construct the linear-time engine cannot run."""
    return ServiceError(
        "INVALID_PATTERN",
        f"the pattern uses {english}, which the linear-time regex engine does not support",
        hint=UNSUPPORTED_HINT,
        errorZh=f"正则表达式使用了{chinese}，线性时间正则引擎不支持。",
        pattern=pattern,
        construct=english,
    )


def too_costly(pattern: str, why: str) -> ServiceError:
    """``QUERY_TOO_COSTLY``: the pattern is valid but bigger than one call may run."""
    return ServiceError(
        "QUERY_TOO_COSTLY",
        f"the pattern is too costly to run: {why}",
        hint=TOO_COSTLY_HINT,
        errorZh=f"这个正则表达式开销过大，已拒绝执行：{why}",
        pattern=pattern,
    )


def malformed(pattern: str, why: str) -> ServiceError:
    """``INVALID_PATTERN`` for a pattern Python's regex syntax rejects."""
    return ServiceError(
        "INVALID_PATTERN",
        f"bad regular expression: {why}",
        hint="Fix the pattern (Python regex syntax); escape literal characters like ( [ { * + ? with \\.",
        errorZh=f"正则表达式有语法错误：{why}",
        pattern=pattern,
    )


# ---------------------------------------------------------------- Python's classes in RE2 terms

# What ``\\d \\w \\s`` match in a Python ``str`` pattern: ``str.isdecimal`` is category Nd,
# ``str.isalnum`` is the letter and number categories (checked over every code point: they differ
# only where RE2 knows a newer Unicode than Python), ``str.isspace`` is this fixed list.
_UNICODE_CLASSES = {
    "CATEGORY_DIGIT": "\\p{Nd}",
    "CATEGORY_WORD": "\\p{L}\\p{N}_",
    "CATEGORY_SPACE": "\\t-\\r\\x{1c}-\\x{20}\\x{85}\\x{a0}\\x{1680}\\x{2000}-\\x{200a}\\x{2028}\\x{2029}"
    "\\x{202f}\\x{205f}\\x{3000}",
}
_ASCII_CLASSES = {
    "CATEGORY_DIGIT": "0-9",
    "CATEGORY_WORD": "0-9A-Za-z_",
    "CATEGORY_SPACE": "\\t-\\r ",
}


def _category(name: str, ascii_only: bool) -> tuple[str, bool]:
    """The class body of Python's category ``name`` and whether it is negated (``\\D \\W \\S``)."""
    positive = name.replace("_NOT", "")
    table = _ASCII_CLASSES if ascii_only else _UNICODE_CLASSES
    return table[positive], positive != name


# ---------------------------------------------------------------- Python syntax -> RE2 syntax


def _char(code: int, pattern: str) -> str:
    if 0xD800 <= code <= 0xDFFF:
        raise malformed(pattern, f"lone surrogate \\u{code:04x}")
    if code < 128 and not chr(code).isalnum():
        return f"\\x{{{code:x}}}"
    return chr(code) if code < 128 or chr(code).isprintable() else f"\\x{{{code:x}}}"


class _Writer:
    """Writes one parsed Python pattern in RE2 syntax."""

    def __init__(self, pattern: str, ascii_only: bool, dotall: bool, relax_string_anchors: bool) -> None:
        self.pattern = pattern
        self.ascii_only = ascii_only
        self.dotall = dotall
        self.relax_string_anchors = relax_string_anchors
        self.may_match_newline = False  # conservative: True when some part could consume "\n"

    def sequence(self, items: Iterable[tuple[Any, Any]]) -> str:
        return "".join(self.node(op, arg) for op, arg in items)

    def node(self, op: Any, arg: Any) -> str:
        name = str(op)
        if name == "LITERAL":
            self.may_match_newline |= arg == 10
            return _char(arg, self.pattern)
        if name == "NOT_LITERAL":
            self.may_match_newline |= arg != 10
            return f"[^{_char(arg, self.pattern)}]"
        if name == "ANY":
            self.may_match_newline |= self.dotall
            return "."
        if name == "IN":
            return self.char_class(arg)
        if name in ("MAX_REPEAT", "MIN_REPEAT"):
            return self.repeat(arg, lazy=name == "MIN_REPEAT")
        if name == "SUBPATTERN":
            return self.group(arg)
        if name == "BRANCH":
            return "(?:" + "|".join(self.sequence(branch) for branch in arg[1]) + ")"
        if name == "AT":
            return self.anchor(str(arg))
        if name in ("ASSERT", "ASSERT_NOT"):
            key = f"{name}{'+1' if arg[0] == 1 else '-1'}"
            raise unsupported_construct(self.pattern, *_UNSUPPORTED[key])
        if name in _UNSUPPORTED:
            raise unsupported_construct(self.pattern, *_UNSUPPORTED[name])
        raise malformed(self.pattern, f"unsupported construct {name}")

    def char_class(self, items: list[tuple[Any, Any]]) -> str:
        negate = bool(items) and str(items[0][0]) == "NEGATE"
        parts: list[str] = []
        negated_categories: list[str] = []
        for op, arg in items[1:] if negate else items:
            name = str(op)
            if name == "LITERAL":
                self.may_match_newline |= arg == 10
                parts.append(_char(arg, self.pattern))
            elif name == "RANGE":
                self.may_match_newline |= arg[0] <= 10 <= arg[1]
                parts.append(f"{_char(arg[0], self.pattern)}-{_char(arg[1], self.pattern)}")
            elif name == "CATEGORY":
                body, negated = _category(str(arg), self.ascii_only)
                self.may_match_newline |= negated or "SPACE" in str(arg)
                (negated_categories if negated else parts).append(body)
            else:
                raise malformed(self.pattern, f"unsupported class item {name}")
        self.may_match_newline |= negate
        if not negated_categories:
            return ("[^" if negate else "[") + "".join(parts) + "]"
        if negate:  # [^\\W…]: a character in none of them; RE2 classes have no intersection
            raise unsupported_construct(
                self.pattern,
                "a negated class holding \\D, \\W or \\S like [^\\W…]",
                "包含 \\D、\\W 或 \\S 的取反字符类（如 [^\\W…]）",
            )
        # [\\W…]: a union, so one alternative per negated category beside the rest
        branches = [f"[^{body}]" for body in negated_categories] + ([f"[{''.join(parts)}]"] if parts else [])
        return "(?:" + "|".join(branches) + ")"

    def repeat(self, arg: tuple[int, int, Any], lazy: bool) -> str:
        low, high, item = arg
        bounded = high != _const.MAXREPEAT
        if low > MAX_REPEAT_COUNT or (bounded and high > MAX_REPEAT_COUNT):
            raise too_costly(self.pattern, f"a repetition count above {MAX_REPEAT_COUNT}")
        if (low, bounded) == (0, False):
            quantifier = "*"
        elif (low, bounded) == (1, False):
            quantifier = "+"
        elif (low, high) == (0, 1):
            quantifier = "?"
        else:
            quantifier = f"{{{low},{high if bounded else ''}}}"
        return f"(?:{self.sequence(item)}){quantifier}{'?' if lazy else ''}"

    def group(self, arg: tuple[int | None, int, int, Any]) -> str:
        _number, add_flags, del_flags, body = arg
        outer = self.ascii_only, self.dotall
        if add_flags & _const.SRE_FLAG_ASCII:
            self.ascii_only = True
        if del_flags & _const.SRE_FLAG_ASCII:
            self.ascii_only = False
        self.dotall = bool(add_flags & _const.SRE_FLAG_DOTALL) or (
            self.dotall and not del_flags & _const.SRE_FLAG_DOTALL
        )
        try:
            inner = self.sequence(body)
        finally:
            self.ascii_only, self.dotall = outer
        on, off = _flag_letters(add_flags), _flag_letters(del_flags)
        flags = on + (f"-{off}" if off else "")
        # groups only ever scope flags here: callers use the span of the whole match
        return f"(?{flags}:{inner})"

    def anchor(self, name: str) -> str:
        if name == "AT_BEGINNING_STRING":
            return "(?m:^)" if self.relax_string_anchors else "\\A"
        if name == "AT_END_STRING":
            return "(?m:$)" if self.relax_string_anchors else "\\z"
        anchors = {"AT_BEGINNING": "^", "AT_END": "$", "AT_BOUNDARY": "\\b", "AT_NON_BOUNDARY": "\\B"}
        return anchors[name]


def _flag_letters(flags: int) -> str:
    letters = (
        (_const.SRE_FLAG_IGNORECASE, "i"),
        (_const.SRE_FLAG_MULTILINE, "m"),
        (_const.SRE_FLAG_DOTALL, "s"),
    )
    return "".join(letter for bit, letter in letters if flags & bit)


def translate(
    pattern: str,
    *,
    ignore_case: bool = False,
    multiline: bool = False,
    dotall: bool = False,
    relax_string_anchors: bool = False,
) -> str:
    """``pattern`` (Python syntax) written in RE2 syntax, or ``INVALID_PATTERN``/``QUERY_TOO_COSTLY``.

    ``relax_string_anchors``: ``\\A`` and ``\\Z`` match at every line start and end, for a scan of
    many texts joined by newlines that must find every text a per-text match would find.
    """
    return _translate(
        pattern,
        ignore_case=ignore_case,
        multiline=multiline,
        dotall=dotall,
        relax_string_anchors=relax_string_anchors,
    )[0]


def _translate(
    pattern: str,
    *,
    ignore_case: bool = False,
    multiline: bool = False,
    dotall: bool = False,
    relax_string_anchors: bool = False,
) -> tuple[str, bool]:
    """``translate``, and whether a match may hold a newline."""
    flags = (
        (_const.SRE_FLAG_IGNORECASE if ignore_case else 0)
        | (_const.SRE_FLAG_MULTILINE if multiline else 0)
        | (_const.SRE_FLAG_DOTALL if dotall else 0)
    )
    try:
        parsed = _parser.parse(pattern, flags)
    except (re.error, OverflowError, ValueError) as exc:
        raise malformed(pattern, str(exc)) from exc
    except RecursionError as exc:
        raise too_costly(pattern, "the pattern nests too deeply") from exc
    global_flags = parsed.state.flags | flags
    writer = _Writer(
        pattern,
        bool(global_flags & _const.SRE_FLAG_ASCII),
        bool(global_flags & _const.SRE_FLAG_DOTALL),
        relax_string_anchors,
    )
    try:
        body = writer.sequence(parsed.data)
    except RecursionError as exc:
        raise too_costly(pattern, "the pattern nests too deeply") from exc
    letters = _flag_letters(global_flags)
    return (f"(?{letters}){body}" if letters else body), writer.may_match_newline


# ---------------------------------------------------------------- the engine


class LinearRegex:
    """A compiled pattern: every search is linear in the text and releases the GIL."""

    def __init__(
        self, pattern: str, engine_pattern: str, engine: Any, may_match_newline: bool = True
    ) -> None:
        self.pattern = pattern  # as the caller wrote it (Python syntax)
        self.engine_pattern = engine_pattern  # what the engine runs
        self.may_match_newline = may_match_newline
        self._engine = engine

    def span_in(self, data: bytes, pos: int = 0, endpos: int | None = None) -> tuple[int, int] | None:
        """Byte span of the leftmost match in UTF-8 ``data[pos:endpos]`` (context outside counts)."""
        found = self._engine.search(data, pos, len(data) if endpos is None else endpos)
        return None if found is None else (found.start(), found.end())

    @property
    def inline_bytes(self) -> int:
        """How many bytes one call may search in this process (more go to a worker)."""
        return INLINE_COST // max(1, int(self._engine.programsize))

    def first_match_per_segment(
        self, data: bytes, separator: bytes, deadline: float, superset: bool = False
    ) -> list[tuple[int, int]]:
        """Byte spans of the first match in each segment of ``data`` (``regex_worker``'s rules).

        ``superset``: the caller needs only every segment a per-segment search would find, so
        the rest of a matching segment is skipped whatever the pattern.
        ``QUERY_TOO_COSTLY`` when the call could not finish by ``deadline`` (``time.monotonic``).
        """
        skip_rest = superset or not self.may_match_newline
        if len(data) <= self.inline_bytes:
            return first_match_per_segment(self._engine, data, separator, skip_rest)
        try:
            return POOL.first_match_per_segment(self.engine_pattern, data, separator, skip_rest, deadline)
        except WorkerTimeout as exc:
            raise too_costly(self.pattern, f"matching {len(data)} bytes did not finish in time") from exc
        except WorkersBusy as exc:
            raise too_costly(
                self.pattern, "other costly searches are still running; retry when they end"
            ) from exc

    def search(self, text: str) -> bool:
        """Whether ``text`` contains a match."""
        return self._engine.search(_utf8(text)) is not None

    def fullmatch(self, text: str) -> bool:
        """Whether the whole of ``text`` matches."""
        return self._engine.fullmatch(_utf8(text)) is not None


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def _compile_engine(pattern: str, engine_pattern: str) -> Any:
    options = re2.Options()
    options.max_mem = ENGINE_MEMORY
    options.log_errors = False
    try:
        engine = re2.compile(engine_pattern.encode("utf-8"), options)
    except re2.error as exc:
        text = (
            exc.args[0].decode("utf-8", "replace")
            if exc.args and isinstance(exc.args[0], bytes)
            else str(exc)
        )
        if any(word in text for word in ("too large", "too big", "repetition")):
            raise too_costly(
                pattern, "the compiled pattern is larger than the engine's memory limit"
            ) from exc
        raise malformed(pattern, text) from exc
    if engine.programsize > MAX_PROGRAM_SIZE:
        raise too_costly(pattern, f"it compiles to {engine.programsize} steps (at most {MAX_PROGRAM_SIZE})")
    return engine


@lru_cache(maxsize=256)
def compile_pattern(
    pattern: str,
    *,
    ignore_case: bool = False,
    multiline: bool = False,
    dotall: bool = False,
    relax_string_anchors: bool = False,
) -> LinearRegex:
    """Compile a Python-syntax pattern for the linear-time engine (errors as ``ServiceError``)."""
    engine_pattern, may_match_newline = _translate(
        pattern,
        ignore_case=ignore_case,
        multiline=multiline,
        dotall=dotall,
        relax_string_anchors=relax_string_anchors,
    )
    return LinearRegex(pattern, engine_pattern, _compile_engine(pattern, engine_pattern), may_match_newline)
