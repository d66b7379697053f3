"""PVF formats: containers (classic, NKPI), script tokens, text, string tables, lists, encodings."""

from moddesk.pvf.format.errors import ERROR_CODES, PvfFormatError
from moddesk.pvf.format.text import compile_script, lex, normalize_text, render_script
from moddesk.pvf.format.tokens import Family, TokenStream, decode_tokens, encode_tokens

__all__ = [
    "ERROR_CODES",
    "Family",
    "PvfFormatError",
    "TokenStream",
    "compile_script",
    "decode_tokens",
    "encode_tokens",
    "lex",
    "normalize_text",
    "render_script",
]
