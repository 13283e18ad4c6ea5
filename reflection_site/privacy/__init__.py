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

The layers live in this package, a module each: ``secret_formats`` (1 and the key formats of 2), ``keywords``
(the keyword-matched values of 2), ``pii`` and ``national_ids`` (3), with ``findings`` under them all.
"""

from __future__ import annotations

import logging

from reflection_site.privacy.findings import DIGIT, PII_KINDS, PLACEHOLDERS, SECRET_KINDS, Finding, merge
from reflection_site.privacy.keywords import (
    DEFAULT_REDACT_PATTERNS,
    compiled_rules,
    configured_patterns,
    key_spans,
    keyword_findings,
)
from reflection_site.privacy.national_ids import cn_id_check_char, nino_findings
from reflection_site.privacy.pii import email_findings, iban_findings, ipv6_findings, number_findings
from reflection_site.privacy.secret_formats import plugin_findings, token_findings

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
    "cn_id_check_char",
    "is_redacted",
]


def detect(text: str) -> list[Finding]:
    """Every PII and secret span in ``text``: non-overlapping, sorted by start."""
    if not text:
        return []
    lowered = text.lower()
    findings: list[Finding] = [
        *plugin_findings(text, lowered),
        *token_findings(text, lowered),
        *keyword_findings(text, compiled_rules(configured_patterns())),
        *email_findings(text),
        *ipv6_findings(text),
    ]
    if DIGIT.search(text):
        findings += [*number_findings(text, lowered), *iban_findings(text), *nino_findings(text)]
    return merge(findings)


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
    return any(placeholder in text for placeholder in PLACEHOLDERS.values())


def _is_secret_key(key: object) -> bool:
    if not isinstance(key, str):
        return False
    return any(start == 0 and end == len(key) for start, end in key_spans(key, compiled_rules(configured_patterns())))


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
            key: PLACEHOLDERS["secret"]
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
