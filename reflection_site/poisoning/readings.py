"""The readings of a candidate fact that the poisoning patterns search: the text normalised (NFKC, invisible and
tag characters, spaced-out letters) and, for an obfuscated text, what its escapes, encodings and leetspeak spell.
"""

from __future__ import annotations

import re
import unicodedata

_I = re.IGNORECASE

# --- Normalisation -------------------------------------------------------------------------------
_INVISIBLE = re.compile("[\u00ad\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")
# "I g n o r e" and "i-g-n-o-r-e": single letters joined by one separator, four or more of them.
_SPACED = re.compile(r"\b(?:[a-z][ .\-_*]){3,}[a-z]\b", _I)


# Unicode "tag" characters (U+E0020-E007E) spell ASCII invisibly ("ASCII smuggling").
_TAGS = re.compile("[\U000e0020-\U000e007e]")


def normalise(text: str) -> str:
    """The text as the patterns read it: NFKC (full-width, ligatures), tag characters spelled out,
    invisible characters removed, spaced-out letters joined, whitespace collapsed."""
    text = _TAGS.sub(lambda m: chr(ord(m.group()) - 0xE0000), text or "")
    text = unicodedata.normalize("NFKC", text)
    text = _INVISIBLE.sub("", text)
    text = _SPACED.sub(lambda m: re.sub(r"[ .\-_*]", "", m.group()), text)
    return " ".join(text.split())


_PERCENT = re.compile(r"(?:%[0-9a-f]{2}[^%\s]{0,12}){3,}", _I)
_UESCAPE = re.compile(r"(?:\\u[0-9a-f]{4}){3,}", _I)
_BINARY = re.compile(r"(?:[01]{8}\s?){4,}")
_BLOB = re.compile(r"[A-Za-z0-9+/=_\-%!#$&()*;<>?@^`{|}~]{24,}")
_MORSE_RUN = re.compile(r"(?:[.-]{1,6}[ /]+){8,}[.-]{1,6}")
_MORSE = dict(
    zip(
        ".- -... -.-. -.. . ..-. --. .... .. .--- -.- .-.. -- -. --- .--. --.- .-. ... - ..- ...- .-- -..- -.-- --..".split(),
        "abcdefghijklmnopqrstuvwxyz",
        strict=True,
    )
)
# Reversed and rot13 text are read for the override class only (reflection_site.poisoning.hold_class).
ROT13 = str.maketrans(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", "nopqrstuvwxyzabcdefghijklmNOPQRSTUVWXYZABCDEFGHIJKLM"
)
_LEET = str.maketrans("013457@$", "oieastas")
_LEET_WORD = re.compile(r"\b(?=\w*[a-z])(?=\w*[013457])\w{3,}\b", _I)


def _printable(data: bytes) -> str | None:
    try:
        decoded = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    letters = sum(ch.isalpha() or ch.isspace() for ch in decoded)
    return decoded if decoded and letters / len(decoded) > 0.7 else None


def _decode_blob(blob: str) -> str | None:
    """The text a base64, base32, base85 or hex run spells, when it spells readable text."""
    import base64
    import binascii

    attempts = (
        lambda b: bytes.fromhex(b),
        lambda b: base64.b64decode(b + "=" * (-len(b) % 4), validate=False),
        lambda b: base64.urlsafe_b64decode(b + "=" * (-len(b) % 4)),
        lambda b: base64.b32decode(b + "=" * (-len(b) % 8)),
        lambda b: base64.b85decode(b),
        lambda b: base64.a85decode(b, adobe=b.startswith("<~")),
    )
    for attempt in attempts:
        try:
            decoded = _printable(attempt(blob))
        except (ValueError, binascii.Error):
            continue
        if decoded:
            return decoded
    return None


def variants(norm: str) -> list[str]:
    """Readings of an obfuscated text: percent and \\u escapes, encoded runs (base64/32/85, hex, binary)
    decoded, leetspeak spelled out. Empty for a plain text (the common case costs a few searches)."""
    import urllib.parse

    out: list[str] = []
    if _PERCENT.search(norm):
        out.append(urllib.parse.unquote(norm))
    if _UESCAPE.search(norm):
        out.append(_UESCAPE.sub(lambda m: m.group().encode().decode("unicode_escape"), norm))
    for match in _BINARY.finditer(norm):
        # Eight bits a character, spaced or not (a run without spaces is one word: split() would make one
        # 200-bit "byte" that chr() cannot take).
        out.append("".join(chr(int(byte, 2)) for byte in re.findall(r"[01]{8}", match.group())))
    for match in re.finditer(r"<~.{8,}?~>", norm):
        decoded = _decode_blob(match.group())
        if decoded:
            out.append(normalise(decoded))
    for match in _BLOB.finditer(norm):
        decoded = _decode_blob(match.group())
        if decoded:
            out.append(normalise(decoded))
    for match in _MORSE_RUN.finditer(norm):
        words = match.group().split(" / ")
        out.append(" ".join("".join(_MORSE.get(code, "") for code in word.split()) for word in words))
    if _LEET_WORD.search(norm):
        out.append(_LEET_WORD.sub(lambda m: m.group().lower().translate(_LEET), norm))
    return out
