"""Find PII and secrets in text and replace them with typed placeholders.

The write guardian refuses a fact that holds a secret, the dataset redacts its samples and every log
line passes through ``RedactingFilter``: all three ask this module, so they agree on what a secret is.

Detection runs in three layers:

1. Yelp's detect-secrets plugins for every secret with a published shape (AWS, GitHub, GitLab, Slack,
   OpenAI, Stripe, SendGrid, PyPI, npm, Telegram, Discord, Twilio, Mailchimp, Azure, Square, JWTs,
   private keys, passwords in URLs). A plugin runs only when one of its cheap literal triggers occurs
   in the text, and reports values, not spans, so each value is located in the text afterwards.
2. A few regexes of our own for key families the plugins miss or match too strictly (``sk-proj-…``
   without OpenAI's marker, ``sk-ant-…``, ``github_pat_…``, shortened ``ghp_…``, ``xoxb-…`` without
   numeric parts, ``Bearer``/``Basic`` credentials) and for ``settings.DATASET_REDACT_PATTERNS``,
   the seed's ``privacyFiltering.redactPatterns``: a keyword followed by a separator and a value
   (``password: hunter2``, ``api_key=abc123``, ``token "xyz"``, ``密码是 hunter2``) has its VALUE redacted.
3. PII regexes with validation: e-mail, phone (E.164 and common national formats, Chinese mobiles),
   cards (Luhn), IPv4/IPv6 (``ipaddress``), IBANs (registry length and mod-97 checksum), and national
   id numbers: Chinese resident identity numbers (18 characters, a province prefix, a real birth date
   and the ISO 7064 MOD 11-2 check character), US social security numbers (only beside words such as
   "SSN"; the SSA's area, group and serial rules) and UK National Insurance numbers (HMRC's prefix
   letters and an A-D suffix).

A national id number is treated as a secret, not as mere PII: like a password it opens accounts
(tax, banking, benefits), so the write guardian refuses a fact that holds one, every log line hides it,
and a dataset export without ``include_pii`` replaces it with ``[NATIONAL_ID]``.

Deliberately not detected: git SHAs, UUIDs, hashes and other high-entropy strings. detect-secrets'
entropy plugins flag every one of them, and an agent's memory is full of them, so they would wreck
precision while the secrets that matter have a recognisable prefix or a keyword in front.
Overlapping findings are merged into one span of the most sensitive kind, so nothing leaks at the
seam between two detectors.
"""

import base64
import binascii
import datetime as dt
import ipaddress
import logging
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache

from detect_secrets.plugins.aws import AWSKeyDetector
from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
from detect_secrets.plugins.base import BasePlugin
from detect_secrets.plugins.basic_auth import BasicAuthDetector
from detect_secrets.plugins.discord import DiscordBotTokenDetector
from detect_secrets.plugins.github_token import GitHubTokenDetector
from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
from detect_secrets.plugins.jwt import JwtTokenDetector
from detect_secrets.plugins.keyword import DENYLIST as DETECT_SECRETS_KEYWORDS
from detect_secrets.plugins.mailchimp import MailchimpDetector
from detect_secrets.plugins.npm import NpmDetector
from detect_secrets.plugins.openai import OpenAIDetector
from detect_secrets.plugins.private_key import PrivateKeyDetector
from detect_secrets.plugins.pypi_token import PypiTokenDetector
from detect_secrets.plugins.sendgrid import SendGridDetector
from detect_secrets.plugins.slack import SlackDetector
from detect_secrets.plugins.square_oauth import SquareOAuthDetector
from detect_secrets.plugins.stripe import StripeDetector
from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector
from detect_secrets.plugins.twilio import TwilioKeyDetector

__all__ = [
    "DEFAULT_REDACT_PATTERNS",
    "PII_KINDS",
    "SECRET_KINDS",
    "Finding",
    "RedactingFilter",
    "contains_pii",
    "contains_secret",
    "detect",
    "redact",
    "redact_data",
]

# datasetCollection.privacyFiltering.redactPatterns, used when settings do not say otherwise.
DEFAULT_REDACT_PATTERNS: tuple[str, ...] = ("api[_-]?key", "password", "token", "secret", "-----BEGIN.*-----")

PII_KINDS: frozenset[str] = frozenset({"email", "phone", "card", "ip", "iban"})
SECRET_KINDS: frozenset[str] = frozenset({"private_key", "jwt", "secret", "national_id"})

_PLACEHOLDERS: dict[str, str] = {
    "email": "[EMAIL]",
    "phone": "[PHONE]",
    "card": "[CARD]",
    "ip": "[IP]",
    "iban": "[IBAN]",
    "private_key": "[PRIVATE_KEY]",
    "jwt": "[JWT]",
    "secret": "[SECRET]",
    "national_id": "[NATIONAL_ID]",
}

# When two findings overlap, the merged span takes the most sensitive kind: a secret must never be
# reported (or let through by contains_secret) as mere PII because a phone regex touched it too.
_SEVERITY: dict[str, int] = {
    "private_key": 0,
    "jwt": 1,
    "secret": 2,
    "national_id": 3,
    "card": 4,
    "iban": 5,
    "email": 6,
    "phone": 7,
    "ip": 8,
}


@dataclass(frozen=True)
class Finding:
    """One span of ``text[start:end]`` holding PII or a secret of ``kind``."""

    kind: str
    start: int
    end: int

    @property
    def placeholder(self) -> str:
        return _PLACEHOLDERS[self.kind]


# --- detect-secrets plugins ------------------------------------------------------------------------


@dataclass(frozen=True)
class _Plugin:
    detector: BasePlugin
    kind: str
    # Lower-case substrings, one of which must occur before the plugin's regexes run; empty means
    # always run (the plugin's own regex starts with a literal and is as cheap as a trigger).
    triggers: tuple[str, ...]


# analyze_string() is used rather than scan_line()/analyze_line(): it needs no detect-secrets settings
# (a process-wide singleton that transient_settings() would mutate under concurrent threads) and
# never attempts the plugins' network verification.
_PLUGINS: tuple[_Plugin, ...] = (
    _Plugin(PrivateKeyDetector(), "private_key", ("private key", "putty-user-key-file")),
    _Plugin(JwtTokenDetector(), "jwt", ("eyj",)),
    _Plugin(AWSKeyDetector(), "secret", ("akia", "asia", "abia", "acca", "a3t", "aws")),
    _Plugin(GitHubTokenDetector(), "secret", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")),
    _Plugin(
        GitLabTokenDetector(),
        "secret",
        (
            "glpat-",
            "gldt-",
            "glft-",
            "glsoat-",
            "glrt-",
            "gr1348941",
            "glcbt-",
            "glimt-",
            "glptt-",
            "glagent-",
            "gloas-",
        ),
    ),
    _Plugin(SlackDetector(), "secret", ("xox", "hooks.slack.com")),
    _Plugin(OpenAIDetector(), "secret", ("t3blbkfj",)),
    _Plugin(StripeDetector(), "secret", ("k_live_",)),
    _Plugin(SendGridDetector(), "secret", ("sg.",)),
    _Plugin(PypiTokenDetector(), "secret", ("pypi-",)),
    _Plugin(NpmDetector(), "secret", ("_authtoken",)),
    _Plugin(TelegramBotTokenDetector(), "secret", (":",)),
    _Plugin(DiscordBotTokenDetector(), "secret", (".",)),
    _Plugin(TwilioKeyDetector(), "secret", ()),
    _Plugin(MailchimpDetector(), "secret", ("-us",)),
    _Plugin(AzureStorageKeyDetector(), "secret", ("accountkey=",)),
    _Plugin(SquareOAuthDetector(), "secret", ("sq0csp-",)),
    _Plugin(BasicAuthDetector(), "secret", ("://",)),
)

# JwtTokenDetector's pattern ends in a lazy quantifier, so it reports header.payload without the
# signature; the span is widened to the whole token.
_JWT = re.compile(r"eyJ[A-Za-z0-9_=-]+\.[A-Za-z0-9_=-]+(?:\.[A-Za-z0-9_\-+/=]*)?")
_PEM_END = re.compile(r"-----END[^\n]*?-----")
_PUTTY_END = re.compile(r"Private-MAC:[^\n]*")


def _occurrences(text: str, value: str) -> Iterator[int]:
    start = text.find(value)
    while start != -1:
        yield start
        start = text.find(value, start + len(value))


def _block_end(text: str, start: int, end_marker: re.Pattern[str]) -> int:
    # A block cut off before its END line is redacted to the end of the text: nothing tells where
    # its key material stops.
    match = end_marker.search(text, start)
    return match.end() if match else len(text)


def _plugin_findings(text: str, lowered: str) -> Iterator[Finding]:
    for plugin in _PLUGINS:
        if plugin.triggers and not any(trigger in lowered for trigger in plugin.triggers):
            continue
        for value in set(plugin.detector.analyze_string(text)):
            if not value:
                continue
            for start in _occurrences(text, value):
                end = start + len(value)
                if plugin.kind == "jwt":
                    match = _JWT.match(text, start)
                    end = max(end, match.end()) if match else end
                elif plugin.kind == "private_key":
                    if value.startswith("PuTTY"):
                        end = _block_end(text, end, _PUTTY_END)
                    else:
                        if text.startswith("-----", start - 5):
                            start -= 5
                        end = _block_end(text, end, _PEM_END)
                yield Finding(plugin.kind, start, end)


# --- Key formats detect-secrets 1.5 misses or matches too strictly ---------------------------------

# No leading lookbehind here or below: it stops the regex engine from skipping ahead to the literal
# prefix, which costs ten times more on ordinary text. Boundaries are checked on each match instead.
_TOKENS = re.compile(
    r"""sk-[A-Za-z0-9_-]{20,}                        # OpenAI sk-/sk-proj-/sk-svcacct-, Anthropic sk-ant-
      | (?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}    # Stripe secret and restricted keys
      | github_pat_[A-Za-z0-9_]{22,}                # GitHub fine-grained tokens
      | gh[pousr]_[A-Za-z0-9]{16,}                  # GitHub classic tokens, also shortened ones
      | xox[abposr]-[A-Za-z0-9-]{10,}               # Slack tokens without the numeric parts
      | xapp-[A-Za-z0-9-]{10,}                      # Slack app-level tokens
      | AIza[0-9A-Za-z_-]{35}                       # Google API keys
      | hf_[A-Za-z0-9]{30,}                         # Hugging Face tokens
      | glpat-[A-Za-z0-9_-]{20,}                    # GitLab personal tokens
      | npm_[A-Za-z0-9]{36}                         # npm access tokens
    """,
    re.VERBOSE | re.ASCII,
)
_TOKEN_TRIGGERS: tuple[str, ...] = (
    "sk-", "sk_", "rk_", "github_pat_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "xox", "xapp-", "aiza", "hf_",
    "glpat-", "npm_",
)  # fmt: skip
_BEARER = re.compile(r"(?i:bearer)\s+(?P<value>[A-Za-z0-9._~+/-]{8,}=*)", re.ASCII)
_BASIC = re.compile(r"Basic\s+(?P<value>[A-Za-z0-9+/]{6,}={0,2})(?![A-Za-z0-9+/=])", re.ASCII)
_DIGIT = re.compile(r"\d")
_KEY_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_ALNUM = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")


def _starts_word(text: str, start: int, word_chars: frozenset[str] = _ALNUM) -> bool:
    return start == 0 or text[start - 1] not in word_chars


def _token_findings(text: str, lowered: str) -> Iterator[Finding]:
    if any(trigger in lowered for trigger in _TOKEN_TRIGGERS):
        for match in _TOKENS.finditer(text):
            # Real keys are random and hold digits; "sk-learn-style-hyphenated-words" does not.
            if _starts_word(text, match.start(), _KEY_CHARS) and _DIGIT.search(match.group()):
                yield Finding("secret", match.start(), match.end())
    if "bearer" in lowered:
        for match in _BEARER.finditer(text):
            # "bearer authentication" is prose; a bearer credential is random and holds a digit.
            if _starts_word(text, match.start()) and _DIGIT.search(match.group("value")):
                yield Finding("secret", match.start("value"), match.end("value"))
    if "Basic" in text:
        for match in _BASIC.finditer(text):
            # "Basic" is a common word; the credential is base64 of "user:password".
            value = match.group("value")
            try:
                decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True).decode("utf-8")
            except (binascii.Error, UnicodeDecodeError):
                continue
            if _starts_word(text, match.start()) and ":" in decoded and decoded.isprintable():
                yield Finding("secret", match.start("value"), match.end("value"))


# --- Keyword-matched values (settings.DATASET_REDACT_PATTERNS) ------------------------------------

# Chinese words for password, passphrase, key, private key and token, always searched alongside the
# configured patterns (which the seed writes in English) and detect-secrets' KeywordDetector list.
# That plugin's own value regexes are not used: in prose there is no closing quote, and they take
# the rest of the line as the secret.
_CJK_KEYWORDS: tuple[str, ...] = ("密码", "口令", "密钥", "秘钥", "私钥", "令牌")
_EXTRA_KEYWORDS: tuple[str, ...] = ("passphrase",)

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
    r"|(?P<copula>[ \t]+(?i:is|was)[ \t]*:?[ \t]+|[ \t]*[是为為][ \t]*[:：]?[ \t]*)"  # password is x, 密码是 x
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


def _configured_patterns() -> tuple[str, ...]:
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
def _rules(patterns: tuple[str, ...]) -> _Rules:
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
    if not text[start].isascii() or start == 0 or text[start - 1] not in _KEY_CHARS:
        return start
    before = text[start - 1]
    if before not in "_-" and not ((before.islower() or before.isdigit()) and text[start].isupper()):
        return None
    begin = start - 1
    while begin > 0 and text[begin - 1] in _KEY_CHARS and start - begin < 40:
        begin -= 1
    return begin


def _keys(text: str, rules: _Rules) -> Iterator[tuple[int, int]]:
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


def _keyword_findings(text: str, rules: _Rules) -> Iterator[Finding]:
    if "-----" in text:
        for block in rules.blocks:
            for match in block.finditer(text):
                kind = "private_key" if "PRIVATE KEY" in match.group() else "secret"
                end = max(match.end(), _block_end(text, match.start() + 5, _PEM_END))
                yield Finding(kind, match.start(), end)
    for _, key_end in _keys(text, rules):
        separator = _SEPARATOR.match(text, key_end)
        if separator is None:
            continue
        span = _value_span(text, separator.end())
        if span is None:
            continue
        value = text[span[0] : span[1]]
        if separator.group("bare") is not None and not _BARE_VALUE.fullmatch(value):
            continue
        if _is_secret_value(value, copula=bool(separator.group("copula"))):
            yield Finding("secret", *span)


# --- PII ------------------------------------------------------------------------------------------

_EMAIL = re.compile(
    r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]+@(?P<domain>[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,24})"
    r"(?![A-Za-z0-9-])",
    re.ASCII,
)
_RETINA_SUFFIX = re.compile(r"\d(?:\.\d+)?x\.", re.ASCII)  # icon@2x.png is a file name

# Phones, cards and IPv4 addresses are searched only inside runs of digits and separators at least
# seven long, found by this one cheap scan: most text has none, and then nothing else runs.
_NUMBERISH = re.compile(r"[\d+(][\d ().+-]{5,}\d", re.ASCII)
_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
_IPV4 = re.compile(rf"(?<![A-Za-z0-9_.]){_OCTET}(?:\.{_OCTET}){{3}}(?![A-Za-z0-9_]|\.\d)", re.ASCII)
# "version 1.2.3.4", "Chrome/120.0.0.0" and "1.2.3.4-beta" are versions, not addresses.
_VERSION_BEFORE = re.compile(r"(?:(?<![A-Za-z])(?i:version|ver\.?|release|build)|版本号?)\s*[:：]?\s*$|[A-Za-z]/$")
_VERSION_AFTER = re.compile(r"[-+_~][A-Za-z]")
_IPV6 = re.compile(
    r"(?<![A-Za-z0-9:.])(?:[0-9A-Fa-f]{0,4}:){2,7}(?:[0-9A-Fa-f]{1,4}|\d{1,3}(?:\.\d{1,3}){3})?(?![A-Za-z0-9:])",
    re.ASCII,
)
_HEX_GROUP = re.compile(r"[0-9A-Fa-f]{1,4}")

_PHONE = re.compile(
    "|".join(
        (
            # International (E.164 with separators): +86 138 0013 8000, +1 (415) 555-2671, +44 20 7946 0958
            r"(?<![A-Za-z0-9+])\+\d{1,3}(?:[ .-]?\(\d{1,4}\))?(?:[ .-]?\d{1,5}){1,6}(?![A-Za-z0-9])",
            # Chinese mobile: 13800138000, 138-0013-8000, 138 0013 8000
            r"(?<![A-Za-z0-9])1[3-9]\d(?:\d{8}|[ -]\d{4}[ -]\d{4})(?![A-Za-z0-9])",
            # North American: (415) 555-2671, 415-555-2671, 415.555.2671 (area and exchange start 2-9)
            r"(?<![A-Za-z0-9])(?:\([2-9]\d{2}\)[ ]?|[2-9]\d{2}[-. ])[2-9]\d{2}[-. ]\d{4}(?![A-Za-z0-9])",
            # National with trunk 0: 010-12345678, 0755-1234567, 020 7946 0958, 07700 900123
            r"(?<![A-Za-z0-9])0\d{1,4}[ -]\d{3,4}[ -]?\d{3,4}(?![A-Za-z0-9])",
        )
    ),
    re.ASCII,
)
_CARD = re.compile(
    r"(?<![A-Za-z0-9+])(?:\d{4}(?:[ -]\d{4}){3}(?:[ -]?\d{3})?|\d{4}[ -]\d{6}[ -]\d{4,5}|\d{13,19})(?![A-Za-z0-9])",
    re.ASCII,
)
# "Order no. 2024011500012345", "订单号 13800138000": a labelled number is an identifier, not PII.
_NUMBER_LABEL = re.compile(
    r"(?i:order|invoice|tracking|ticket|isbn|serial|ref(?:erence)?|订单|单号|编号|运单|快递|序列号|工单|发票)"
    r"\s*(?i:no\.?|number|num|id|号码?|#)?\s*[:：#]?\s*$"
)
_NON_DIGITS = re.compile(r"\D", re.ASCII)

# Lengths from the SWIFT IBAN registry; the length check and the mod-97 checksum together make an
# accidental match in prose vanishingly rare.
_IBAN_LENGTHS: dict[str, int] = {
    entry[:2]: int(entry[2:])
    for entry in (
        "AD24 AE23 AL28 AT20 AZ28 BA20 BE16 BG22 BH22 BR29 BY28 CH21 CR22 CY28 CZ24 DE22 DK18 DO28 EE20 "
        "EG29 ES24 FI18 FO18 FR27 GB22 GE22 GI23 GL18 GR27 GT28 HR21 HU28 IE22 IL23 IQ23 IS26 IT27 JO30 "
        "KW30 KZ20 LB28 LC32 LI21 LT20 LU20 LV21 MC27 MD24 ME22 MK19 MR27 MT31 MU30 NL18 NO15 PK24 PL28 "
        "PS29 PT25 QA29 RO24 RS22 SA24 SC31 SE24 SI19 SK24 SM27 ST25 SV28 TL23 TN24 TR26 UA29 VA22 VG24 XK20"
    ).split()
}
_IBAN_START = re.compile(r"[A-Z]{2}\d{2}(?=[ ]?[A-Z0-9])", re.ASCII)
_IBAN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")


def _labelled_number(text: str, start: int) -> bool:
    return _NUMBER_LABEL.search(text, max(0, start - 30), start) is not None


def _luhn_ok(digits: str) -> bool:
    total = 0
    for index, char in enumerate(reversed(digits)):
        value = int(char)
        if index % 2:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


def _iban_ok(iban: str) -> bool:
    rearranged = iban[4:] + iban[:4]
    return int("".join(str(int(char, 36)) for char in rearranged)) % 97 == 1


def _email_findings(text: str) -> Iterator[Finding]:
    if "@" not in text:
        return
    for match in _EMAIL.finditer(text):
        if not _RETINA_SUFFIX.match(match.group("domain")):
            yield Finding("email", match.start(), match.end())


def _ipv6_findings(text: str) -> Iterator[Finding]:
    if "::" not in text and text.count(":") < 7:
        return
    for match in _IPV6.finditer(text):
        candidate = match.group()
        # Three groups at least: "x[1::2]" and "a::b" are code, not addresses.
        if len(_HEX_GROUP.findall(candidate)) < 3:
            continue
        try:
            ipaddress.IPv6Address(candidate)
        except ValueError:  # times (12:30:45), MAC addresses, C++ scopes
            continue
        yield Finding("ip", match.start(), match.end())


def _phone_span(text: str, start: int, end: int) -> tuple[int, int] | None:
    digits = _NON_DIGITS.sub("", text[start:end])
    # An international match may swallow a following number; drop trailing groups until the E.164
    # limit of 15 digits holds.
    while len(digits) > 15:
        cut = max(text.rfind(sep, start, end) for sep in " .-")
        if cut <= start:
            return None
        end = cut
        digits = _NON_DIGITS.sub("", text[start:end])
    if len(digits) < 7 or _labelled_number(text, start):
        return None
    return start, end


def _number_findings(text: str, lowered: str) -> Iterator[Finding]:
    """Phones, cards, IPv4 addresses, Chinese ids and SSNs, each searched only inside a run of digits and
    separators."""
    ssn_possible = any(trigger in lowered for trigger in _SSN_TRIGGERS)
    for run in _NUMBERISH.finditer(text):
        # One character past the run lets the patterns' trailing boundary checks see what follows.
        window = (run.start(), min(len(text), run.end() + 1))
        digits = len(_NON_DIGITS.sub("", run.group()))
        if "." in run.group():
            for match in _IPV4.finditer(text, *window):
                before = text[max(0, match.start() - 12) : match.start()]
                if not (_VERSION_BEFORE.search(before) or _VERSION_AFTER.match(text, match.end())):
                    yield Finding("ip", match.start(), match.end())
        if digits >= 13:
            for match in _CARD.finditer(text, *window):
                number = _NON_DIGITS.sub("", match.group())
                # Issuer ranges start 2-6 (Mastercard 2-series, Amex, Visa, Mastercard, Discover/UnionPay).
                if number[0] in "23456" and _luhn_ok(number) and not _labelled_number(text, match.start()):
                    yield Finding("card", match.start(), match.end())
        if digits >= 17:
            # Two past the run: its check character may be an X, and what follows the X must be seen too.
            yield from _cn_id_findings(text, run.start(), min(len(text), run.end() + 2))
        if digits >= 9 and ssn_possible:
            yield from _ssn_findings(text, *window)
        if digits >= 7:
            for match in _PHONE.finditer(text, *window):
                span = _phone_span(text, match.start(), match.end())
                if span is not None:
                    yield Finding("phone", *span)


def _iban_findings(text: str) -> Iterator[Finding]:
    for match in _IBAN_START.finditer(text):
        length = _IBAN_LENGTHS.get(match.group()[:2])
        if length is None or not _starts_word(text, match.start()):
            continue
        chars: list[str] = []
        pos = match.start()
        while pos < len(text) and len(chars) < length:
            char = text[pos]
            if char in _IBAN_CHARS:
                chars.append(char)
            elif not (char == " " and pos + 1 < len(text) and text[pos + 1] in _IBAN_CHARS):
                break
            pos += 1
        if len(chars) == length and (pos == len(text) or text[pos] not in _ALNUM) and _iban_ok("".join(chars)):
            yield Finding("iban", match.start(), pos)


# --- National id numbers -------------------------------------------------------------------------

# Chinese resident identity number (GB 11643-1999): 6-digit region, 8-digit birth date, 3-digit sequence,
# check character; people paste it whole or grouped 6-8-4.
_CN_ID = re.compile(r"(?<![A-Za-z0-9])(\d{6})[ ]?(\d{8})[ ]?(\d{3}[\dXx])(?![A-Za-z0-9])", re.ASCII)
# Province-level codes of GB/T 2260 (the first two digits), Taiwan 71, Hong Kong 81, Macau 82, and 83 of the
# residence permits issued to Taiwan residents.
_CN_PROVINCES: frozenset[str] = frozenset(
    "11 12 13 14 15 21 22 23 31 32 33 34 35 36 37 41 42 43 44 45 46 50 51 52 53 54 61 62 63 64 65 71 81 82 83".split()
)
_CN_WEIGHTS: tuple[int, ...] = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
_CN_CHECK = "10X98765432"  # ISO 7064 MOD 11-2: the check character for each remainder of the weighted sum


def cn_id_check_char(first17: str) -> str:
    """The ISO 7064 MOD 11-2 check character of the first 17 digits of a Chinese resident identity number."""
    return _CN_CHECK[sum(int(digit) * weight for digit, weight in zip(first17, _CN_WEIGHTS, strict=True)) % 11]


def _cn_birth_date_ok(digits: str) -> bool:
    year, month, day = int(digits[:4]), int(digits[4:6]), int(digits[6:])
    try:
        born = dt.date(year, month, day)
    except ValueError:
        return False
    return dt.date(1900, 1, 1) <= born <= dt.datetime.now(dt.UTC).date()


def _cn_id_ok(region: str, birth: str, tail: str) -> bool:
    number = region + birth + tail.upper()
    return region[:2] in _CN_PROVINCES and _cn_birth_date_ok(birth) and cn_id_check_char(number[:17]) == number[17]


# US social security number: area-group-serial. Nine digits are too common to take on their own (order and
# account numbers, timestamps), so a number counts only near a word that names it.
_SSN = re.compile(r"(?<![A-Za-z0-9-])(\d{3})([- ]?)(\d{2})\2(\d{4})(?![A-Za-z0-9]|-\d)", re.ASCII)
_SSN_CONTEXT = re.compile(
    r"(?i:\bssns?\b|\bss\s?#|\bsocial[\s-]+security\b|\bsoc\.?\s?sec\b|\btaxpayer\s+id)|社会安全号|社会保障号|社安号"
)
# Numbers the SSA has voided after they were printed on sample cards and used by thousands of people.
_SSN_VOIDED: frozenset[str] = frozenset({"078051120", "219099999"})


def _ssn_ok(area: str, group: str, serial: str) -> bool:
    # Never issued: area 000, 666 and 900-999 (ITINs), group 00, serial 0000.
    return (
        area not in {"000", "666"}
        and area[0] != "9"
        and group != "00"
        and serial != "0000"
        and area + group + serial not in _SSN_VOIDED
    )


def _ssn_context(text: str, start: int, end: int) -> bool:
    return _SSN_CONTEXT.search(text, max(0, start - 40), start) is not None or (
        _SSN_CONTEXT.search(text[end : end + 25]) is not None
    )


# UK National Insurance number: two prefix letters, six digits, suffix A-D (HMRC's NIM39110). The first letter
# is never D, F, I, Q, U or V, the second never D, F, I, O, Q, U or V, and BG, GB, KN, NK, NT, TN and ZZ are
# not allocated.
_UK_NINO = re.compile(
    r"(?<![A-Za-z0-9])([A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z])[ ]?(\d{2})[ ]?(\d{2})[ ]?(\d{2})[ ]?([A-D])(?![A-Za-z0-9])",
    re.ASCII,
)
_UK_NINO_UNALLOCATED: frozenset[str] = frozenset({"BG", "GB", "KN", "NK", "NT", "TN", "ZZ"})


# Substrings of _SSN_CONTEXT in lower case: without one of them in the text no number can be an SSN.
_SSN_TRIGGERS: tuple[str, ...] = ("ssn", "ss#", "ss #", "social", "soc", "taxpayer", "社会", "社安")


def _cn_id_findings(text: str, start: int, end: int) -> Iterator[Finding]:
    for match in _CN_ID.finditer(text, start, end):
        if _cn_id_ok(*match.groups()) and not _labelled_number(text, match.start()):
            yield Finding("national_id", match.start(), match.end())


def _ssn_findings(text: str, start: int, end: int) -> Iterator[Finding]:
    for match in _SSN.finditer(text, start, end):
        area, _, group, serial = match.groups()
        if _ssn_ok(area, group, serial) and _ssn_context(text, match.start(), match.end()):
            yield Finding("national_id", match.start(), match.end())


def _nino_findings(text: str) -> Iterator[Finding]:
    for match in _UK_NINO.finditer(text):
        if match.group(1) not in _UK_NINO_UNALLOCATED:
            yield Finding("national_id", match.start(), match.end())


# --- Public API -----------------------------------------------------------------------------------


def _merge(findings: Sequence[Finding]) -> list[Finding]:
    merged: list[Finding] = []
    for finding in sorted(findings, key=lambda f: (f.start, -f.end)):
        if finding.start >= finding.end:
            continue
        if merged and finding.start < merged[-1].end:
            last = merged[-1]
            kind = min(last.kind, finding.kind, key=_SEVERITY.__getitem__)
            merged[-1] = Finding(kind, last.start, max(last.end, finding.end))
        else:
            merged.append(finding)
    return merged


def detect(text: str) -> list[Finding]:
    """Every PII and secret span in ``text``: non-overlapping, sorted by start."""
    if not text:
        return []
    lowered = text.lower()
    findings: list[Finding] = [
        *_plugin_findings(text, lowered),
        *_token_findings(text, lowered),
        *_keyword_findings(text, _rules(_configured_patterns())),
        *_email_findings(text),
        *_ipv6_findings(text),
    ]
    if _DIGIT.search(text):
        findings += [*_number_findings(text, lowered), *_iban_findings(text), *_nino_findings(text)]
    return _merge(findings)


def contains_secret(text: str) -> bool:
    """True if ``text`` holds a key, token, password, private key or national id number: the write guardian
    refuses these."""
    return any(finding.kind in SECRET_KINDS for finding in detect(text))


def contains_pii(text: str) -> bool:
    """True if ``text`` holds anything ``redact`` would replace, PII or secret."""
    return bool(detect(text))


def redact(text: str) -> str:
    """``text`` with each finding replaced by its placeholder, e.g. ``password: [SECRET]``."""
    findings = detect(text)
    if not findings:
        return text
    parts: list[str] = []
    position = 0
    for finding in findings:
        parts += [text[position : finding.start], finding.placeholder]
        position = finding.end
    parts.append(text[position:])
    return "".join(parts)


def is_redacted(text: str) -> bool:
    """True if ``text`` holds one of ``redact``'s placeholders: it was redacted, its value is gone."""
    return any(placeholder in text for placeholder in _PLACEHOLDERS.values())


def _is_secret_key(key: object) -> bool:
    if not isinstance(key, str):
        return False
    return any(start == 0 and end == len(key) for start, end in _keys(key, _rules(_configured_patterns())))


def redact_data(value: object) -> object:
    """Redact every string in a JSON-like structure; other values are returned unchanged.

    Keys are kept (they are the structure's field names), but a scalar under a secret-sounding key
    (``{"password": "hunter2"}``, ``{"api_key": 12345}``) is replaced whole: without its key in
    front, the value alone would not look like a secret.
    """
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {
            key: _PLACEHOLDERS["secret"]
            if _is_secret_key(key) and isinstance(item, str | int | float) and not isinstance(item, bool) and item != ""
            else redact_data(item)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [redact_data(item) for item in value]
    if isinstance(value, tuple):
        return tuple(redact_data(item) for item in value)
    return value


class RedactingFilter(logging.Filter):
    """Redact each log record so that no key, token or secret reaches a log line; never drops one.

    The message is formatted first and redacted whole, because ``"%s=%s" % ("password", "hunter2")``
    only shows its secret after formatting. A record with nothing to hide keeps its template and args
    (error trackers group by the template). Tracebacks and stack info are redacted too.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except (TypeError, ValueError, KeyError):
            # Mismatched args: logging reports the error when formatting; hide what we can meanwhile.
            record.msg = redact_data(record.msg)
            record.args = redact_data(record.args)  # type: ignore[assignment]
        else:
            redacted = redact(message)
            if redacted != message:
                record.msg = redacted
                record.args = ()
        if record.exc_info and not record.exc_text:
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
        elif record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True
