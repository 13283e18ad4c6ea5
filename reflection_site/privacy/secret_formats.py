"""Secrets with a published shape: Yelp's detect-secrets plugins (each run only when one of its cheap literal
triggers occurs) and the key formats they miss or match too strictly."""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterator
from dataclasses import dataclass

from detect_secrets.plugins.aws import AWSKeyDetector
from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
from detect_secrets.plugins.base import BasePlugin
from detect_secrets.plugins.basic_auth import BasicAuthDetector
from detect_secrets.plugins.discord import DiscordBotTokenDetector
from detect_secrets.plugins.github_token import GitHubTokenDetector
from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
from detect_secrets.plugins.jwt import JwtTokenDetector
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

from reflection_site.privacy.findings import DIGIT, KEY_CHARS, Finding, starts_word

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
PEM_END = re.compile(r"-----END[^\n]*?-----")
_PUTTY_END = re.compile(r"Private-MAC:[^\n]*")


def _occurrences(text: str, value: str) -> Iterator[int]:
    start = text.find(value)
    while start != -1:
        yield start
        start = text.find(value, start + len(value))


def block_end(text: str, start: int, end_marker: re.Pattern[str]) -> int:
    """Where a key block that starts at ``start`` ends: after ``end_marker``, or at the end of the text."""
    # A block cut off before its END line is redacted to the end of the text: nothing tells where
    # its key material stops.
    match = end_marker.search(text, start)
    return match.end() if match else len(text)


def plugin_findings(text: str, lowered: str) -> Iterator[Finding]:
    """What detect-secrets' plugins find in ``text`` (``lowered`` is ``text.lower()``, for the triggers)."""
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
                        end = block_end(text, end, _PUTTY_END)
                    else:
                        if text.startswith("-----", start - 5):
                            start -= 5
                        end = block_end(text, end, PEM_END)
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


def token_findings(text: str, lowered: str) -> Iterator[Finding]:
    """API keys and tokens by our own patterns, and ``Bearer`` and ``Basic`` credentials."""
    if any(trigger in lowered for trigger in _TOKEN_TRIGGERS):
        for match in _TOKENS.finditer(text):
            # Real keys are random and hold digits; "sk-learn-style-hyphenated-words" does not.
            if starts_word(text, match.start(), KEY_CHARS) and DIGIT.search(match.group()):
                yield Finding("secret", match.start(), match.end())
    if "bearer" in lowered:
        for match in _BEARER.finditer(text):
            # "bearer authentication" is prose; a bearer credential is random and holds a digit.
            if starts_word(text, match.start()) and DIGIT.search(match.group("value")):
                yield Finding("secret", match.start("value"), match.end("value"))
    if "Basic" in text:
        for match in _BASIC.finditer(text):
            # "Basic" is a common word; the credential is base64 of "user:password".
            value = match.group("value")
            try:
                decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True).decode("utf-8")
            except (binascii.Error, UnicodeDecodeError):
                continue
            if starts_word(text, match.start()) and ":" in decoded and decoded.isprintable():
                yield Finding("secret", match.start("value"), match.end("value"))
