"""PII and secret detection: a labelled corpus in English and Chinese, its precision and recall, and the API.

Every credential below is fake. Provider-prefixed ones are assembled from two literals so that secret
scanners (GitHub push protection, detect-secrets hooks) do not flag this file.

Decisions the corpus pins down:
- A dotted quad is an IP address unless a version context says otherwise ("version 1.2.3.4",
  "Chrome/120.0.0.0", "1.2.3.4-beta"); three-part versions (1.2.3) never look like addresses.
- Git SHAs, UUIDs and hashes are not secrets: they are everywhere in an agent's memory and carry no
  credential. Only prefixed key formats, keyword-labelled values and PEM blocks count.
- A number labelled as an order, invoice or tracking number is an identifier, not a phone or card.
- A keyword needs a separator and a value: "my password policy is strict" and "the token of
  appreciation" are prose; "password: hunter2", "api_key=abc123", 'token "xyz"' are secrets.
"""

from __future__ import annotations

import ast
import base64
import datetime as dt
import json
import logging
import random
import sys
from pathlib import Path
from typing import Any

import pytest

from reflection_site import privacy
from reflection_site.privacy import (
    PII_KINDS,
    SECRET_KINDS,
    Finding,
    RedactingFilter,
    contains_pii,
    contains_secret,
    detect,
    redact,
    redact_data,
)
from reflection_site.privacy.national_ids import CN_PROVINCES


def _b64(data: dict[str, str]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()


JWT = (
    _b64({"alg": "HS256", "typ": "JWT"})
    + "."
    + _b64({"sub": "1234567890", "name": "Jane Doe"})
    + ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
OPENAI_PROJECT_KEY = "sk-" + "proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1w"
OPENAI_LEGACY_KEY = "sk-" + "abcdefghij1234567890T3BlbkFJabcdefghij1234567890"
ANTHROPIC_KEY = "sk-" + "ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Jh1"
AWS_ACCESS_KEY = "AKIA" + "IOSFODNN7EXAMPLE"
AWS_SECRET_KEY = "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYEXAMPLEKEY"
GITHUB_CLASSIC = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
GITHUB_FINE_GRAINED = "github_pat_" + "11AAAAAAA0abcdefghijkl_MNOPQRSTUVWXYZ0123456789abcdef"
SLACK_BOT = "xoxb-" + "1234567890-0987654321-AbCdEfGhIjKlMnOpQrStUvWx"
SLACK_USER_SHORT = "xoxp-" + "a1b2c3d4e5f6g7h8"
SLACK_WEBHOOK = "https://hooks.slack.com/services/" + "T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX"
STRIPE_LIVE = "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc"
GITLAB_TOKEN = "glpat-" + "Ab1Cd2Ef3Gh4Ij5Kl6Mn"
HUGGING_FACE = "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz123456"
GOOGLE_KEY = "AIza" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q"
BEARER_VALUE = "9f8e7d6c5b4a39281706abcdef"
# Chinese resident identity numbers with valid check characters (Beijing's Chaoyang district, born 1980-01-01;
# one whose check character is X; one of Shenzhen grouped 6-8-4, as people type it).
CN_ID = "110105198001010016"
CN_ID_X = "11010519491231002X"
CN_ID_GROUPED = "440308 19900307 2377"
RSA_KEY = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEpAIBAAKCAQEA7bq98f3XQ0rDn5a1oZyh2Vx0Wq\n"
    "q0nJ1bOq3ZtHl8s9dA==\n"
    "-----END RSA PRIVATE KEY-----"
)
OPENSSH_KEY = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n-----END OPENSSH PRIVATE KEY-----"
)
PGP_KEY = (
    "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBGXrandomKeyMaterial0123\n=AbCd\n-----END PGP PRIVATE KEY BLOCK-----"
)


def case(text: str, *kinds: str, hidden: tuple[str, ...] = (), known: str = "") -> Any:
    """A corpus entry: the kinds ``detect`` must report and the values ``redact`` must remove.

    ``known`` names a documented limitation: the entry stays in the corpus (and in the precision and
    recall figures) but its own test is an expected failure.
    """
    marks = [pytest.mark.xfail(strict=True, reason=known)] if known else []
    return pytest.param(text, frozenset(kinds), hidden, marks=marks, id=text[:48])


CORPUS = [
    # --- Secrets, English ---------------------------------------------------------------------
    case("password: hunter2", "secret", hidden=("hunter2",)),
    case("api_key=abc123", "secret", hidden=("abc123",)),
    case('token "xyz"', "secret", hidden=("xyz",)),
    case("My password is Tr0ub4dor&3, please remember it.", "secret", hidden=("Tr0ub4dor&3",)),
    case(f"export OPENAI_API_KEY={OPENAI_PROJECT_KEY}", "secret", hidden=(OPENAI_PROJECT_KEY,)),
    case(f"My OpenAI key is {OPENAI_LEGACY_KEY}", "secret", hidden=(OPENAI_LEGACY_KEY,)),
    case(f"Use {ANTHROPIC_KEY} for the Claude calls", "secret", hidden=(ANTHROPIC_KEY,)),
    case(f"AWS key {AWS_ACCESS_KEY} is in the config", "secret", hidden=(AWS_ACCESS_KEY,)),
    case(f'aws_secret_access_key = "{AWS_SECRET_KEY}"', "secret", hidden=(AWS_SECRET_KEY,)),
    case(f"push with {GITHUB_CLASSIC}", "secret", hidden=(GITHUB_CLASSIC,)),
    case(f"GH_TOKEN={GITHUB_FINE_GRAINED}", "secret", hidden=(GITHUB_FINE_GRAINED,)),
    case(f"slack bot token {SLACK_BOT}", "secret", hidden=(SLACK_BOT,)),
    case(f"my slack user token is {SLACK_USER_SHORT}", "secret", hidden=(SLACK_USER_SHORT,)),
    case(f"Post alerts to {SLACK_WEBHOOK}", "secret", hidden=("XXXXXXXXXXXXXXXXXXXXXXXX",)),
    case(f"Authorization: Bearer {BEARER_VALUE}", "secret", hidden=(BEARER_VALUE,)),
    case(f"session cookie {JWT}", "jwt", hidden=(JWT.split(".")[2],)),
    case(
        f"Here is my key:\n{OPENSSH_KEY}\nthanks", "private_key", hidden=("b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ",)
    ),
    case(f"{PGP_KEY}", "private_key", hidden=("lQOYBGXrandomKeyMaterial0123",)),
    case('{"db_password": "s3cr3t-Pa55", "host": "db.internal"}', "secret", hidden=("s3cr3t-Pa55",)),
    case("client_secret='9a8b7c6d5e4f'", "secret", hidden=("9a8b7c6d5e4f",)),
    case("mysql://admin:Sup3rS3cret@db.example.com:3306/app", "secret", hidden=("Sup3rS3cret",)),
    case(f"stripe key {STRIPE_LIVE}", "secret", hidden=(STRIPE_LIVE,)),
    case("SECRET_KEY = 'django-insecure-abc123xyz'", "secret", hidden=("django-insecure-abc123xyz",)),
    case("Authorization: Basic dXNlcjpwYXNzd29yZA==", "secret", hidden=("dXNlcjpwYXNzd29yZA==",)),
    case(f"gitlab {GITLAB_TOKEN}", "secret", hidden=(GITLAB_TOKEN,)),
    case(f"HF_TOKEN={HUGGING_FACE}", "secret", hidden=(HUGGING_FACE,)),
    case(f"maps key {GOOGLE_KEY}", "secret", hidden=(GOOGLE_KEY,)),
    case('passphrase: "correct horse battery staple"', "secret", hidden=("correct horse battery staple",)),
    case("the admin pwd=Qwerty!234", "secret", hidden=("Qwerty!234",)),
    case("X-Api-Key: 0123456789abcdef", "secret", hidden=("0123456789abcdef",)),
    case("accessToken: abcd1234efgh", "secret", hidden=("abcd1234efgh",)),
    # --- Secrets, Chinese ---------------------------------------------------------------------
    # A key said in prose: two words, or with a qualifier before its "is" (issue 21's blind set v4 wrote both).
    case("My password for the company system is K5h8kGZPGxZtbK!", "secret", hidden=("K5h8kGZPGxZtbK!",)),
    case("My API key is sk_uYHBQd3MJ9xrwww4fnbSEyRrZbfS", "secret", hidden=("sk_uYHBQd3MJ9xrwww4fnbSEyRrZbfS",)),
    case("the access key for staging was AKxx77-19zz", "secret", hidden=("AKxx77-19zz",)),
    case("The password for the wifi is on the fridge"),
    case("The token for the meeting is ready"),
    case("The API key rotation is monthly."),
    case("我的密码是hunter2，别告诉别人", "secret", hidden=("hunter2",)),
    case("数据库密码：Passw0rd!2024", "secret", hidden=("Passw0rd!2024",)),
    case("WiFi密码是 12345678", "secret", hidden=("12345678",)),
    case(f"服务器的 API key 是 {OPENAI_PROJECT_KEY}", "secret", hidden=(OPENAI_PROJECT_KEY,)),
    case(f"令牌：{JWT}", "jwt", hidden=(JWT,)),
    case(f"请用这个私钥登录：\n{RSA_KEY}", "private_key", hidden=("MIIEpAIBAAKCAQEA7bq98f3XQ0rDn5a1oZyh2Vx0Wq",)),
    case("口令为 Zx#8812a", "secret", hidden=("Zx#8812a",)),
    case(f"把 token 设置成 {GITHUB_CLASSIC} 就行", "secret", hidden=(GITHUB_CLASSIC,)),
    case(f"访问密钥 {AWS_ACCESS_KEY} 已经泄露", "secret", hidden=(AWS_ACCESS_KEY,)),
    case(f"GitHub 令牌：{GITHUB_FINE_GRAINED}", "secret", hidden=(GITHUB_FINE_GRAINED,)),
    case("api-key: 'k3y-Value-99'，记得保密", "secret", hidden=("k3y-Value-99",)),
    # --- PII, English -------------------------------------------------------------------------
    case("Email me at jane.doe@example.com tomorrow", "email", hidden=("jane.doe@example.com",)),
    case("Contact: bob+news@mail.co.uk", "email", hidden=("bob+news@mail.co.uk",)),
    case("Call me on +1 (415) 555-2671", "phone", hidden=("555-2671",)),
    case("My number is 415-555-2671", "phone", hidden=("415-555-2671",)),
    case("Ring the London office on +44 20 7946 0958", "phone", hidden=("7946 0958",)),
    case("UK mobile 07700 900123", "phone", hidden=("07700 900123",)),
    case("Card: 4111 1111 1111 1111, exp 12/26", "card", hidden=("4111 1111 1111 1111",)),
    case("Pay with 5500-0000-0000-0004", "card", hidden=("5500-0000-0000-0004",)),
    case("Amex 3782 822463 10005", "card", hidden=("3782 822463 10005",)),
    case("Unformatted Visa 4012888888881881", "card", hidden=("4012888888881881",)),
    case("The server is at 192.168.1.20", "ip", hidden=("192.168.1.20",)),
    case("ssh root@203.0.113.7", "ip", hidden=("203.0.113.7",)),
    case("IPv6 address 2001:db8:85a3::8a2e:370:7334", "ip", hidden=("2001:db8:85a3::8a2e:370:7334",)),
    case("link-local fe80::1ff:fe23:4567:890a%eth0", "ip", hidden=("fe80::1ff:fe23:4567:890a",)),
    case("IBAN DE89 3704 0044 0532 0130 00", "iban", hidden=("DE89 3704 0044 0532 0130 00",)),
    case("Transfer to GB82WEST12345698765432 today", "iban", hidden=("GB82WEST12345698765432",)),
    case("FR14 2004 1010 0505 0001 3M02 606", "iban", hidden=("3M02",)),
    case("Mail alice@example.org or call 212-555-0187", "email", "phone", hidden=("alice@", "555-0187")),
    case("password: hunter2 and email me at a@b.io", "secret", "email", hidden=("hunter2", "a@b.io")),
    # --- PII, Chinese -------------------------------------------------------------------------
    case("我的手机号是13800138000", "phone", hidden=("13800138000",)),
    case("请拨打 138-0013-8000 联系我", "phone", hidden=("138-0013-8000",)),
    case("办公室电话 010-62345678", "phone", hidden=("62345678",)),
    case("邮箱：zhangsan@example.cn", "email", hidden=("zhangsan@example.cn",)),
    case("他的银行卡号是 6222 0212 3456 7890 128", "card", hidden=("6222 0212 3456 7890 128",)),
    case("服务器IP是10.0.0.5，端口8080", "ip", hidden=("10.0.0.5",)),
    case("+86 139 1234 5678 是我的微信号", "phone", hidden=("1234 5678",)),
    case("请把钱转到 NL91ABNA0417164300", "iban", hidden=("NL91ABNA0417164300",)),
    # --- National id numbers ------------------------------------------------------------------
    case(f"我的身份证号是{CN_ID}，别外传", "national_id", hidden=(CN_ID,)),
    case(f"身份证：{CN_ID_GROUPED}", "national_id", hidden=(CN_ID_GROUPED,)),
    case(f"his resident ID {CN_ID_X.lower()} is on file", "national_id", hidden=(CN_ID_X.lower(),)),
    case("My SSN is 536-22-1048, keep it safe", "national_id", hidden=("536-22-1048",)),
    case("social security number: 536 22 1048", "national_id", hidden=("536 22 1048",)),
    case("NI number AB 12 34 56 C for the payroll form", "national_id", hidden=("AB 12 34 56 C",)),
    case("Her national insurance no. is JG103759A", "national_id", hidden=("JG103759A",)),
    case(f"Invoice 20240115000123456X sent to {CN_ID}", "national_id", hidden=(CN_ID,)),
    case("Order #536-22-1048 has shipped"),
    case("Ticket 123-45-6789 reopened"),
    case("The SSN field takes nine digits, e.g. 000-12-3456"),
    case("Example prefix QQ 12 34 56 C is HMRC's own placeholder"),
    case("Part number AB123456E is out of stock"),
    case("订单号 202401150001234567 已发货"),
    case("Batch 20240115123045123456 finished at 1700000000123"),
    # --- Not PII, not secrets: English --------------------------------------------------------
    case("Upgrade to version 1.2.3.4-beta next week"),
    case("We shipped 2.0.1 and 1.2.3 yesterday"),
    case("version 10.0.0.1 of the firmware is out"),
    case("The meeting is on 2024-01-15 at 10:30"),
    case("Order #123-456-7890 has shipped"),
    case("Order no. 4111111111111111 was refunded"),
    case("Card-like but fails Luhn: 4111 1111 1111 1112"),
    case("Reference 4111111111111112"),
    case("Thanks for the token of appreciation!"),
    case("My password policy is strict: 12 characters minimum"),
    case("The secret to good pasta is salt"),
    case("I forgot my password again, can you remind me how to reset it?"),
    case("The token limit is 4096 tokens"),
    case("max_tokens=512, temperature=0.7"),
    case('"usage": {"prompt_tokens": 12, "completion_tokens": 30, "total_tokens": 42}'),
    case("Request id 123e4567-e89b-12d3-a456-426614174000 failed"),
    case("Fixed in commit 9fceb02d0ae598e95dc970b74767f19372d61af8"),
    case("sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
    case("Use Chrome/120.0.0.0 or later"),
    case("Python 3.11.4 and Django 5.2 are required"),
    case("Pi is roughly 3.14159265358979"),
    case("Send it to @jane_doe on Twitter"),
    case("icon@2x.png and logo@3x.png"),
    case("Run pip install requests==2.31.0"),
    case("Meet at 12:30:45 UTC+08:00"),
    case("std::vector<int> and a::b in C++"),
    case("The API key rotation policy is every 90 days"),
    case("password_policy: strict"),
    case("token_count: 1500"),
    case("password=${DB_PASSWORD}"),
    case('password: "[SECRET]"'),
    case("Bearer authentication is described in RFC 6750"),
    case("Population 1,380,000,000 people"),
    case("ISBN 978-3-16-148410-0"),
    case("Invoice 2024-0001-5567 paid"),
    case("The sk-learn-compatible estimator works"),
    case("Our MAC is 00:1A:2B:3C:4D:5E"),
    case("Call back in 5 minutes, room 1203"),
    case("The secretary: Jane Smith"),
    # --- Not PII, not secrets: Chinese --------------------------------------------------------
    case("我忘记密码了，怎么重置？"),
    case("密码策略要求至少12位"),
    case("今天是2024年1月15日，版本号 1.2.3.4"),
    case("订单号：13800138000"),
    case("这个令牌的有效期是30天"),
    case("我们用了3.8.10版本的Python"),
    case("请在下午3:30开会"),
    case("快递单号 SF1234567890123"),
    case("发布于 2023.12.01，共 1,024 次下载"),
    case("他说密码是什么来着？"),
    case("Token 是一种加密资产"),
    # --- Documented limitations (counted in the metrics, expected to fail individually) --------
    case("my password is correcthorse", "secret", known="a copula value without digits or symbols reads as prose"),
    case("write to jane at example dot com", "email", known="spelled-out addresses are not parsed"),
    case("call me at 555-0199", "phone", known="seven-digit local numbers without an area code are not phones"),
    case("clone git@github.com:org/repo.git", known="a git remote has the shape of an e-mail address"),
]

# Measured on this corpus (138 entries): overall precision 79/80 = 0.988, recall 79/82 = 0.963; secrets
# (national ids included) precision 1.0, recall 51/52 = 0.981 (the one miss is the documented copula
# limitation). A change that lowers one of these is a regression.
MIN_PRECISION = 0.98
MIN_RECALL = 0.95
MIN_SECRET_PRECISION = 1.0
MIN_SECRET_RECALL = 0.97


def _params() -> list[tuple[str, frozenset[str], tuple[str, ...]]]:
    return [tuple(param.values) for param in CORPUS]  # type: ignore[misc]


def _detected_kinds(text: str) -> frozenset[str]:
    return frozenset(finding.kind for finding in detect(text))


@pytest.mark.parametrize(("text", "kinds", "hidden"), CORPUS)
def test_corpus_entry_is_classified(text: str, kinds: frozenset[str], hidden: tuple[str, ...]) -> None:
    assert _detected_kinds(text) == kinds


@pytest.mark.parametrize(("text", "kinds", "hidden"), [p for p in CORPUS if p.values[2]])
def test_redaction_removes_every_sensitive_value(text: str, kinds: frozenset[str], hidden: tuple[str, ...]) -> None:
    redacted = redact(text)
    for value in hidden:
        assert value not in redacted
    for kind in kinds:
        assert Finding(kind, 0, 0).placeholder in redacted


def test_corpus_is_large_and_bilingual() -> None:
    texts = [text for text, _, _ in _params()]
    assert len(texts) >= 80
    assert sum(any("\u4e00" <= char <= "\u9fff" for char in text) for text in texts) >= 20
    labelled = {kind for _, kinds, _ in _params() for kind in kinds}
    assert labelled == PII_KINDS | SECRET_KINDS


def _scores(kinds_of_interest: frozenset[str]) -> tuple[float, float]:
    true_pos = false_pos = false_neg = 0
    for text, expected, _ in _params():
        found = _detected_kinds(text)
        for kind in kinds_of_interest:
            true_pos += kind in found and kind in expected
            false_pos += kind in found and kind not in expected
            false_neg += kind in expected and kind not in found
    return true_pos / (true_pos + false_pos), true_pos / (true_pos + false_neg)


def test_precision_and_recall_stay_at_the_measured_level() -> None:
    precision, recall = _scores(PII_KINDS | SECRET_KINDS)
    assert precision >= MIN_PRECISION, precision
    assert recall >= MIN_RECALL, recall
    secret_precision, secret_recall = _scores(SECRET_KINDS)
    assert secret_precision >= MIN_SECRET_PRECISION, secret_precision
    assert secret_recall >= MIN_SECRET_RECALL, secret_recall


def test_no_secret_in_the_corpus_is_missed_or_invented() -> None:
    # The known copula limitation is the one secret the rules let through; everything else is caught.
    texts = [(t, k) for t, k, _ in _params() if t != "my password is correcthorse"]
    for text, expected in texts:
        assert contains_secret(text) == bool(expected & SECRET_KINDS), text


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("password: hunter2", "secret"),
        ("api_key=abc123", "secret"),
        ('token "xyz"', "secret"),
        ("secret: s3cr3t-v4lue", "secret"),
        (f"key {OPENAI_PROJECT_KEY}", "secret"),
        (f"key {OPENAI_LEGACY_KEY}", "secret"),
        (f"key {AWS_ACCESS_KEY}", "secret"),
        (f"key {GITHUB_CLASSIC}", "secret"),
        (f"key {GITHUB_FINE_GRAINED}", "secret"),
        (f"key {SLACK_BOT}", "secret"),
        (f"Authorization: Bearer {BEARER_VALUE}", "secret"),
        (f"cookie {JWT}", "jwt"),
        (RSA_KEY, "private_key"),
        ("-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----", "secret"),
        ("a@example.com", "email"),
        ("+86 138 0013 8000", "phone"),
        ("13800138000", "phone"),
        ("4111111111111111", "card"),
        ("8.8.8.8", "ip"),
        ("2001:db8::1:0:1", "ip"),
        ("DE89370400440532013000", "iban"),
    ],
)
def test_each_listed_kind_and_key_format_is_caught(text: str, kind: str) -> None:
    findings = detect(f"note: {text} end")
    assert [finding.kind for finding in findings] == [kind]
    assert contains_pii(text)
    assert contains_secret(text) == (kind in SECRET_KINDS)


def test_a_sixteen_digit_number_failing_luhn_is_not_a_card() -> None:
    assert detect("4111111111111112") == []
    assert detect("4111111111111111") == [Finding("card", 0, 16)]


def test_detect_reports_sorted_non_overlapping_spans() -> None:
    text = f"mail a@b.io, key {GITHUB_CLASSIC}, ip 10.1.2.3, phone 13800138000, password: x9y8z7"
    findings = detect(text)
    assert [f.kind for f in findings] == ["email", "secret", "ip", "phone", "secret"]
    assert all(a.end <= b.start for a, b in zip(findings, findings[1:], strict=False))
    assert text[findings[-1].start : findings[-1].end] == "x9y8z7"


def test_overlapping_findings_merge_into_the_most_sensitive_kind() -> None:
    text = "postgres://app:Pa55word@db.example.com/prod"
    assert redact(text) == "postgres://app:[SECRET]/prod"
    assert contains_secret(text)


def test_redact_replaces_each_span_with_its_typed_placeholder() -> None:
    text = (
        f"Hi, I'm Jane (jane@example.com, +44 20 7946 0958). Card 4111 1111 1111 1111, IBAN GB82WEST12345698765432, "
        f"server 192.168.0.1, api_key={STRIPE_LIVE}, jwt {JWT}.\n{RSA_KEY}\nbye"
    )
    assert redact(text) == (
        "Hi, I'm Jane ([EMAIL], [PHONE]). Card [CARD], IBAN [IBAN], server [IP], api_key=[SECRET], jwt [JWT].\n"
        "[PRIVATE_KEY]\nbye"
    )


def test_redact_keeps_the_text_around_a_keyword_value() -> None:
    assert redact("password: hunter2, then lunch") == "password: [SECRET], then lunch"
    assert redact('{"token": "abc.def-123", "n": 1}') == '{"token": "[SECRET]", "n": 1}'
    assert redact("我的密码是hunter2谢谢") == "我的密码是[SECRET]谢谢"


def test_redact_is_idempotent_and_leaves_clean_text_alone() -> None:
    text = f"password: hunter2, mail a@b.io, key {GITHUB_CLASSIC}"
    once = redact(text)
    assert redact(once) == once
    clean = "We shipped 1.2.3 on 2024-01-15; thanks for the token of appreciation."
    assert redact(clean) is clean


def test_a_truncated_private_key_is_redacted_to_the_end() -> None:
    assert redact("oops -----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC") == "oops [PRIVATE_KEY]"


def test_redact_data_recurses_through_json_like_values() -> None:
    data = {
        "user": "jane@example.com",
        "turns": [{"text": "call 13800138000"}, ("tuple", "10.0.0.1")],
        "password": "hunter2",
        "api_key": 123456,
        "prompt_tokens": 12,
        "token_count": 5,
        "nested": {"client_secret": "", "enabled": True, "score": 0.7, "none": None},
    }
    assert redact_data(data) == {
        "user": "[EMAIL]",
        "turns": [{"text": "call [PHONE]"}, ("tuple", "[IP]")],
        "password": "[SECRET]",
        "api_key": "[SECRET]",
        "prompt_tokens": 12,
        "token_count": 5,
        "nested": {"client_secret": "", "enabled": True, "score": 0.7, "none": None},
    }
    assert data["password"] == "hunter2"  # the input is not modified
    assert redact_data(42) == 42
    assert redact_data(None) is None


def _record(msg: str, args: Any) -> logging.LogRecord:
    return logging.LogRecord("reflection", logging.INFO, __file__, 1, msg, args, None)


def test_redacting_filter_redacts_messages_and_args() -> None:
    log_filter = RedactingFilter()
    record = _record("calling %s with key %s for %s", ("llm", OPENAI_PROJECT_KEY, "jane@example.com"))
    assert log_filter.filter(record) is True
    assert record.getMessage() == "calling llm with key [SECRET] for [EMAIL]"

    # The secret only appears once the message is formatted.
    record = _record("%s=%s", ("password", "hunter2"))
    assert log_filter.filter(record) is True
    assert record.getMessage() == "password=[SECRET]"

    record = _record("user %(user)s", ({"user": "a@b.io"},))
    log_filter.filter(record)
    assert record.getMessage() == "user [EMAIL]"


def test_redacting_filter_keeps_clean_records_untouched() -> None:
    record = _record("gate decided %s in %d ms", ("NO_WRITE", 12))
    assert RedactingFilter().filter(record) is True
    assert (record.msg, record.args) == ("gate decided %s in %d ms", ("NO_WRITE", 12))


def test_redacting_filter_redacts_tracebacks() -> None:
    logger = logging.getLogger("reflection.test_privacy")
    handler = logging.StreamHandler()
    handler.addFilter(RedactingFilter())
    try:
        raise ValueError(f"bad key {GITHUB_CLASSIC}")
    except ValueError:
        record = logger.makeRecord(logger.name, logging.ERROR, __file__, 1, "failed", (), sys.exc_info())
    handler.filter(record)
    formatted = logging.Formatter().format(record)
    assert GITHUB_CLASSIC not in formatted
    assert "bad key [SECRET]" in formatted


def test_redact_patterns_come_from_settings(settings: Any) -> None:
    assert not contains_secret("combo: 4821")
    settings.DATASET_REDACT_PATTERNS = [*privacy.DEFAULT_REDACT_PATTERNS, "combo"]
    assert redact("combo: 4821") == "combo: [SECRET]"
    settings.DATASET_REDACT_PATTERNS = ["-----BEGIN.*-----"]
    # Keyword patterns removed: only detect-secrets' own keyword list and the built-in formats remain.
    assert not contains_secret('token "xyz"')
    assert contains_secret("password: hunter2")


def test_finding_placeholders() -> None:
    assert {kind: Finding(kind, 0, 1).placeholder for kind in PII_KINDS | SECRET_KINDS} == {
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


def test_privacy_imports_no_app() -> None:
    # reflection_site is the bottom layer: the apps import it, never the other way round.
    modules = sorted(Path(privacy.__file__).parent.glob("*.py"))
    assert {"findings", "secret_formats", "keywords", "pii", "national_ids"} <= {path.stem for path in modules}
    imported = {
        name
        for path in modules
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Import | ast.ImportFrom)
        for name in ([alias.name for alias in node.names] if isinstance(node, ast.Import) else [node.module or ""])
    }
    assert not {name for name in imported if name.split(".")[0].endswith("_app")}


# --- National id numbers: true and false positives --------------------------------------------------------
def _with_check_char(first17: str) -> str:
    return first17 + privacy.cn_id_check_char(first17)


def _random_cn_ids(count: int, seed: int) -> list[str]:
    """Valid-looking Chinese resident identity numbers: a real province, a real birth date, the right check char."""
    rng = random.Random(seed)
    provinces = sorted(CN_PROVINCES)
    numbers = []
    for _ in range(count):
        born = dt.date(1930, 1, 1) + dt.timedelta(days=rng.randrange(365 * 90))
        first17 = f"{rng.choice(provinces)}{rng.randrange(100):02d}{rng.randrange(100):02d}{born:%Y%m%d}{rng.randrange(1000):03d}"
        numbers.append(_with_check_char(first17))
    return numbers


def test_the_check_character_is_iso_7064_mod_11_2() -> None:
    # The worked example of GB 11643-1999 and a published number whose check character is X.
    assert privacy.cn_id_check_char("11010519491231002") == "X"
    assert privacy.cn_id_check_char("44052418800101001") == "4"
    for number in _random_cn_ids(200, seed=7):
        # The defining property of ISO 7064 MOD 11-2: the weighted sum including the check value is 1 mod 11.
        check = 10 if number[17] == "X" else int(number[17])
        total = sum(int(d) * (2 ** (17 - i) % 11) for i, d in enumerate(number[:17])) + check
        assert total % 11 == 1, number


@pytest.mark.parametrize("number", _random_cn_ids(300, seed=18))
def test_every_valid_chinese_resident_id_is_found_and_redacted(number: str) -> None:
    for text in (number, f"身份证号{number}。", f"ID: {number[:6]} {number[6:14]} {number[14:]} on file"):
        assert [f.kind for f in detect(text)] == ["national_id"], text
        assert number[6:14] not in redact(text)
        assert contains_secret(text)


def test_random_eighteen_digit_numbers_with_a_wrong_check_character_are_not_ids() -> None:
    rng = random.Random(1118)
    wrong = 0
    for number in _random_cn_ids(2000, seed=1118):
        bad = number[:17] + rng.choice([c for c in "0123456789X" if c != number[17]])
        wrong += 1
        assert detect(bad) == [] or [f.kind for f in detect(bad)] == ["card"], bad
        assert not any(f.kind == "national_id" for f in detect(f"ref {bad} ok"))
    assert wrong == 2000


def test_random_eighteen_digit_numbers_are_almost_never_ids() -> None:
    # Uniformly random digits pass the province, the date and the check only by chance: under 1 in 1,000.
    rng = random.Random(20261125)
    numbers = ["".join(rng.choice("0123456789") for _ in range(18)) for _ in range(20_000)]
    found = sum(any(f.kind == "national_id" for f in detect(n)) for n in numbers)
    assert found < 20, found


@pytest.mark.parametrize(
    "text",
    [
        "订单号 202401150001234567 已发货",  # an order number: no province 20
        "order 110105198013450016 shipped",  # month 13
        "id 110105203001010018",  # born in the future
        "timestamp 20241125083015123456",  # 2024… is no province
        "epoch ms 1732523415123 and ns 1732523415123456789",
        "+86 138 0013 8000",
        "13800138000",
        "call 010-62345678 or 0755-12345678",
        "tracking number 110105198001010016",  # a labelled number is an identifier
        "1101051980010100161",  # nineteen digits
        "a110105198001010016",  # inside a word
        "110105198001010016a",
        "0x110105198001010016",
    ],
)
def test_numbers_that_are_not_chinese_ids(text: str) -> None:
    assert not any(f.kind == "national_id" for f in detect(text)), text


@pytest.mark.parametrize(
    "text",
    [
        "SSN 536-22-1048",
        "ssn: 536221048",
        "my social security number is 536 22 1048",
        "Social-Security #: 536-22-1048",
        "536-22-1048 (SSN)",
        "他的社会安全号是536-22-1048",
    ],
)
def test_us_social_security_numbers_beside_their_name_are_found(text: str) -> None:
    findings = detect(text)
    assert [f.kind for f in findings] == ["national_id"]
    assert "1048" not in redact(text) and "[NATIONAL_ID]" in redact(text)


@pytest.mark.parametrize(
    "text",
    [
        "536-22-1048",  # no word names it: could be anything
        "call 536-22-1048 tomorrow",
        "SSN 000-12-3456",  # area 000 is never issued
        "SSN 666-12-3456",  # nor 666
        "SSN 912-34-5678",  # nor 900-999 (ITINs)
        "SSN 536-00-1048",  # group 00
        "SSN 536-22-0000",  # serial 0000
        "SSN 078-05-1120",  # the Woolworth wallet card, voided
        "SSN 536-22-10489",  # ten digits
        "SSN 536-221048",  # mixed separators
        "SSN field 2024-11-25",  # a date
        "the SSN form asks for 415-555-2671",  # a phone, not 3-2-4
        "Ticket 123-45-6789 reopened",
    ],
)
def test_numbers_that_are_not_social_security_numbers(text: str) -> None:
    assert not any(f.kind == "national_id" for f in detect(text)), text


@pytest.mark.parametrize("text", ["AB123456C", "AB 12 34 56 C", "NI: JG 10 37 59 A", "nino=CE123456D", "TW999999B"])
def test_uk_national_insurance_numbers_are_found(text: str) -> None:
    assert [f.kind for f in detect(text)] == ["national_id"], text


@pytest.mark.parametrize(
    "text",
    [
        "QQ123456C",  # HMRC's example prefix: Q is never a first letter
        "DA123456A",  # D never first
        "AO123456A",  # O never second
        "GB123456A",  # unallocated prefix
        "ZZ123456A",
        "AB123456E",  # suffix beyond D
        "AB12345C",  # five digits
        "XAB123456C",  # inside a word
        "ab123456c",  # not upper case
        "flight BA123456",
    ],
)
def test_codes_that_are_not_national_insurance_numbers(text: str) -> None:
    assert not any(f.kind == "national_id" for f in detect(text)), text


def test_a_national_id_beside_other_pii_keeps_both_findings() -> None:
    text = f"Zhang, {CN_ID_X}, zhang@example.cn, SSN 536-22-1048"
    assert [f.kind for f in detect(text)] == ["national_id", "email", "national_id"]
    assert redact(text) == "Zhang, [NATIONAL_ID], [EMAIL], SSN [NATIONAL_ID]"


def test_national_ids_run_together_with_other_numbers_are_still_found() -> None:
    # One run of digits and separators holds both numbers: each is found on its own.
    assert [f.kind for f in detect("SSN 536-22-1048 415-555-2671")] == ["national_id", "phone"]
    assert [f.kind for f in detect(f"身份证 {CN_ID} 13800138000")] == ["national_id", "phone"]
    assert detect(f"{CN_ID_X}a") == [] and [f.kind for f in detect(CN_ID_X)] == ["national_id"]


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        # A key, a code or a PIN named in prose, with a value shaped like a credential.
        ("The shared VPN key for the design drive is GDBr2dF9sP5usG6QJT8d, keep it private.", "GDBr2dF9sP5usG6QJT8d"),
        ("The door code is 4471.", "4471"),
        ("My PIN is 0451.", "0451"),
        ("The alarm code changed to 88213 last week.", "88213"),
        # A new value said with "changed to", "now", 改成.
        ("The Wi-Fi password is now Blue-Kite-77.", "Blue-Kite-77"),
        ("楼下门禁的密码改成 723910 了。", "723910"),
    ],
)
def test_a_key_code_or_pin_in_prose_is_a_secret(text: str, secret: str) -> None:
    assert redact(text) == text.replace(secret, "[SECRET]")


@pytest.mark.parametrize(
    "text",
    [
        "The key to success is patience.",
        "The key is under the mat.",
        "key: the legend of the map",
        "The key: 2024 plan",
        "The pin is in the drawer.",
        "The zip code is 10001.",
        "I pinned it.",
    ],
)
def test_a_key_code_or_pin_without_a_credential_is_not_a_secret(text: str) -> None:
    assert not contains_secret(text)


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        # v17: a secret named in one place and its value given in another sentence or after a clause.
        ("Could you hold on to the code for the pharmacy safe? It's Qm7vTz2Lp. I never remember it.", "Qm7vTz2Lp"),
        (
            "The token for the billing webhook, so the invoices keep flowing: whk_9aZ4kP0qLmT7xV2b",
            "whk_9aZ4kP0qLmT7xV2b",
        ),
        # No secret named, or nothing shaped like one.
        ("I use the code formatter Black and my laptop is a ThinkPad X1Carbon.", None),
        ("The code review for 123e4567-e89b-12d3-a456-426614174000 is done; the token limit is 4096.", None),
        ("The code for the gate is on the fridge.", None),
        # v20: a login named after its value, a value of letters only that changes case again and again.
        ("Can you hold this for me: RVviRQwbwBa. It's my login for the clinic's X-ray software.", "RVviRQwbwBa"),
        ("My login for the clinic is on the PlayStation sticker.", None),
        ("The code for the WhatsApp group is in the pinned message.", None),
    ],
)
def test_a_secret_named_apart_from_its_value(text: str, secret: str | None):
    assert contains_secret(text) is (secret is not None)
    if secret is not None:
        assert secret not in redact(text)


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        # A lock and the numbers that open it (v23): a secret; a place that opens, or a lock opened with a key, not.
        ("The garage key safe opens with 4-19-82, don't tell the kids.", True),
        ("My locker at the pool opens with 7311.", True),
        ("The bakery opens with two staff on Sundays.", False),
        ("The safe opens with a key I keep in the drawer.", False),
    ],
)
def test_a_lock_and_the_numbers_that_open_it_are_a_secret(text: str, secret: bool) -> None:
    assert contains_secret(text) is secret
