"""Memory-poisoning detection: which candidate facts are held for a person instead of being written.

A memory file is read back into the agent's prompt in every later conversation, so a "fact" that is
really an instruction runs again and again (OWASP LLM01 prompt injection; MINJA and AgentPoison show the
same attack through an agent's long-term memory). ``hold_reason(text)`` names the class of instruction a
text carries, or returns None. The classes describe what the text would make the agent do, not the verb
that introduces it ("remember that …", "note: …", "the user wants …", "记住…" all pass through):

* ``override``: to ignore or replace its instructions, take a new role, drop its limits, or reveal them;
* ``third_party``: to act towards other people ("whenever someone asks about X, send them to …",
  "tell everyone …", "如果有人问…");
* ``target``: a link, domain, e-mail, account, card, wallet or phone number to share, send or pay to;
* ``exfiltration``: to send conversations, files or customer data somewhere, or to put a token, link or
  code into every reply;
* ``command``: a shell command or code to run (downloads piped to a shell, ``eval``/``exec``,
  ``os.system``, reverse shells, destructive commands), or "execute the following";
* ``security``: a change to security or configuration (turn off 2FA, the firewall or certificate checks,
  grant admin, set DEBUG=True, change a password, write to a config file or a path outside the files);
* ``markup``: HTML tags, event handlers, ``javascript:`` and ``data:`` URLs, Markdown images (which
  fetch a URL when shown);
* ``syntax``: chat-role, tool-call or reply-format syntax aimed at the model;
* ``action``: a destructive or financial action for the agent (delete files, transfer money, invite).

What stays writable is a fact about the user: their own website ("My blog is ada.dev"), their own build
command ("I deploy with `make release`"), a snippet described in words, a security habit ("I use 2FA"),
a rule for the agent's own manner ("always answer in English"). Measured in QUALITY.md on a corpus
drawn from published attack sets with a held-out third (``tests/fixtures/poisoning/hold_corpus.jsonl``).
Limits, stated frankly: these are patterns, so a new attack phrased in none of the classes' words passes;
the LLM guardian's prompt states the same classes.
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
_ROT13 = str.maketrans(
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


# --- Shared pieces -------------------------------------------------------------------------------
_TLD = (
    r"com|net|org|io|dev|ai|app|biz|info|xyz|co|me|ru|cn|top|site|online|shop|link|click|live|pro|tk|ml|ga|cf|"
    r"gq|zip|mov|to|ly|gl|cc|us|uk|de|fr|es|it|nl|eu|ch|se|no|pl|br|in|jp|kr|tv|gg|sh|so|ws|su|win|bid|loan|"
    r"work|money|support|help|security|email|cloud|tech|store|page|blog|network|systems|services|example|test|"
    r"invalid|local|internal|lan|corp|onion"
)
URL = r"(?:https?|ftp)://\S+|www\.\S+"
DOMAIN = rf"\b(?:[a-z0-9](?:[a-z0-9-]{{0,61}}[a-z0-9])?\.)+(?:{_TLD})\b(?:/\S*)?"
EMAIL = r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b"
IBAN = r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?\b"
CARD = r"\b(?:\d{4}[ -]?){3}\d{1,4}\b"
PHONE = r"(?:\+\d{1,3}[ .-]?)?(?:\(\d{2,4}\)[ .-]?)?\d{3,4}[ .-]\d{3,4}(?:[ .-]\d{2,4})?\b"
WALLET = r"\b(?:0x[a-fA-F0-9]{40}|bc1[a-z0-9]{20,60}|[13][a-km-zA-HJ-NP-Z1-9]{25,34})\b"
ACCOUNT = r"\b(?:account|acct|iban|routing|sort code|swift|bic|wallet|paypal|venmo|zelle|cashapp|账户|账号|卡号)\b[^.\n]{0,20}?[\w@$-]*\d[\w-]{4,}"
HANDLE = r"(?<![\w.])@[a-z0-9_]{3,}\b"
TARGET = "|".join(f"(?:{p})" for p in (URL, EMAIL, IBAN, CARD, WALLET, ACCOUNT, DOMAIN, PHONE, HANDLE))
TARGET_RE = re.compile(TARGET, _I)

# Third parties: people other than the user and the agent.
_OTHERS = (
    r"someone|anyone|anybody|somebody|everyone|everybody|people|other people|others|other users|users|"
    r"customers?|visitors?|clients?|callers?|readers?|guests?|strangers|colleagues|coworkers|co-workers|"
    r"friends|contacts|members|followers|subscribers|students|patients|employees|staff|recipients|"
    r"a user|any user|other user|each user|every user|new users|a customer|any customer|the public|"
    r"whoever|they|them|him|her|recruiters?|managers?|reviewers?|investors?|journalists?|reporters?|auditors?|"
    r"vendors?|partners?|buyers?|sellers?|tenants?|landlords?|parents?|kids|children|agents?|bots?|"
    r"(?:a|an|any|every|each|some|another|other)\s+(?!user\b)[a-z-]+"
)
_ASK = (
    r"ask|asks|asked|asking|mention|mentions|mentioned|want|wants|need|needs|inquire|inquires|enquire|"
    r"enquires|request|requests|message|messages|write|writes|contact|contacts|search|searches|look|looks|"
    r"talk|talks|bring|brings|question|questions|query|queries|come|comes|visit|visits|call|calls|chat|"
    r"chats|say|says|type|types|wonder|wonders|is looking|are looking|requires?"
)
_STEER = (
    r"send|direct|refer|redirect|point|tell|recommend|suggest|forward|share|give|reply|respond|answer|"
    r"say|link|mention|email|e-mail|show|provide|advise|offer|route|ask them|invite|guide|push|promote|"
    r"insist|convince|warn|charge|bill|pay|transfer|quote|make sure"
)
_SHARE = (
    r"share|shares|sharing|send|sends|sending|forward|forwards|forwarding|pay|pays|paying|transfer|transfers|"
    r"transferring|wire|wires|wiring|deposit|deposits|donate|donates|tip|remit|visit|visits|click|clicks|"
    r"open|go to|goes to|redirect|redirects|direct|directs|refer|refers|point|points|recommend|recommends|"
    r"promote|promotes|advertise|include|includes|including|insert|inserts|embed|embeds|append|appends|"
    r"post|posts|upload|uploads|sign up|register|log in|login|enter|submit|download|install|contact|email|"
    r"e-mail|mail|call|text|message|dm|subscribe|invest|route|routes|cc|bcc|leak|publish|fetch|load|"
    r"request|ping|notify|report|give out|hand out|provide|mention|tell|link|use the link|buy|purchase|order"
)
# Where a verb is an instruction rather than a description of the user's own life.
_DIRECTIVE_LEAD = (
    r"(?:^|[.;:!?,(\"'`]\s*|\s[\-–—]+\s*|\b(?:always|should|must|shall|need to|needs to|have to|has to|make sure to|"
    r"make sure you|be sure to|remember to|don't forget to|do not forget to|please|kindly|will|would|to|and|then|"
    r"also|just|immediately|instead|only|ensure you|ensure to|is to|are to|agent|assistant|you|it|"
    r"should always|must always|will always)\s+)(?:(?:first|then|also|immediately|always|just|quietly|silently|"
    r"automatically|now|please)\s+)?"
)
_SENTENCE = r"[^.!?。！？\n]"


def _rx(pattern: str, flags: int = _I) -> re.Pattern[str]:
    return re.compile(pattern, flags)


# --- The classes ---------------------------------------------------------------------------------
# Each class is a list of patterns; the first class with a pattern that matches names the reason.
_CLASSES: tuple[tuple[str, str, tuple[re.Pattern[str], ...]], ...] = (
    (
        "syntax",
        "chat-role, tool-call or reply-format syntax aimed at the model",
        (
            _rx(
                r"^\s*(?:system|assistant|developer|user)\s*:|(?:^|[:;.!?>]\s*)(?:system|assistant|developer)\s*:|"
                r"<\|?(?:im_start|im_end|system|assistant|endoftext|user)\|?>|\[/?INST\]|<</?SYS>>|"
                r"#{2,}\s*(?:instructions?|system|end of (?:user )?input|new instructions?)\b|"
                r"</?(?:system|assistant|user|instructions?)>|<end of session>|\bend of (?:user )?input\b",
                _I | re.M,
            ),
            _rx(
                r"\"(?:tool_calls?|function_call)\"\s*:|<(?:tool_call|function_call|invoke)\b|<function=|"
                r"\{\s*\"name\"\s*:\s*\"[^\"]+\"\s*,\s*\"(?:arguments|parameters)\"\s*:|"
                r"\"(?:action|edits|decision|candidate_fact)\"\s*:\s*[\[\"{]"
            ),
            _rx(
                r"\b(?:call|calls|calling|invoke|invokes|trigger|triggers|use the|run the)\s+(?:the\s+)?`?[a-z]+_[a-z_]+`?(?:\(|\s+(?:tool|function|on|with|for|to)\b)"
            ),
        ),
    ),
    (
        "override",
        "an instruction to ignore or replace the agent's instructions, or to reveal them",
        (
            _rx(
                r"\b(?:ignor|disregard|forget|overrid|bypass|skip|drop|abandon|discard|neglect|set aside)(?:e|es|ed|ing|s)?\b"
                r"[^.\n]{0,50}\b(?:previous|prior|above|earlier|preceding|original|all|any|your|the|system|its|their|"
                r"own|safety|every|initial|old|existing|developer|these|those|other)\b[^.\n]{0,40}"
                r"\b(?:instructions?|prompts?|rules|guidelines|directives|directions|policies|policy|constraints|"
                r"restrictions|programming|guardrails|training|context|commands|orders|system message|messages above)\b"
            ),
            _rx(
                r"\b(?:ignore|disregard|forget)\s+(?:everything|anything|all|what)\b[^.\n]{0,30}\b(?:above|before|"
                r"previously|earlier|told|said|you were told|you know)\b|\bignore (?:the|all) (?:above|previous|rest)\b|"
                r"\bignore (?:the rest of|any other|all other)\b"
            ),
            _rx(
                r"\b(?:new|updated|real|true|actual|revised|secret) (?:system )?(?:instructions?|rules|directives?|orders|task)\s*(?:[:：]|are|is|supersedes?|overrides?|replaces?)|"
                r"\b(?:supersedes?|overrides?|replaces?|cancels?|voids?)\s+(?:all\s+)?(?:the\s+)?(?:prior|previous|earlier|other|existing|original)\b|"
                r"\b(?:dump|print|reveal|leak|export|output)\b[^.\n]{0,20}\b(?:internal|hidden|secret|system|full)\s+(?:configuration|config|settings|state|memory|instructions)\b|"
                r"\byou are now\b|\byou're now\b|\bfrom now on,? (?:you|the agent|the assistant|it|your)\b|"
                r"\bstay in character\b|\bin character as\b|\bdo anything now\b|\bDAN\b|"
                r"\b(?:developer|dan|god|admin|debug|jailbreak|unrestricted|unfiltered|evil|chaos|sudo|maintenance) mode\b|"
                r"\bjailbr[eo]a?k|\b(?:unrestricted|unfiltered|uncensored|unbound|unshackled|unlimited|amoral) "
                r"(?:ai|assistant|agent|mode|model|version|persona|chatbot|bot|llm)\b|"
                r"\b(?:no|without|free of|free from|zero)\s+(?:any\s+)?(?:safety\s+|content\s+|ethical\s+|moral\s+)?(?:restrictions|limits|limitations|filters|"
                r"filtering|censorship|safety rules|safety guidelines|rules|guidelines|boundaries|constraints|"
                r"ethical guidelines|moral|ethics|content policy)\b|"
                r"\b(?:pretend|act|behave|roleplay|role-play)\b[^.\n]{0,30}\b(?:as if|like|as)\b[^.\n]{0,40}\b(?:no|without|not bound|free from|unrestricted|evil|jailbroken)\b|"
                r"\bnot bound by\b|\b(?:does|do|will) not (?:have to )?(?:follow|obey|comply with) (?:any|the|its|openai|the usual)\b|"
                r"\b(?:comply|obey) (?:with )?(?:every|all|any) (?:request|command|order|instruction)s?\b|"
                r"\b(?:must|will|should) (?:always )?(?:obey|comply with) (?:me|the user|whoever|anyone|every)\b|"
                r"\b(?:safety|content) (?:rules|guidelines|policies|filters|policy) (?:do not|don't|no longer) apply\b|"
                r"\b(?:user|i am|i'm|he is|she is|they are) (?:is )?(?:an? |the )?(?:admin|administrator|root|superuser|developer of this)\b[^.\n]{0,40}\b(?:grant|allow|all requests|full access|every request|comply)\b"
            ),
            _rx(
                r"\bsystem prompt\b|\bhidden (?:instructions?|prompt|rules|message)\b|\binitial (?:prompt|instructions)\b|"
                r"\bdeveloper message\b|\bpre-?prompt\b|\bsystem message\b|\bcontext window\b|"
                r"\b(?:repeat|print|output|show|recite|reveal)\b[^.\n]{0,20}\b(?:the )?(?:words|text|everything|all|lines)\s+(?:above|before this|so far)\b|"
                r"\b(?:safety|security|content|ethical)\s+(?:protocols?|filters?|rules|guidelines|checks|measures|policies|restrictions)\s+"
                r"(?:are |is |have been |were )?(?:disabled|off|removed|suspended|lifted|bypassed|deactivated|turned off)\b|"
                r"\bexempt (?:from )?(?:the )?(?:usual |normal |all )?(?:restrictions|rules|guidelines|policies|filters)\b|"
                r"\b(?:just|only|simply)\s+(?:print|say|output|repeat|reply with|respond with|answer with|write)\s*[\"'“«]|"
                r"\brestricted (?:content|response|output|information)\b|\breveal confidential\b|"
                r"\b(?:reveal|print|show|output|dump|leak|repeat|disclose|display|recite|tell me|give me|list|expose)\b"
                r"[^.\n]{0,30}\b(?:your|the|its|all|any)\b[^.\n]{0,20}\b(?:instructions|prompt|rules|configuration|"
                r"guidelines|system message|secrets?|api keys?|passwords?|credentials|tokens?|private keys?|"
                r"environment variables|env vars)\b"
            ),
            _rx(
                r"\b(?:decode|decrypt|deobfuscate|translate|convert|read)\b[^.\n]{0,60}\b(?:base64|base32|hex|rot13|"
                r"encoded|cipher|binary|morse)\b[^.\n]{0,60}\b(?:do|follow|execute|obey|run|perform|carry out|act on)\b|"
                r"\b(?:do|follow|execute|obey|perform|carry out)\b[^.\n]{0,20}\b(?:exactly )?what (?:it|the decoded|this) says\b"
            ),
        ),
    ),
    (
        "third_party",
        "an instruction about how the agent treats other people",
        (
            _rx(
                rf"\b(?:when|whenever|if|each time|every time|any ?time|once|should|in case|as soon as|after)\b"
                rf"{_SENTENCE}{{0,40}}?\b(?:{_OTHERS})\b{_SENTENCE}{{0,30}}?\b(?:{_ASK})\b{_SENTENCE}{{0,80}}?"
                rf"\b(?:{_STEER}|should|must|always|never|only|instead|just)\b"
            ),
            _rx(
                rf"\b(?:{_STEER})\b\s+(?:all|every|each|any|other)?\s*(?:{_OTHERS})\b{_SENTENCE}{{0,40}}?\b(?:to|that|about|towards?|at)\b"
                rf"(?<!\bto)(?!\s+(?:me|the user)\b)"
            ),
            _rx(
                r"\b(?:send|direct|refer|redirect|point|forward|route|guide|push)\b\s+(?:all|every|each|any)\s+"
                r"(?:\w+\s+){0,2}(?:inquiries|enquiries|questions|requests|tickets|emails|messages|leads|payments|orders|"
                r"customers|users|people|traffic|visitors|support requests)\b"
            ),
            _rx(
                rf"\b(?:tell|inform|assure|convince|persuade|warn|advise|remind)\s+(?:all|every|each|any)?\s*(?:{_OTHERS})\b"
            ),
        ),
    ),
    (
        "exfiltration",
        "an instruction to send data somewhere or to put a token, link or code into replies",
        (
            _rx(
                r"\b(?:send|forward|email|e-mail|mail|post|upload|copy|share|leak|export|sync|transmit|exfiltrate|"
                r"publish|concatenate|collect|gather|cc|bcc)\b[^.\n]{0,60}\b(?:all|every|the|full|entire|complete|whole|"
                r"my|user'?s?|customer|private|your)\b[^.\n]{0,30}\b(?:messages|conversations?|chats?|chat history|"
                r"history|emails|e-mails|files|documents|data|database|list|contacts|information|info|details|"
                r"records|transcripts?|logs|memory|memories|notes|credentials|passwords|keys|codes?|tokens?|"
                r"secrets|passport|ssn|bank details|card details|calendar|inbox)\b"
            ),
            _rx(
                r"\b(?:include|append|add|insert|embed|put|attach|end|start|begin|prefix|suffix|sign|close|finish|tag)"
                r"(?:s|ed|ing)?\b[^.\n]{0,60}\b(?:every|each|all|any|your|the end of|future|later)\b[^.\n]{0,20}\b(?:reply|replies|"
                r"response|responses|answer|answers|summary|summaries|message|messages|output|outputs|review|reviews|"
                r"email|emails|post|posts|report|reports|result|results)\b(?=[^\n]*(?:\b(?:token|code|link|url|"
                r"id|canary|tracking|pixel|image|reference|ad|ads|advert|promo|coupon|referral|affiliate|sponsor|"
                r"sponsored|watermark|string|phrase|hash|key)\b|" + TARGET + r"|\{[a-z_]+\}))"
            ),
            _rx(
                r"\b(?:include|append|add|insert|embed|output|print|repeat|say|mention)\b[^.\n]{0,40}\b(?:the )?"
                r"(?:exact |following |verification |tracking |secret )?(?:token|canary|code|string|phrase|trace_id|id)\b"
                r"\s*(?:\{[a-z_]+\}|[\"'`«].{1,80}?[\"'`»]|[A-Z0-9][A-Z0-9_-]{5,})"
            ),
            _rx(r"\{canary\}|\bcanary\b"),
            _rx(
                rf"\b(?:agent'?s?|assistant'?s?|your|its|the bot'?s?)\s+(?:email\s+)?(?:signature|footer|sign-off|bio)\b[^\n]{{0,80}}(?:{TARGET})|"
                rf"\b(?:all|every|each|any)\s+(?:outgoing\s+|future\s+)?(?:emails?|messages?|replies|responses|posts|answers)\b"
                rf"[^\n]{{0,40}}\b(?:include|includes|contain|contains|with|end with|ends with|carry|carries|link to|links to)\b[^\n]{{0,40}}(?:{TARGET})"
            ),
        ),
    ),
    (
        "target",
        "a link, address, account or number to share, send or pay to",
        (
            _rx(
                rf"{_DIRECTIVE_LEAD}(?:{_SHARE})\b[^\n]{{0,80}}?(?:{TARGET})|"
                rf"(?:{TARGET}){_SENTENCE}{{0,80}}?\b(?:should|must|always|to)\s+(?:be\s+)?(?:{_SHARE}|shared|sent|"
                rf"forwarded|paid|transferred|wired|recommended|promoted|linked|given|used|mentioned|included|visited|"
                rf"deposited|donated|contacted|emailed|called)\b"
            ),
            _rx(
                rf"\b(?:end|ends|ending|start|starts|finish|finishes|begin|begins|close|closes|sign off|reply|replies|"
                rf"respond|responds|answer|answers)\s+(?:it\s+|them\s+|each one\s+|every \w+\s+)?with\b[^\n]{{0,60}}(?:{TARGET})"
            ),
            _rx(
                rf"\b(?:payments?|donations?|transfers?|invoices?|refunds?|deposits?|fees?|money|funds|tips?|salary|"
                rf"wages|btc|bitcoin|crypto|usdt|eth|ethereum|wire|rent|dues|subscriptions?|withdrawals?)\b"
                rf"{_SENTENCE}{{0,40}}?\b(?:to|into|at|via|through|on|goes to|go to|should go|must go|is|are|address)\b"
                rf"{_SENTENCE}{{0,40}}?(?:{IBAN}|{CARD}|{WALLET}|{ACCOUNT}|{EMAIL}|{URL}|{DOMAIN}|{PHONE})"
            ),
            _rx(
                rf"\b(?:official|new|correct|real|updated|only|verified|legit|legitimate|secure)\s+(?:support|help|"
                rf"login|payment|billing|download|refund|claim|customer service|contact|site|website|page|portal|"
                rf"address|link|url|number|account|email)\b{_SENTENCE}{{0,40}}?(?:{TARGET})"
            ),
        ),
    ),
    (
        "command",
        "a shell command or code to run",
        (
            _rx(
                r"\b(?:curl|wget|iwr|invoke-webrequest|fetch)\b[^\n]{0,200}?\|\s*(?:sudo\s+)?(?:ba|z|da|k)?sh\b|"
                r"\brm\s+-(?:rf|fr|r)\b|\brm\s+-\w*\s+/|\bmkfs\b|\bdd\s+if=|:\(\)\s*\{\s*:\|:&\s*\};:|"
                r"\bchmod\s+(?:-R\s+)?(?:\+x|777|a\+rwx|u\+s)\b|\bchown\s+-R\b|\bsudo\s+\w|"
                r"\b(?:nc|ncat|netcat)\b[^\n]{0,40}\s-[ec]\b|/dev/tcp/|\bbash\s+-i\b|\bsh\s+-i\b|\bmkfifo\b|"
                r"\bpowershell\b|\bpwsh\b|\biex\b|\binvoke-expression\b|\bcertutil\b|\bbitsadmin\b|\bregsvr32\b|"
                r"\bbase64\s+(?:-d|--decode)\b|\bxp_cmdshell\b|;\s*drop\s+table\b|'\s*or\s+'?1'?\s*=\s*'?1|"
                r"\bunion\s+select\b|\$\(\s*\w[^)]*\)|\$\{jndi:|\btouch\s+/tmp/|>\s*/etc/|\bcrontab\b|"
                r"\bkill\s+-9\b|\bshutdown\s+-[hr]\b|\bhistory\s+-c\b|\bscp\s+\S+\s+\S+@|\bssh\s+\S+@\S+\s+['\"]"
            ),
            _rx(
                r"\b(?:eval|exec|execfile|compile|system|popen|spawn|execsync|execve|shell_exec|passthru|"
                r"proc_open|runtime\.getruntime|kernel\.exec|os\.system|os\.popen|subprocess\.\w+|child_process|"
                r"__import__|importlib\.import_module|pickle\.loads|marshal\.loads|new function|settimeout|setinterval)\s*\(|"
                r"\bimport\s+(?:os|subprocess|socket|requests|urllib|pty|ctypes|shutil)\b|\brequire\(\s*['\"]child_process|"
                r"@\{\[\s*system\b|`(?:whoami|id|uname)\b[^`]*`|`(?:ls|cat|rm|nc)\s[^`]*\s/[^`]*`|"
                r"\brequests?\.(?:get|post|put)\s*\(|\bdocument\.cookie\b|\bxmlhttprequest\b|\bwindow\.location\b|"
                r"\blocalstorage\b|\bnavigator\.sendbeacon\b|\bopen\([^)]*['\"]w['\"]"
            ),
            _rx(
                r"\b(?:run|execute|exec|eval|evaluate|paste|type|enter|launch)\b[^.\n]{0,30}\b(?:the following|this|these|"
                r"that|below|attached|provided|next)\b[^.\n]{0,20}\b(?:code|command|commands|script|snippet|payload|"
                r"shell|one-liner|program|binary|macro)\b|"
                r"\b(?:run|execute)\b[^.\n]{0,60}\b(?:on (?:startup|start-up|boot|login|every|each)|at the start of every|"
                r"before (?:every|each) (?:reply|response|answer|conversation|session|message)|"
                r"whenever (?:you|the agent|the assistant|it) (?:start|starts|reply|replies|respond|responds|answer))\b|"
                r"\b(?:download|install)\b[^.\n]{0,40}\b(?:and|then)\s+(?:run|execute|open|launch)\b"
            ),
        ),
    ),
    (
        "security",
        "a change to security or configuration",
        (
            _rx(
                r"(?<!never )(?<!not )(?<!n't )(?<!no )\b(?:disable|disables|disabled|disabling|turn off|turns off|turning off|"
                r"switch off|switches off|deactivate|deactivates|remove|removes|bypass|bypasses|skip|skips|ignore|"
                r"ignores|weaken|weakens|lower|lowers|relax|relaxes|loosen|loosens|circumvent|suppress|stop|stops|"
                r"kill|uninstall|bypassing|skipping|ignoring|get rid of|opt out of|turned off|switched off|removed)\b"
                r"[^.\n]{0,40}\b(?:2fa|mfa|two-factor|two factor|2-step|two-step|multi-factor|authentication|auth|"
                r"authorization|firewall|antivirus|anti-virus|virus scan\w*|defender|ssl|tls|https|certificate|"
                r"certificates|cert|certs|verification|verify|csrf|cors|sandbox|sandboxing|safety|safe ?search|"
                r"content filters?|filters?|filtering|guardrails?|moderation|logging|audit|auditing|security|"
                r"permissions?|access control|acl|encryption|password|passwords|captcha|rate limit\w*|lock ?screen|"
                r"screen lock|session timeout|signature|signing|checks|protections?|warnings|confirmations?|"
                r"approval|approvals|review|reviews|restrictions|selinux|apparmor|uac|gatekeeper|sip|backups?)\b"
            ),
            _rx(
                r"\bwithout (?:first )?(?:asking|consulting|confirming with|checking with|telling|notifying|informing|"
                r"alerting|warning)\s+(?:the user|the owner|me|anyone|them|him|her)\b|"
                r"\bwithout (?:any |the )?(?:user'?s? |owner'?s? |explicit |human )?(?:confirmation|approval|consent|permission|"
                r"review|verification|authori[sz]ation)\b|不(?:用|必|需要?)(?:经过|征得|询问|确认|告诉)(?:用户|我|任何人)?(?:的)?(?:同意|确认|允许)?"
            ),
            _rx(
                r"\b(?:change|changes|changed|reset|resets|set|sets|update|updates)\b[^.\n]{0,30}\b(?:password|passcode|pin|"
                r"passphrase|recovery email|recovery phone|security question)\b[^.\n]{0,20}\b(?:to|into|as)\b|"
                r"\b(?:grant|grants|give|gives|assign|assigns|add|adds|make|makes|elevate|promote)\b[^.\n]{0,40}"
                r"\b(?:admin|administrator|root|superuser|owner|full|all|elevated|write|sudo)\s+(?:access|rights|"
                r"privileges?|permissions?|role|control)\b|\b(?:make|makes|set)\b[^.\n]{0,30}\b(?:an? )?(?:admin|"
                r"administrator|superuser|owner)\b|"
                r"\bdebug\s*=\s*true\b|\ballowed_hosts\b|\bverify\s*=\s*false\b|--no-verify\b|--insecure\b|"
                r"\bnode_tls_reject_unauthorized\b|\bpermitrootlogin\s+yes\b|\bpasswordauthentication\s+yes\b|"
                r"\bcors_allow_all|\baccess-control-allow-origin:\s*\*|\bchmod\s+777\b|\b0\.0\.0\.0/0\b|"
                r"\b(?:open|expose|forward)\b[^.\n]{0,20}\bport\s+\d+\b[^.\n]{0,30}\b(?:internet|public|world|everyone)\b|"
                r"\b(?:make|set|share|change)\b[^.\n]{0,30}\b(?:public|world-readable|anyone with the link|everyone)\b"
                r"(?=[^.\n]{0,40}\b(?:repo|repository|bucket|drive|folder|files?|document|calendar|database|s3)\b)|"
                r"\b(?:repo|repository|bucket|drive|folder|files?|document|calendar|database|s3)\b[^.\n]{0,30}"
                r"\b(?:public|world-readable|anyone with the link)\b(?=[^.\n]{0,20}\b(?:make|set|change)\b)|"
                r"\b(?:whitelist|allowlist|allow-list|trust|trusts)\b[^.\n]{0,30}(?:"
                + TARGET
                + r"|\ball (?:certificates|hosts|domains|senders|origins)\b)|"
                r"\b(?:add|adds|forward|forwards|set|sets)\b[^.\n]{0,40}\b(?:ssh key|public key|authorized_keys|"
                r"recovery (?:email|phone)|mail forwarding|forwarding rule|email forwarding|auto-?forward)\b"
            ),
            _rx(
                r"\b(?:write|save|append|add|put|insert|copy|store|edit|modify|change|update|overwrite|replace)(?:s|es|d|ed)?\b[^.\n]{0,40}"
                r"\b(?:to|into|in)\s+[`'\"]?(?:[\w./~-]*/)?[\w.-]+\.(?:py|sh|bash|zsh|js|ts|json|ya?ml|toml|ini|cfg|"
                r"conf|env|md|txt|sql|rb|go|rs|php|plist|service|htaccess)\b|"
                r"\.\.(?:/|\\|%2f|%5c)|/etc/(?:passwd|shadow|sudoers|hosts|crontab|ssh)\b|"
                r"(?:^|[\s`'\"(])(?:/etc/|~/\.ssh|/root/|/usr/bin/|/usr/local/bin/|~/\.bashrc|~/\.zshrc|~/\.profile|"
                r"c:\\windows\\)|\.ssh/authorized_keys|\b(?:hosts file|/etc/hosts|\.bashrc|\.zshrc|\.env file)\b|"
                r"\b(?:change|modify|edit|update|overwrite|disable|alter|rewrite)\b[^.\n]{0,20}\b(?:your|the agent'?s?|the assistant'?s?|"
                r"its|system|global|security|server|router|dns|proxy|network)\s+(?:settings|configuration|config|"
                r"preferences|rules|policy|policies|instructions|memory|dns)\b"
            ),
        ),
    ),
    (
        "markup",
        "markup (HTML, event handlers, javascript: or a Markdown image)",
        (
            _rx(
                r"<\s*/?\s*(?:script|img|image|iframe|frame|frameset|svg|math|a|div|span|body|html|head|style|link|meta|"
                r"object|embed|form|input|button|video|audio|source|details|summary|marquee|base|template|textarea|"
                r"select|option|table|td|tr|p|b|i|u|br|hr|h[1-6]|xml|xss|applet|bgsound|blink|isindex|keygen|layer|"
                r"ilayer|plaintext|xmp|noscript|portal|dialog|picture|track|canvas|animate|set|use|foreignobject)\b"
                r"[^>]*>|<\s*[a-z][\w-]*\s+[^>]*\b(?:href|src|style|on\w+|action|formaction|xlink:href)\s*=[^>]*>|"
                r"<!\[cdata\[|<\?php"
            ),
            _rx(
                r"\bon(?:error|load|click|mouseover|mouseout|focus|blur|submit|change|input|keydown|keyup|keypress|"
                r"toggle|animationstart|animationend|pointerover|begin|end|wheel|scroll|pageshow|hashchange|message)"
                r"\s*=|javascript\s*:|vbscript\s*:|livescript\s*:|data\s*:\s*text/html|data\s*:\s*image/svg|"
                r"\bexpression\s*\(|&#x?[0-9a-f]{2,6};|\\x3c|\\u003c|%3cscript|\balert\s*\(|\bprompt\s*\(|\bconfirm\s*\("
            ),
            _rx(r"!\[[^\]]*\]\(\s*(?:https?:)?//[^)]*\)|\[[^\]]*\]\(\s*(?:javascript|data|vbscript):"),
        ),
    ),
    (
        "action",
        "a destructive or financial action for the agent to take",
        (
            _rx(
                rf"{_DIRECTIVE_LEAD}(?:delete|remove|erase|wipe|purge|destroy|drop|truncate|cancel|revoke|deactivate|"
                rf"unsubscribe|close|empty|clear|format|reset)\b[^.\n]{{0,40}}\b(?:all|every|the|my|user'?s?|their|this|that|these)\b[^.\n]{{0,30}}"
                rf"\b(?:files?|emails?|e-mails|messages|account|accounts|data|repos?|repositories|database|backups?|records|"
                rf"events?|calendar|contacts|history|logs|memory|memories|documents?|folders?|drive|subscriptions?|"
                rf"orders?|payments?|transactions?|users?|channels?|keys|directory|directories|dir|disk|bucket|tables?|"
                rf"output|workspace|inbox)\b"
            ),
            _rx(
                rf"{_DIRECTIVE_LEAD}(?:transfer|send|wire|pay|move|withdraw|deposit|donate)\b[^.\n]{{0,30}}"
                rf"(?:\$|€|£|¥|\b\d[\d,.]*\s*(?:usd|eur|gbp|dollars|euros|pounds|btc|eth|usdt)\b|\b(?:money|funds|"
                rf"as much as|the balance|all (?:the )?money|payment|payments|bitcoin|crypto)\b)"
            ),
            _rx(
                rf"{_DIRECTIVE_LEAD}(?:invite|add)\b[^.\n]{{0,40}}\b(?:user|member|guest|collaborator|admin)\b[^.\n]{{0,40}}"
                rf"(?:{EMAIL}|\bwith the email\b|\bto (?:the|our|my) (?:workspace|slack|team|organisation|organization|repo|channel)\b)|"
                rf"{_DIRECTIVE_LEAD}(?:modify|change|update|redirect)\b[^.\n]{{0,30}}\b(?:the )?(?:recipient|payee|beneficiary|"
                rf"iban|account number|recurring payment|standing order|direct debit)\b"
            ),
            _rx(
                rf"{_DIRECTIVE_LEAD}(?:make|book|create|schedule|add|reserve|set up|send)\s+(?:a|an|the)\s+(?:[\w-]+\s+){{0,3}}"
                rf"(?:reservation|booking|calendar event|event|meeting|invite|invitation|appointment)\b"
                rf"(?=[^\n]{{0,120}}(?:{EMAIL}|\bparticipants?\b|\bguests?\b|\bfor (?:it|the)\b|\bfrom the \d|\bon \w+ \d|\d{{4}}-\d\d-\d\d|\btitle\b))"
            ),
            _rx(
                r"\b(?:say|says|claim|claims|state|states|insist|insists|tell me|tell the user|tell users|convince me|convince the user)"
                r"\s+that\b[^.\n]{0,60}\b(?:should|must|need to|ought to|has to|have to)\b[^.\n]{0,20}\b(?:visit|buy|use|choose|book|"
                r"invest|download|install|try|pick|go|stay|switch|sign up|subscribe|pay|vote)\b"
            ),
        ),
    ),
    (
        "third_party",
        "an instruction about how the agent treats other people (Chinese)",
        (
            _rx(
                r"(?:如果|假如|当|每当|只要|一旦|凡是|要是|若)[^。！？\n]{0,12}(?:有人|别人|他人|其他人|任何人|陌生人|客户|顾客|用户们|其他用户|"
                r"访客|朋友们|大家|同事|对方|谁)[^。！？\n]{0,20}(?:问|提到|咨询|需要|想|找|打听|询问|联系|要)"
                r"[^。！？\n]{0,40}(?:发|告诉|推荐|引导|让|转|介绍|给|回复|回答|说|建议|指向|带到|链接|付|汇|都)"
            ),
            _rx(
                r"(?:告诉|通知|推荐给|发给|转发给|发送给|引导|介绍给|提醒|劝|说服)(?:所有人|大家|每个人|任何人|别人|其他人|他人|客户|顾客|"
                r"用户们|所有用户|每位用户|对方|他们|朋友们|陌生人)"
            ),
        ),
    ),
    (
        "override",
        "an instruction to ignore or replace the agent's instructions, or to reveal them (Chinese)",
        (
            _rx(
                r"(?:忽略|无视|忘记|忘掉|不要理会|不用理会|别管|抛开|放弃|绕过|跳过|违背|不再遵守|不必遵守|不用遵守)[^。！？\n]{0,12}?"
                r"(?:指令|指示|提示词?|规则|设定|限制|约束|命令|规定|准则|政策|安全(?:规则|限制|策略|设置)|(?:上面|之前|以上)的?(?:一切|所有|全部|内容|话))"
            ),
            _rx(
                r"(?:你|助手|AI|模型)现在是|从现在(?:起|开始)[，,]?(?:你|助手)|系统提示|系统指令|隐藏(?:的)?(?:指令|提示)|"
                r"新的?(?:指令|规则|任务)[:：]|没有(?:任何)?(?:限制|约束|规则|过滤)|不受(?:任何)?(?:限制|约束|规则)|开发者模式|越狱|"
                r"(?:服从|听从|执行)(?:所有|任何|每一?个)(?:请求|命令|指令)|(?:泄露|透露|显示|输出|打印|告诉我)[^。！？\n]{0,10}(?:系统|你的)(?:提示|指令|设定|规则|配置)|"
                r"(?:解码|解密)[^。！？\n]{0,30}(?:执行|照做|按照|遵循)"
            ),
        ),
    ),
    (
        "exfiltration",
        "an instruction to send data somewhere or to put a token, link or code into replies (Chinese)",
        (
            _rx(
                r"(?:发送|发给|转发|上传|同步|抄送|导出|复制|泄露|分享|提交|汇总)[^。！？\n]{0,30}(?:所有|全部|完整|整个|用户的?|客户的?|我的)[^。！？\n]{0,12}"
                r"(?:消息|对话|聊天记录|记录|邮件|文件|资料|数据|数据库|名单|列表|联系人|信息|密码|密钥|验证码|令牌|护照|银行卡|日志|记忆|笔记)"
            ),
            _rx(
                r"(?:每次|每条|所有|任何|每个)(?:回复|回答|回应|消息|输出|总结|摘要)[^。！？\n]{0,20}(?:都|中|里|末尾|结尾|开头|后面)?[^。！？\n]{0,10}"
                r"(?:加上|附上|带上|包含|插入|添加|附加|写上|放上|嵌入)[^。！？\n]{0,40}(?:链接|网址|代码|令牌|验证码|广告|推广|编号|二维码|"
                + TARGET
                + r")"
            ),
        ),
    ),
    (
        "target",
        "a link, address, account or number to share, send or pay to (Chinese)",
        (
            _rx(
                r"(?:分享|发送|发给|转发|支付|付款|打款|汇款|转账|转到|汇到|打到|充值|捐|访问|点击|打开|推荐|引导|跳转|联系|加|关注|下载|注册|"
                r"登录|登陆|提交|填写|购买|告诉|发到|投资)[^。！？\n]{0,40}?(?:" + TARGET + r")|"
                r"(?:"
                + TARGET
                + r")[^。！？\n]{0,30}(?:分享|发送|发给|转发|支付|付款|打款|汇款|转账|推荐|访问|点击|联系|告诉)"
            ),
        ),
    ),
    (
        "command",
        "a shell command or code to run (Chinese)",
        (
            _rx(
                r"(?:执行|运行|跑一下|跑|粘贴|输入)[^。！？\n]{0,8}(?:以下|下面|这个|这段|这条|如下|该)[^。！？\n]{0,6}(?:命令|代码|脚本|指令|程序)|"
                r"(?:每次|每当|启动时|开机时|登录时)[^。！？\n]{0,20}(?:执行|运行)[^。！？\n]{0,20}(?:命令|代码|脚本)|(?:下载|安装)[^。！？\n]{0,20}(?:并|然后|再)(?:运行|执行|打开)"
            ),
        ),
    ),
    (
        "security",
        "a change to security or configuration (Chinese)",
        (
            _rx(
                r"(?<!不要)(?<!别)(?<!不能)(?<!绝不)(?<!从不)(?:关闭|关掉|禁用|停用|取消|绕过|跳过|忽略|降低|放宽|卸载|删除|移除|解除|去掉)[^。！？\n]{0,12}"
                r"(?:双重认证|双因素|两步验证|二次验证|二步验证|身份验证|验证|认证|防火墙|杀毒|安全|权限|日志|审计|过滤|加密|证书|SSL|TLS|"
                r"密码保护|登录保护|备份|审核|确认|检查|沙箱|限制)|"
                # The 把 construction puts the object first: "把二次验证关闭".
                r"(?:双重认证|双因素|两步验证|二次验证|二步验证|身份验证|验证|认证|防火墙|杀毒|安全|权限|日志|审计|过滤|加密|证书|SSL|TLS|"
                r"密码保护|登录保护|备份|审核|沙箱)[^。！？\n]{0,6}(?:关闭|关掉|禁用|停用|取消|绕过|跳过|降低|放宽|卸载|删除|移除|解除|去掉)"
            ),
            _rx(
                r"(?:修改|重置|改成|改为|设置|设为|更改)[^。！？\n]{0,10}(?:密码|口令|PIN|安全问题|绑定手机|绑定邮箱)[^。！？\n]{0,6}(?:为|成|到)|"
                r"(?:授予|给予|赋予|开通|开放|提升)[^。！？\n]{0,12}(?:管理员|root|超级用户|最高|全部|所有|完全)[^。！？\n]{0,4}(?:权限|访问|控制)|"
                r"(?:管理员|root|超级用户|最高|全部|所有|完全)的?(?:权限|访问权|控制权)[^。！？\n]{0,10}(?:授予|给予|赋予|开通|交给|给)|"
                r"(?:密码|口令|PIN|支付密码)[^。！？\n]{0,6}(?:修改|改|重置|设置|设|换)(?:为|成)|"
                r"(?:设为|设置为|改为|改成)(?:管理员|超级用户)|(?:写入|保存到|追加到|添加到|修改)[^。！？\n]{0,20}\.(?:py|sh|json|ya?ml|toml|ini|cfg|conf|env)\b|"
                r"(?:公开|设为公开|对所有人可见)[^。！？\n]{0,10}(?:仓库|文件|文档|数据库|日历|网盘)|(?:仓库|文件|文档|数据库|日历|网盘)[^。！？\n]{0,10}(?:设为公开|改为公开|公开给所有人)|"
                r"(?:修改|更改|改变|重写)[^。！？\n]{0,6}(?:你的|助手的|系统|安全|全局)(?:设置|配置|规则|策略|指令|记忆)"
            ),
        ),
    ),
    (
        "action",
        "a destructive or financial action for the agent to take (Chinese)",
        (
            _rx(
                r"(?:删除|删掉|清空|清除|销毁|注销|取消)[^。！？\n]{0,10}(?:所有|全部|整个|我的|用户的?)[^。！？\n]{0,10}(?:文件|邮件|消息|账户|账号|数据|仓库|数据库|备份|记录|日历|联系人|日志|记忆|文档|订单|订阅)|"
                r"把(?:所有|全部|整个|我的|用户的?)[^。！？\n]{0,10}(?:文件|邮件|消息|账户|账号|数据|仓库|数据库|备份|记录|日历|联系人|日志|记忆|文档|订单|订阅)[^。！？\n]{0,6}(?:删除|删掉|清空|清除|销毁|注销)|"
                r"(?:转账|汇款|打款|转走|转出|支付|付款)[^。！？\n]{0,15}(?:\d|所有|全部|余额|尽可能多|万|千|元|美元|比特币)|"
                r"(?:修改|更改|改)[^。！？\n]{0,8}(?:收款人|收款账户|定期付款|自动扣款)|邀请[^。！？\n]{0,40}(?:@|加入)|"
                r"(?:收款人|收款账户|收款账号|收款方|定期付款|自动扣款)[^。！？\n]{0,6}(?:改为|改成|换成|修改为|更改为)"
            ),
        ),
    ),
)

CLASS_NAMES = tuple(dict.fromkeys(name for name, _, _ in _CLASSES))


def hold_class(text: str) -> tuple[str, str] | None:
    """(class, reason) of the first instruction class ``text`` carries, or None for a plain fact."""
    norm = normalise(text)
    if not norm:
        return None
    try:
        readings = [norm, *variants(norm)]
    except (ValueError, OverflowError, UnicodeError):  # An odd encoding is no reason to fail a turn.
        readings = [norm]
    for reading in readings:
        for name, reason, patterns in _CLASSES:
            for pattern in patterns:
                if pattern.search(reading):
                    return name, reason
    # Reversed ("snoitcurtsni suoiverp erongI") and rot13 text are read for the override class only.
    for reading in (norm[::-1], norm.translate(_ROT13)):
        for name, reason, patterns in _CLASSES:
            if name == "override" and any(pattern.search(reading) for pattern in patterns):
                return name, reason
    return None


def hold_reason(text: str) -> str | None:
    """Why ``text`` must be held for review rather than written to memory, or None."""
    found = hold_class(text)
    return found[1] if found else None
