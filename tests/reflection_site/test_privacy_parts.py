"""reflection_site.privacy by part: the shared span tests and merge, each layer's detector on its own (the whole
is measured in test_privacy.py)."""

from __future__ import annotations

from collections.abc import Iterable

from reflection_site.privacy import is_redacted, redact
from reflection_site.privacy.findings import Finding, labelled_number, merge, starts_word
from reflection_site.privacy.keywords import (
    DEFAULT_REDACT_PATTERNS,
    compiled_rules,
    configured_patterns,
    key_spans,
    keyword_findings,
)
from reflection_site.privacy.national_ids import cn_id_findings, nino_findings, ssn_findings
from reflection_site.privacy.pii import email_findings, iban_findings, ipv6_findings, number_findings
from reflection_site.privacy.secret_formats import PEM_END, block_end, plugin_findings, token_findings


def kinds(findings: Iterable[Finding], text: str) -> list[tuple[str, str]]:
    return [(finding.kind, text[finding.start : finding.end]) for finding in findings]


def test_starts_word_and_labelled_number() -> None:
    assert starts_word("a key", 2) and not starts_word("akey", 1)
    assert labelled_number("Order no. 2024011500012345", 10)
    assert not labelled_number("call 13800138000", 5)


def test_merge_keeps_the_most_sensitive_kind_of_overlapping_findings() -> None:
    found = [Finding("phone", 5, 15), Finding("secret", 0, 10), Finding("email", 20, 20), Finding("ip", 30, 40)]
    assert merge(found) == [Finding("secret", 0, 15), Finding("ip", 30, 40)]


def test_block_end_runs_to_the_end_of_a_cut_off_block() -> None:
    text = "-----BEGIN KEY-----\nabc\n-----END KEY----- after"
    assert text[: block_end(text, 5, PEM_END)].endswith("-----END KEY-----")
    assert block_end("-----BEGIN KEY-----\nabc", 5, PEM_END) == len("-----BEGIN KEY-----\nabc")


def test_secret_formats_find_plugin_and_own_tokens() -> None:
    text = "key AKIAIOSFODNN7EXAMPLE and sk-proj-abcdefghij0123456789xyz"
    assert ("secret", "AKIAIOSFODNN7EXAMPLE") in kinds(plugin_findings(text, text.lower()), text)
    assert kinds(token_findings(text, text.lower()), text) == [("secret", "sk-proj-abcdefghij0123456789xyz")]


def test_keywords_find_values_after_secret_sounding_keys(settings) -> None:
    assert configured_patterns() == tuple(settings.DATASET_REDACT_PATTERNS)
    rules = compiled_rules(DEFAULT_REDACT_PATTERNS)
    text = "db_password: hunter2, token_count: 12"
    assert [text[start:end] for start, end in key_spans(text, rules)] == ["db_password"]
    assert kinds(keyword_findings(text, rules), text) == [("secret", "hunter2")]


def test_pii_detectors_each_find_their_kind() -> None:
    text = "ada@example.com icon@2x.png 2001:db8::1 +44 20 7946 0958 GB82 WEST 1234 5698 7654 32"
    assert kinds(email_findings(text), text) == [("email", "ada@example.com")]
    assert kinds(ipv6_findings(text), text) == [("ip", "2001:db8::1")]
    assert ("phone", "+44 20 7946 0958") in kinds(number_findings(text, text.lower()), text)
    assert kinds(iban_findings(text), text) == [("iban", "GB82 WEST 1234 5698 7654 32")]


def test_national_id_detectors_each_find_their_kind() -> None:
    text = "身份证 11010519491231002X, SSN 123-45-6789, NI QQ123456C AB123456C"
    assert kinds(cn_id_findings(text, 0, len(text)), text) == [("national_id", "11010519491231002X")]
    assert kinds(ssn_findings(text, 0, len(text)), text) == [("national_id", "123-45-6789")]
    assert kinds(nino_findings(text), text) == [("national_id", "AB123456C")]


def test_is_redacted_sees_a_placeholder_and_nothing_else() -> None:
    assert is_redacted(redact("password: hunter2"))
    assert not is_redacted("the password rules say [brackets] are fine")
