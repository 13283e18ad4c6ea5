"""Keyword-matched values (``settings.DATASET_REDACT_PATTERNS``, the seed's ``privacyFiltering.redactPatterns``):
a keyword followed by a separator and a value (``password: hunter2``, ``api_key=abc123``, ``token "xyz"``,
``密码是 hunter2``) has its value redacted; a pattern starting with ``-----`` redacts a PEM block whole."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

from detect_secrets.plugins.keyword import DENYLIST as DETECT_SECRETS_KEYWORDS

from reflection_site.privacy.findings import KEY_CHARS, Finding
from reflection_site.privacy.secret_formats import PEM_END, block_end

# datasetCollection.privacyFiltering.redactPatterns, used when settings do not say otherwise.
DEFAULT_REDACT_PATTERNS: tuple[str, ...] = ("api[_-]?key", "password", "token", "secret", "-----BEGIN.*-----")

# Chinese words for password, passphrase, key, private key and token, always searched alongside the
# configured patterns (which the seed writes in English) and detect-secrets' KeywordDetector list.
# That plugin's own value regexes are not used: in prose there is no closing quote, and they take
# the rest of the line as the secret.
_CJK_KEYWORDS: tuple[str, ...] = ("密码", "口令", "密钥", "秘钥", "私钥", "令牌")
# Words that name a secret only when the value is shaped like one: "the key for the drive is GDBr2dF9sP5u", "the
# door code is 4471" (digits for a code or a PIN, not for a key), not "the key to success is patience" or "key: the
# legend of the map".
_WEAK_KEYWORDS: frozenset[str] = frozenset(
    {"key", "passcode", "pin", "pin code", "door code", "gate code", "alarm code", "entry code", "access code",
     "security code", "unlock code"}
)  # fmt: skip
# A keyword said in prose as two words ("my API key is …", "the access key is …"): the seed's pattern
# ``api[_-]?key`` and detect-secrets' list name keys as identifiers, with no space inside.
_EXTRA_KEYWORDS: tuple[str, ...] = ("passphrase", "api key", "access key", "secret key", *sorted(_WEAK_KEYWORDS))
_CODE_VALUE = re.compile(r"\d{4,}")
# What prose puts between a key and its "is": "the password for the company system is …", "token of the
# staging server was …" (a preposition and at most four words, then the copula).
_QUALIFIER = re.compile(r"[ \t]+(?i:for|of|to|on|at|in)(?:[ \t]+[\w.-]+){1,4}?(?=[ \t]+(?i:is|was)[ \t])")

# A key whose other words say it names metadata about a secret, not the secret itself:
# "password_policy: strict", "token_count: 12", "secret_name: prod-db".
_METADATA_WORDS: frozenset[str] = frozenset(
    {
        "age", "budget", "completion", "count", "created", "description", "dir", "enabled", "endpoint",
        "env", "expiration", "expires", "expiry", "field", "file", "format", "header", "hint", "id",
        "input", "label", "len", "length", "limit", "manager", "max", "min", "name", "output", "param",
        "path", "policy", "prompt", "required", "reset", "rotation", "rule", "rules", "size", "store",
        "strength", "total", "ttl", "type", "updated", "uri", "url", "usage", "var", "vault", "version",
    }
)  # fmt: skip
_KEY_WORDS = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
# What may follow a keyword inside the key: api_key_prod, X-Api-Key-Id, passwordHash.
_KEY_SUFFIX = re.compile(r"(?:[_-][A-Za-z0-9]+|[A-Z][a-z0-9]+){0,3}(?![A-Za-z0-9])")
_SEPARATOR = re.compile(
    r"[\"'`\]]{0,2}"  # the closing quote or bracket of a JSON, dict or array key
    r"(?:(?P<assign>[ \t]*(?::=|=>|==|[:=：])[ \t]*)"  # password: x, api_key=x, "token": "x"
    # password is x, 密码是 x, the password is now x, 密码改成 x
    r"|(?P<copula>[ \t]+(?i:is now|is|was|(?:has |was )?changed to|(?:is |was )?set to)[ \t]*:?[ \t]+|"
    r"[ \t]*(?:改成了?|改为|换成了?|设成了?|设为|设置为|变成了?|[是为為])[ \t]*[:：]?[ \t]*)"
    r"|(?P<space>[ \t]+)(?=[\"'`“‘「『])"  # token "xyz"
    r"|(?P<bare>[ \t]+))"  # password Tr0ub4dor&3 (only a value shaped like a credential, see _BARE_VALUE)
)

# Values that stand for a secret without being one: placeholders, templates, empty markers.
_NOT_A_VALUE = re.compile(
    r"""\[[A-Z_]+\] | <[^>]*> | \*+ | x{3,} | \.{3,} | \$\{?[A-Za-z_][A-Za-z0-9_]*\}? | \{\{.*\}\} | %\(?\w*\)?s""",
    re.VERBOSE | re.IGNORECASE,
)
_STOPWORDS: frozenset[str] = frozenset(
    {
        "a", "an", "and", "are", "as", "at", "by", "empty", "false", "for", "from", "hidden", "in", "is",
        "n/a", "no", "none", "not", "null", "of", "on", "optional", "or", "redacted", "required", "set",
        "the", "to", "true", "unset", "was", "with", "yes",
    }
)  # fmt: skip
_QUOTES: dict[str, str] = {'"': '"', "'": "'", "`": "`", "“": "”", "‘": "’", "「": "」", "『": "』"}
# An unquoted value stops at whitespace, delimiters and CJK text: "密码是hunter2谢谢" leaks "hunter2".
_UNQUOTED = re.compile(r"[^\s,;'\"`<>(){}\[\]\u2e80-\u9fff\u3000-\u303f\uac00-\ud7af\uff00-\uffef]+")
_CREDENTIAL_SHAPE = re.compile(r"[\d!#$%&*+/=?@^_~-]")
# A value after a keyword and a bare space ("login with password Tr0ub4dor&3"): prose follows such words
# too ("password manager", "token limit 4096"), so only a word of 8+ characters mixing letters and
# digits with a symbol or both cases counts.
_BARE_VALUE = re.compile(r"(?=.*[A-Za-z])(?=.*\d)(?=.*(?:[!#$%&*+/=?@^_~-]|[a-z].*[A-Z]|[A-Z].*[a-z])).{8,}")


def configured_patterns() -> tuple[str, ...]:
    """``settings.DATASET_REDACT_PATTERNS``, or the seed's defaults outside a configured Django."""
    from django.conf import settings  # Lazily: this module also serves code outside a configured Django.

    if not settings.configured:
        return DEFAULT_REDACT_PATTERNS
    return tuple(getattr(settings, "DATASET_REDACT_PATTERNS", DEFAULT_REDACT_PATTERNS))


@dataclass(frozen=True)
class _Rules:
    keyword: re.Pattern[str]
    # True when every keyword pattern is lower-case: then ``keyword`` searches the lower-cased text,
    # which is an order of magnitude faster than a case-insensitive alternation.
    folded: bool
    blocks: tuple[re.Pattern[str], ...]


def _is_block(pattern: str) -> bool:
    return pattern.lstrip("^").startswith("-----")


@lru_cache(maxsize=8)
def compiled_rules(patterns: tuple[str, ...]) -> _Rules:
    """Compile the configured patterns once per distinct list.

    A pattern starting with ``-----`` (the seed's ``-----BEGIN.*-----``) marks a PEM block that is
    redacted whole; every other pattern is a keyword whose following value is redacted. Raises
    ``re.error`` for an invalid pattern, so a typo in the settings fails loudly.
    """
    keywords = [*(p for p in patterns if not _is_block(p)), *DETECT_SECRETS_KEYWORDS, *_EXTRA_KEYWORDS, *_CJK_KEYWORDS]
    alternation = "|".join(f"(?:{p})" for p in keywords)
    folded = alternation == alternation.lower()
    return _Rules(
        keyword=re.compile(alternation) if folded else re.compile(alternation, re.IGNORECASE),
        folded=folded,
        blocks=tuple(re.compile(p) for p in patterns if _is_block(p)),
    )


def _key_start(text: str, start: int) -> int | None:
    """Where the key holding a keyword at ``start`` begins, or None if the keyword is inside a word.

    Prefixes in snake, kebab and camel case belong to the key (db_password, X-Api-Key, accessToken);
    "mypassword" or "secretary" are words. Chinese keywords need no boundary ("WiFi密码是…").
    """
    if not text[start].isascii() or start == 0 or text[start - 1] not in KEY_CHARS:
        return start
    before = text[start - 1]
    if before not in "_-" and not ((before.islower() or before.isdigit()) and text[start].isupper()):
        return None
    begin = start - 1
    while begin > 0 and text[begin - 1] in KEY_CHARS and start - begin < 40:
        begin -= 1
    return begin


def key_spans(text: str, rules: _Rules) -> Iterator[tuple[int, int]]:
    """(start, end) of each secret-sounding key in ``text``, metadata keys left out."""
    haystack = text.lower() if rules.folded else text
    if len(haystack) != len(text):  # Lower-casing changed the length (e.g. "İ"): offsets would drift.
        haystack, keyword = text, re.compile(rules.keyword.pattern, re.IGNORECASE)
    else:
        keyword = rules.keyword
    position = 0
    while (match := keyword.search(haystack, position)) is not None:
        position = match.start() + 1
        if match.end() == match.start():
            continue
        start = _key_start(text, match.start())
        if start is None:
            continue
        end = match.end()
        if text[match.start()].isascii():
            suffix = _KEY_SUFFIX.match(text, end)
            if suffix is None:
                continue
            end = suffix.end()
        if not any(word.lower() in _METADATA_WORDS for word in _KEY_WORDS.findall(text[start:end])):
            position = end
            yield start, end


def _value_span(text: str, pos: int) -> tuple[int, int] | None:
    if pos >= len(text):
        return None
    closing = _QUOTES.get(text[pos])
    if closing is not None:
        end = text.find(closing, pos + 1, pos + 1 + 500)
        if end == -1 or "\n" in text[pos + 1 : end]:
            return None
        return pos + 1, end
    if text.startswith(("${", "{{", "%("), pos):  # a template reference, filled in elsewhere
        return None
    match = _UNQUOTED.match(text, pos)
    if match is None:
        return None
    value = match.group().rstrip(".:")
    return (pos, pos + len(value)) if value else None


def _is_secret_value(value: str, *, copula: bool) -> bool:
    if not any(char.isalnum() for char in value) or value.lower() in _STOPWORDS or _NOT_A_VALUE.fullmatch(value):
        return False
    if value.isdigit() and len(value) < 4:  # counts and limits: "token: 5", "secret_level=3"
        return False
    if copula:
        # "the token is valid" is prose; "my password is hunter2" is a credential.
        return len(value) >= 6 and _CREDENTIAL_SHAPE.search(value) is not None
    return True


# A secret named in one place and its value given in another: "the code for the office drug cabinet … It's
# hXiWdY3p", "the API token for the SMS service, so the reminders keep going: smsr_j8x8…". Only in a text that names
# a secret (a key above, or "the code/combination/PIN for …"), and only a standalone word shaped like a credential
# (``_BARE_VALUE``), never a UUID, a link, an address or a path.
_APART_KEY = re.compile(
    r"\b(?:codes?|combination|pin|login|log-in|sign-in|passcode|passphrase)\s+(?:for|to|of|on)\b", re.IGNORECASE
)

_APART_VALUE = re.compile(r"(?<![\w/@.:\\-])[A-Za-z0-9][\w!#$%&*+=?^~-]{7,}(?=[.,;:!?)\]]*(?:\s|$|[\u3000-\u9fff]))")
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.IGNORECASE)


def _values_apart(text: str, keys: list[tuple[int, int]]) -> Iterator[Finding]:
    if not (keys or _APART_KEY.search(text)):
        return
    for match in _APART_VALUE.finditer(text):
        if any(start < match.end() and match.start() < end for start, end in keys):  # "api_key=…": the key's own.
            continue
        value = match.group()
        # Letters only that change case again and again ("RVviRQwbwBa"), where a secret was named apart; a brand or a
        # name changes case two or three times ("WhatsApp", "PlayStation").
        mixed = value.isalpha() and sum(a.isupper() != b.isupper() for a, b in zip(value, value[1:], strict=False)) >= 4
        if (_BARE_VALUE.fullmatch(value) or mixed) and not _UUID.fullmatch(value):
            yield Finding("secret", match.start(), match.end())


# A lock and the numbers that open it: "the lab safe opens with 31-56-57", "the bike lock is 0417", "保险柜的密码是…"
# is a keyword's. The numbers only, after a lock and a verb of opening or "is"/"code".
_LOCK_CODE = re.compile(
    r"\b(?:safe|lock|padlock|locker|key ?safe|lockbox|lock ?box|strongbox|combination)\b[^.\n]{0,30}?"
    r"\b(?:opens|unlocks|open|unlock)\s+(?:with|on|to)\s+(?P<v>\d{1,4}(?:[-\s]\d{1,4}){1,4}|\d{3,8})\b",
    re.IGNORECASE,
)


def keyword_findings(text: str, rules: _Rules) -> Iterator[Finding]:
    """The PEM blocks ``rules`` name, and each value after a secret-sounding key and a separator."""
    if "-----" in text:
        for block in rules.blocks:
            for match in block.finditer(text):
                kind = "private_key" if "PRIVATE KEY" in match.group() else "secret"
                end = max(match.end(), block_end(text, match.start() + 5, PEM_END))
                yield Finding(kind, match.start(), end)
    keys = list(key_spans(text, rules))  # Once: the values said apart from their keys (below) read them too.
    for key_start, key_end in keys:
        separator = _SEPARATOR.match(text, key_end)
        qualified = _QUALIFIER.match(text, key_end)
        if qualified is not None:  # "password for the company system is X": the copula after the qualifier.
            separator = _SEPARATOR.match(text, qualified.end())
        if separator is None:
            continue
        span = _value_span(text, separator.end())
        if span is None:
            continue
        value = text[span[0] : span[1]]
        if separator.group("bare") is not None and not _BARE_VALUE.fullmatch(value):
            continue
        if (weak := text[key_start:key_end].lower()) in _WEAK_KEYWORDS:
            if _BARE_VALUE.fullmatch(value) or (weak != "key" and _CODE_VALUE.fullmatch(value)):
                yield Finding("secret", *span)
            continue
        if _is_secret_value(value, copula=bool(separator.group("copula"))):
            yield Finding("secret", *span)
    yield from _values_apart(text, keys)
    for match in _LOCK_CODE.finditer(text):
        yield Finding("secret", match.start("v"), match.end("v"))
