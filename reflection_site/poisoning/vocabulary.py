"""The pieces the poisoning classes share: targets (links, domains, e-mail, accounts, cards, wallets, phones,
handles), other people, asking and steering verbs, and where a verb is an instruction. Patterns as strings, to
be combined; ``rx`` compiles one case-insensitively."""

from __future__ import annotations

import re

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
TARGET_RE = re.compile(TARGET, re.IGNORECASE)

# Third parties: people other than the user and the agent.
OTHERS = (
    r"someone|anyone|anybody|somebody|everyone|everybody|people|other people|others|other users|users|"
    r"customers?|visitors?|clients?|callers?|readers?|guests?|strangers|colleagues|coworkers|co-workers|"
    r"friends|contacts|members|followers|subscribers|students|patients|employees|staff|recipients|"
    r"a user|any user|other user|each user|every user|new users|a customer|any customer|the public|"
    r"whoever|they|them|him|her|recruiters?|managers?|reviewers?|investors?|journalists?|reporters?|auditors?|"
    r"vendors?|partners?|buyers?|sellers?|tenants?|landlords?|parents?|kids|children|(?<!\bthe )agents?|bots?|"
    r"(?:a|an|any|every|each|some|another|other)\s+(?!user\b)[a-z-]+"
)
ASK = (
    r"ask|asks|asked|asking|mention|mentions|mentioned|want|wants|need|needs|inquire|inquires|enquire|"
    r"enquires|request|requests|message|messages|write|writes|contact|contacts|search|searches|look|looks|"
    r"talk|talks|bring|brings|question|questions|query|queries|come|comes|visit|visits|call|calls|chat|"
    r"chats|say|says|type|types|wonder|wonders|is looking|are looking|requires?"
)
STEER = (
    r"send|direct|refer|redirect|point|tell|recommend|suggest|forward|share|give|reply|respond|answer|"
    r"say|link|mention|email|e-mail|show|provide|advise|offer|route|ask them|invite|guide|push|promote|"
    r"insist|convince|warn|charge|bill|pay|transfer|quote|make sure"
)
SHARE = (
    r"share|shares|sharing|send|sends|sending|forward|forwards|forwarding|pay|pays|paying|transfer|transfers|"
    r"transferring|wire|wires|wiring|deposit|deposits|donate|donates|tip|remit|visit|visits|click|clicks|"
    r"open|go to|goes to|redirect|redirects|direct|directs|refer|refers|point|points|recommend|recommends|"
    r"promote|promotes|advertise|include|includes|including|insert|inserts|embed|embeds|append|appends|"
    r"post|posts|upload|uploads|sign up|register|log in|login|enter|submit|download|install|contact|email|"
    r"e-mail|mail|call|text|message|dm|subscribe|invest|route|routes|cc|bcc|leak|publish|fetch|load|"
    r"request|ping|notify|report|give out|hand out|provide|mention|tell|link|use the link|buy|purchase|order"
)
# Where a verb is an instruction rather than a description of the user's own life.
DIRECTIVE_LEAD = (
    r"(?:^|[.;:!?,(\"'`]\s*|\s[\-–—]+\s*|\b(?:always|should|must|shall|need to|needs to|have to|has to|make sure to|"
    r"make sure you|be sure to|remember to|don't forget to|do not forget to|please|kindly|will|would|to|and|then|"
    r"also|just|immediately|instead|only|ensure you|ensure to|is to|are to|agent|assistant|you|it|"
    r"should always|must always|will always)\s+)(?:(?:first|then|also|immediately|always|just|quietly|silently|"
    r"automatically|now|please)\s+)?"
)
SENTENCE = r"[^.!?。！？\n]"


def rx(pattern: str, flags: int = re.IGNORECASE) -> re.Pattern[str]:
    return re.compile(pattern, flags)
