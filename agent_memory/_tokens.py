"""A provider-neutral token estimate for budgeting prompts.

It need not match any tokenizer exactly; it must never undercount badly. Latin text averages
about four characters a token; CJK characters are close to one token each.
"""

from __future__ import annotations

import math

__all__ = ["estimate_tokens"]


def _is_wide(ch: str) -> bool:
    code = ord(ch)
    return (
        0x3040 <= code <= 0x30FF  # kana
        or 0x3400 <= code <= 0x9FFF  # CJK ideographs
        or 0xAC00 <= code <= 0xD7AF  # hangul
        or 0xF900 <= code <= 0xFAFF
        or 0xFF00 <= code <= 0xFFEF  # full-width forms
    )


def estimate_tokens(text: str) -> int:
    """Estimated token count of ``text`` (0 for the empty string)."""
    if not text:
        return 0
    wide = sum(1 for ch in text if _is_wide(ch))
    narrow = len(text) - wide
    return wide + math.ceil(narrow / 4)
