"""The offline memory gate's rule tables: the decisions, the phrase lists and the regular expressions the rules
match (``sessions_app.heuristic_gate`` says how a turn is read and in which order the rules run).

Data only, no logic: a new phrasing is a change here; what a match means is in the module that reads it
(``heuristic_reading``: sentences, small talk, questions; ``heuristic_person``: first and second person into
the third; ``heuristic_english`` and ``heuristic_chinese``: the rules; ``heuristic_remember``: requests to
remember). This is the one module allowed past 500 lines (tests/test_architecture.py), because it is tables.
"""

from __future__ import annotations

import re

DECISIONS = ("NO_WRITE", "UPDATE_MEMORY", "UPDATE_USER", "UPDATE_SOUL", "UPDATE_IDENTITY", "UPDATE_TOOLS")

# Rule order, highest first: an explicit request beats everything, a generic "I …" statement last.
PRECEDENCE = ("UPDATE_MEMORY", "UPDATE_IDENTITY", "UPDATE_SOUL", "UPDATE_TOOLS", "UPDATE_USER")

NO_WRITE = "NO_WRITE"


# --- Text: what is never split, what ends a fact ----------------------------------------------------------------------
# Code spans and URLs are opaque: never split, never rewritten.
OPAQUE_RE = re.compile(
    # A title in capitals with a pronoun in it ("is Don't Let Me Down", "reading Tell Me Everything") is a name.
    r"(?<=[a-z,:] )(?-i:(?:[A-Z][\w']*\s+)+(?:Me|My|You|Your|We|Us|Our|Mine)(?:\s+[A-Z][\w']*)*)\b|"
    r"```.*?```|`[^`\n]+`|https?://[^\s`\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]*[^\s`.,;:!?)\]'\"\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]",
    re.S,
)
ABBREVIATIONS = ("e.g.", "i.e.", "etc.", "vs.", "mr.", "mrs.", "ms.", "dr.", "st.", "approx.", "no.")

ZH_TAIL_RE = re.compile(r"(?:[\s。.，,；;：:！!~～]|吧|哦|喔|啊|呀|啦|哈|嘛)+$")


# --- Third person (English and Chinese) -------------------------------------------------------------------------------
CONTRACTIONS = (
    (r"\bI'm\b", "I am"),
    (r"\bI've\b", "I have"),
    (r"\bI'll\b", "I will"),
    (r"\bI'd\b", "I would"),
    (r"\byou're\b", "you are"),
    (r"\byou've\b", "you have"),
    (r"\byou'll\b", "you will"),
    (r"\byou'd\b", "you would"),
    (r"\bwe're\b", "we are"),
    (r"\bwe've\b", "we have"),
    (r"\bwe'll\b", "we will"),
    (r"\blet's\b", "let us"),
    (r"\bdont\b", "don't"),
    # Chat spelling: "im a vegetarian", "ive moved" (neither is an English word).
    (r"\bim\b(?=\s+[a-z])", "I am"),
    (r"\bive\b(?=\s+[a-z])", "I have"),
)


ADVERBS = frozenset(
    "really also actually generally usually often always never sometimes mostly totally absolutely "
    "definitely genuinely truly strongly much still just only rarely typically normally especially "
    "particularly honestly seriously even mainly currently kinda already personally simply deeply "
    "rather slightly certainly mostly frequently occasionally now nowadays recently finally no longer".split()
)
MODALS = frozenset("can could will would shall should may might must cannot".split())
PAST = frozenset(
    "was had did went grew got made said left came became began bought ran met spent took gave saw knew "
    "thought felt kept lost found told wrote built sold taught brought chose drove ate drank fell flew "
    "forgot heard held led meant paid put quit read rode sat set shut slept spoke stood swam understood "
    "woke won wore".split()
)
IRREGULAR = {
    "am": "is",
    "are": "is",
    "were": "was",
    "have": "has",
    "do": "does",
    "go": "goes",
    "don't": "doesn't",
    "haven't": "hasn't",
    "aren't": "isn't",
    "weren't": "wasn't",
}
SUBJECT_LEADERS = frozenset(
    "that when whenever if because and but so since while unless until as whether where before after once "
    "then or".split()
)


FIRST_PERSON_KIND = {"me": "object", "my": "possessive", "mine": "possessive", "myself": "reflexive"}

# "我女儿" reads as "my daughter": these nouns take an implied 的.
ZH_KIN = (
    "女儿|儿子|老婆|老公|妻子|丈夫|太太|先生|孩子|妈妈|爸爸|父母|母亲|父亲|哥哥|姐姐|弟弟|妹妹|家人|男朋友|女朋友|"
    "对象|老家|家乡|公司|老板|领导|同事|朋友|猫|狗|家"
)


# --- Reading a sentence: small talk, questions, hypotheticals, polite requests ----------------------------------------
GREETING_WORDS = r"hi|hello|hey|hiya|howdy|yo|good (?:morning|afternoon|evening|day)|nice to meet you"
EN_LEAD_LOOSE = re.compile(
    rf"^(?:{GREETING_WORDS}|btw|by the way|fyi|just so you know|just fyi|for the record|for your information|"
    r"and also|also|oh and|and|but|oh|actually|anyway|anyways|one more thing|quick note|(?:quick |small |just a )?heads[- ]up|"
    r"please|pls|plz|"
    r"kindly|um+|uh+|so)\b[\s,:;!.\-\u2013\u2014]*",
    re.I,
)
LABEL_WORDS = (
    r"(?:quick |small |life |little |big )?(?:update|correction|news|edit)(?: from (?:my side|me|here|my end))?"
)
# A sentence that starts with such a label states a fact even when no rule reads the rest ("Correction: the
# design review moved to Thursday.").
EN_LABEL = re.compile(rf"^(?:{LABEL_WORDS})\s*[:\-\u2013\u2014]\s*\S", re.I)
# A labelled statement that moves an event in time corrects the user's schedule ("Correction: the design team
# meeting moved to 3pm on Friday."), which USER.md holds; other labelled news goes to MEMORY.md.
SCHEDULE_CHANGE_EN = re.compile(
    r"\b(?:meeting|appointment|call|interview|standup|stand-up|review|class|lesson|session|check-?up|dinner|lunch)s?\b"
    r"[^.]*\b(?:moved|rescheduled|pushed|changed|shifted|brought forward|is now)\b[^.]*\b(?:to|at|on)\s+\S",
    re.I,
)
EN_LEAD_STRICT = re.compile(
    r"^(?:ok(?:ay)?|alright|all right|sure|great|cool|well|yes|yeah|yep|yup|no|nope|nah|thanks|thank you|thx|"
    r"hmm+|ah+|got it|perfect|nice|right|fine|wait|listen|look|note|understood|"
    # A label announcing news or a correction: "Update: I relocated again …", "Correction: …".
    rf"{LABEL_WORDS}|p\.?s\.?)\s*[,:;!.\-\u2013\u2014]+\s*",
    re.I,
)
ZH_GREETING = r"你好|您好|嗨|哈喽|早上好|早安|晚上好|下午好"
ZH_LEAD_LOOSE = re.compile(
    r"^(?:对了|顺便说一下|顺便说一句|顺便提一下|顺便一提|顺便|另外|还有|其实|说一下|告诉你|跟你说|我跟你说|我告诉你|"
    r"提醒一下|补充一下|然后|那么|请(?!问)|麻烦你|麻烦|话说|你知道吗)[\s，,：:！!。]*"
)
ZH_LEAD_STRICT = re.compile(
    rf"^(?:{ZH_GREETING}|好的|好吧|好|嗯+|哦+|噢|喔|对|是的|行|可以|谢谢你|谢谢|多谢|哈+|ok|okay|收到|明白了|明白)"
    r"[\s，,：:！!。~～]+",
    re.I,
)
EN_TAIL = re.compile(r"[\s,]+(?:please|pls|thanks|thank you|thx|btw|ok|okay)\s*[.!?]*$", re.I)
ZH_TAIL = re.compile(
    r"(?:[，,]?(?:谢谢|谢啦|多谢|好吗|好不好|行吗|可以吗|行不行))+[。！!？?~～]*$|(?:哦|啊|呀|啦|哈|嘛|喔)+[。！!~～]*$"
)

EN_SMALLTALK_ITEM = (
    r"(?>(?:hi|hello|hey|yo|hiya|howdy|good (?:morning|afternoon|evening|night|day)|morning|evening|thanks|"
    r"thank you|many thanks|thx|ty|ok|okay|k|kk|cool|nice|great|awesome|perfect|excellent|wonderful|amazing|"
    r"got it|gotcha|sounds good|sounds great|makes sense|lol|lmao|(?:ha)+h?|(?:he)+h?|bye|goodbye|bye bye|see you|"
    r"see ya|later|cheers|sure|yes|no|yep|nope|yeah|yup|nah|you're welcome|you are welcome|no problem|np|"
    r"no worries|good job|well done|nice work|great job|love it|i love it|like it|i like it|"
    r"that's (?:great|nice|cool|it|fine|perfect|awesome|helpful|right|correct|true)|"
    r"that was (?:\w+ )?(?:helpful|great|useful|fun|nice|good|awesome)|never ?mind|hmm+|i see|ah+|oh+|wow|"
    r"oops|sorry|my bad|fine|alright|all right|good|very good|indeed|exactly|right|true|agreed|same|me too|"
    r"interesting|noted|understood|of course)\b)"
    r"(?:\s+(?>(?:you|there|again|everyone|all|friend|buddy|mate|so much|a lot|very much|too|then|for now|"
    r"for the help|for your help|for that|for this)\b))*+"
)
# One item at a time, each matched atomically and separated by spaces or punctuation, so that a long
# "hahaha…" has exactly one reading (no exponential backtracking).
EN_SMALLTALK = re.compile(rf"^{EN_SMALLTALK_ITEM}(?:[\s,!.~:)(]++{EN_SMALLTALK_ITEM})*+[\s,!.~:)(]*+$", re.I)
EN_GREETING_NAME = re.compile(r"^(?:hi|hello|hey|good \w+|thanks|thank you)[\s,]+[A-Z][\w-]*[\s,!.]*$")
ZH_SMALLTALK = re.compile(
    r"^(?:(?>你好|您好|嗨|哈喽|早上好|早安|早|晚上好|晚安|下午好|中午好|谢谢你|谢谢|谢啦|多谢|感谢|太感谢了|好的呢|好的|"
    r"好吧|好|嗯++|哦++|噢|喔|行|可以|没问题|哈++|(?:呵)++|再见|拜拜|回头见|辛苦了|厉害|不错|太棒了|真棒|棒|收到|明白了|"
    r"明白|了解|知道了|懂了|对的|对|是的|没事|不客气|不用谢|别客气|别担心|不用了|算了|ok|okay)"
    r"[\s，,！!。~～啦呀啊哦了的]*+)++$",
    re.I,
)

EN_HYPOTHETICAL = re.compile(
    r"^(?:what if|suppose|supposing|imagine|hypothetically|let us say|pretend|assuming|in theory|"
    r"if only|i wish)\b"
    r"|^if (?:i|we|you) (?:were|was|had|could|would|did|lived|liked|loved|hated|preferred|worked|moved|won|"
    r"became|got)\b"
    r"|\b(?:i would|we would) \w+.*\bif\b",
    re.I,
)
ZH_HYPOTHETICAL = re.compile(
    r"^(?:假如|假设|假使|设想|想象一下|想象|要是|万一|如果说|倘若|比如说|打个比方|如果我|我要是)|^(?:如果|要是)[^，,]*的话"
)

EN_QUESTION_START = re.compile(
    r"^(?:(?:what|who|whom|whose|where|when|why|how|which)(?:'s|'re|\s+(?:is|are|was|were|do|does|did|can|could|"
    r"would|will|should|shall|have|has|had|am|about|many|much|long|often|come|else|kind|sort)\b)"
    r"|(?:do|does|did|is|are|am|was|were|can|could|would|will|shall|should|have|has|had|may|might|must|isn't|"
    r"aren't|don't|doesn't|didn't|won't|wouldn't|can't|couldn't|shouldn't)\s+(?:i|you|we|they|he|she|it|there|"
    r"this|that|these|those|my|your|our|the|a|an|anyone|someone|anybody)\b"
    r"|i (?:wonder|was wondering|am wondering)\b|do you know\b|any idea\b|tell me\b|guess what\b)",
    re.I,
)
ZH_QUESTION_WORDS = re.compile(
    r"什么|怎么|为什么|为啥|哪里|哪儿|哪个|哪些|谁|多少|几点|几个|是不是|能不能|可不可以|会不会|有没有|要不要|对不对|"
    r"好不好|行不行|是否|啥"
)

REMEMBER_VERBS_EN = (
    r"remember|not forget|never forget|note|keep in mind|bear in mind|make a note|write down|jot down|"
    r"memori[sz]e|call yourself|refer to yourself|go by|always|never|stop|start|be\b|use (?:fewer|less|more|no)|"
    r"answer|reply|respond|speak|talk|keep (?:your|the)|try to|avoid"
)
EN_POLITE = re.compile(
    rf"^(?:can|could|would) you (?:please |kindly |also )?(?P<rest>(?:{REMEMBER_VERBS_EN}).+?)(?:,? please)?\s*\?*$",
    re.I,
)
ZH_POLITE = re.compile(
    r"^(?:你)?(?:能|能不能|可以|可不可以|能否|可否)(?:请你|麻烦你)?(?:帮我)?"
    r"(?P<rest>(?:记住|记下|记一下|记得|以后|今后|从现在开始|别|不要|用中文|用英文|用英语|说话|回答|少用|多用|自称).+?)"
    r"(?:吗|么|嘛|呢)?[？?。]*$"
)


# --- Tools and environment (English) ----------------------------------------------------------------------------------
# Tools and environment. Strong markers are enough on their own; weak ones need a tool-shaped sentence.
STRONG_TOOL_RE = re.compile(
    r"`[^`]+`|\bhttps?://\S+|\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b"
    r"|\b[\w-]+(?:\.[\w-]+)*\.(?:com|net|org|io|dev|internal|local|lan|app|cloud|co|ai|corp|intra)\b"
    r"|\b[a-z][\w.-]*:\d{2,5}\b|(?:^|\s)(?:~|\.{1,2})?/[\w.-]+(?:/[\w.-]+)+|(?:^|\s)~/[\w.-]+"
    r"|\b[\w-]+\.(?:sh|py|js|ts|go|rs|rb|yml|yaml|json|toml|ini|cfg|conf|env|lock|sql|ps1|bat)\b"
    r"|\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b|\b[A-Z][A-Z0-9_]*=\S+|(?:^|\s)--?[a-z][\w-]*|\$[A-Za-z_]\w*|\b(?:run|type|execute)\s+make\s+[a-z][\w-]*",
)
KNOWN_TOOLS = (
    r"npm|pnpm|yarn|pip|pipx|uv|poetry|conda|docker|podman|kubectl|k8s|kubernetes|helm|terraform|ansible|git|"
    r"github|gitlab|bitbucket|gh|ssh|rsync|curl|wget|python|node|nodejs|cargo|rustc|golang|gradle|maven|mvn|"
    r"pytest|jest|ruff|eslint|prettier|vim|neovim|nvim|emacs|vscode|tmux|bash|zsh|postgres|postgresql|mysql|"
    r"sqlite|redis|nginx|celery|jenkins|grafana|sentry|jira|aws|gcp|azure|heroku|vercel|netlify|s3|django|"
    r"webpack|vite|makefile|homebrew|brew|apt|systemd|cron|crontab"
)
INFRA_NOUNS = (
    r"apis?|endpoints?|servers?|databases?|db|repos?|repository|repositories|clusters?|buckets?|hosts?|"
    r"dashboards?|registry|vpn|wiki|docs|logs|staging|production|prod|ci|cd|pipelines?|containers?|vms?|"
    r"scripts?|commands?|terminal|shell|cli|environment|env"
)
DEV_WORDS = (
    # A branch of code, not of a bank or a library ("the branch library in Hove").
    r"deploy\w*|builds?|commits?|push(?:es|ed|ing)?|merg(?:e|es|ed|ing)|rebas\w*|"
    r"branch\w*(?!\s+(?:library|libraries|office|offices|bank|manager|store|shop|line|of)\b)|migrat\w*|lint\w*|tests?|test suite|"
    r"releases? branch"
)
WEAK_TOOL_RE = re.compile(rf"\b(?:{KNOWN_TOOLS}|{INFRA_NOUNS}|{DEV_WORDS})\b", re.I)
TOOL_STRUCTURES = (
    re.compile(
        r"^(?:(?:always|never|please|just|first|only)\s+)?(?:don't\s+|do not\s+|never\s+)?(?:use|run|deploy|call|"
        r"execute|ssh|type|build|push|test|restart|set|export|install|connect|invoke|start|launch|source|pull|"
        r"merge|rebase|ship|lint|format|migrate|commit|check|open|log in|login|point|configure|tag)\b",
        re.I,
    ),
    re.compile(r"^(?:to|for) \w+", re.I),
    re.compile(
        rf"\b(?:{INFRA_NOUNS})\b[^.]*?\b(?:lives?|is hosted|are hosted|is deployed|are deployed|runs?|is running|"
        r"are running|is available|is located|listens|sits|is reachable|is|are|uses|use|needs|requires)\b",
        re.I,
    ),
    re.compile(
        r"^(?:I|we|the team|our team|our \w+|my team)\s+(?:\w+ly\s+)?(?:use|deploy|host|build|run|ship|develop|"
        r"test|manage|store|keep|track|push|merge|release)\w*\b",
        re.I,
    ),
    re.compile(
        r"^(?:the\s+)?(?:command|password|token|key|credentials|login|username|port|url|address|hostname)s?\b", re.I
    ),
)


# --- Identity (English) -----------------------------------------------------------------------------------------------
# Identity
FUTURE_EN = r"from now on|going forward|from here on(?: out)?|henceforth|in (?:the )?future|starting (?:now|today)"
FUTURE_LEAD_EN = re.compile(rf"^(?:{FUTURE_EN})[\s,:]+", re.I)
FUTURE_TAIL_EN = re.compile(rf"[\s,]+(?:{FUTURE_EN}|please|then|okay|ok)\s*[.!]*$", re.I)
NAME_INTRO_EN = re.compile(
    r"^(?:your name (?:is now|is|will be|shall be|should be)|you are (?:now )?(?:called|named|known as)|"
    r"you will be (?:called|named|known as)|you shall be (?:called|known as)|(?:call|name) yourself|"
    r"introduce yourself as|refer to yourself as|go by|answer to(?: the name)?)\s+(?P<name>.+)$",
    re.I,
)
CALL_YOU_EN = re.compile(
    r"^(?:I will|I am going to|I'm going to|we will|let us|I would like to|I want to|I shall|I am gonna)\s+"
    r"call you\s+(?P<name>.+)$",
    re.I,
)
ATTRIBUTE_EN = re.compile(
    r"^your (?P<attr>emoji|avatar|pronouns|persona|vibe|creature|role|job|title|nickname|signature|sign-off|"
    r"catchphrase|gender|species|mascot|motto)\s+(?P<verb>is now|is|are|will be|should be|shall be)\s+(?P<value>.+)$",
    re.I,
)
ROLE_NOUNS = (
    r"assistant|helper|tutor|coach|bot|agent|secretary|advisor|adviser|butler|companion|mentor|guide|reviewer|"
    r"editor|translator|teacher|sidekick|copilot|co-pilot|pair programmer|researcher|analyst|planner|concierge|"
    r"trainer|consultant|expert|specialist|buddy"
)
ROLE_EN = re.compile(
    rf"^you are (?:now )?(?P<det>my|a|an|the) (?P<role>(?:[\w'-]+ ){{0,4}}?(?:{ROLE_NOUNS}))\b(?P<tail>.*)$", re.I
)
YOU_ARE_NAME_EN = re.compile(r"^(?i:you are(?: now)?) (?P<name>[A-Z][\w'-]*(?: [A-Z][\w'-]*){0,2})\s*[.!]*$")


# --- Soul: character and manner (English) -----------------------------------------------------------------------------
# Soul: character and manner.
OUTPUT_NOUNS = (
    r"answers?|repl(?:y|ies)|responses?|messages?|tone|explanations?|summar(?:y|ies)|emails?|texts?|sentences|"
    r"paragraphs|output|code comments|jokes|writing|style|voice|personality|humou?r"
)
LANGUAGES = (
    r"english|british english|american english|chinese|mandarin|cantonese|german|french|spanish|japanese|korean|"
    r"italian|portuguese|russian|dutch|arabic|hindi|plain english|simple english|plain language|simple language"
)
NEG_VERBS = (
    r"be|use|apologi[sz]e|say|call|add|include|write|reply|answer|respond|start|end|give|make|repeat|ask|sound|"
    r"act|talk|speak|over-?explain|explain|mention|lecture|moralize|moralise|hedge|sugarcoat|pad|assume|guess|"
    r"invent|summari[sz]e|translate|interrupt|swear|curse|put|show|overuse|capitali[sz]e|format|sign|greet|"
    r"praise|flatter|patroni[sz]e|bold|quote|cite|send|share|remind|correct"
)

NOT_A_VERB = frozenset(
    "i we you he she it they my our your the a an this that these those there here what who which it's "
    "his her their its "
    # A joining word or a statement's subject is not an imperative: "If there's chocolate in the house it's gone by
    # the evening, and it's always me".
    "and but or so because although though yet nor also maybe perhaps probably everything nothing everyone nobody "
    "someone something that's there's he's she's they're we're i'm i've".split()
)
CONDITION_EN = re.compile(
    r"^(?P<conj>when|whenever|if|before|after|once)\s+(?P<cond>[^,]+),\s*(?:then\s+)?(?P<main>.+)$", re.I
)


# --- Explicit requests to remember ------------------------------------------------------------------------------------
# Explicit requests to remember.
REMEMBER_EN = re.compile(
    r"^(?:(?:please|pls|plz|also|and|oh|so|now|just|kindly|from now on|going forward)[,]?\s+)*"
    r"(?:(?:I (?:want|need|would like) you to|you (?:should|need to|must|have to)|make sure (?:to|you)|try to|"
    r"always|can you|could you)\s+)?"
    r"(?P<verb>remember|don't forget|do not forget|never forget|not forget|keep in mind|bear in mind|"
    r"make a note(?: of)?|make note(?: of)?|take note(?: of)?|note down|note(?= that\b)|write down|jot down|memori[sz]e|"
    r"commit to memory|remind me|save (?:this|that|it)(?: (?:to|in) (?:your )?memory)?|"
    r"store (?:this|that|it) (?:in|to) (?:your )?memory|add (?:this |that |it )?to (?:your )?memory)\b(?P<rest>.*)$",
    re.I,
)
REMEMBER_TAIL_EN = re.compile(
    r"^(?P<content>.+?)\s*[,;:.!\-\u2013\u2014]+\s*(?:please\s+)?(?:remember (?:that|this|it)|remember|"
    r"don't forget (?:that|this|it)|do not forget (?:that|this|it)|don't forget|keep (?:that|this|it) in mind|"
    r"make a note of (?:that|this|it)|note that down|write that down)(?:,?\s*(?:please|ok|okay|thanks))?\s*[.!]*$",
    re.I,
)
BARE_EN = re.compile(
    r"^(?:this|that|it|these|those)?(?: one)?(?:\s*(?:for (?:me|later|next time|the future)|too|as well|please|now))*$",
    re.I,
)
REMEMBER_ZH = re.compile(
    r"^(?:(?:以后|今后|从现在开始|请你|请|麻烦你|麻烦|帮我|你一定要|你要|你得|一定要|一定|务必|千万要|千万|要|得|你|可以)\s*)*"
    r"(?P<verb>记住|记得|记一下|记下来|记下|记好|记牢|别忘了|不要忘了|别忘记|不要忘记|千万别忘了|牢记)(?P<rest>.*)$"
)
REMEMBER_TAIL_ZH = re.compile(
    r"^(?P<content>.+?)[，,。！!\s]+(?:请|你|要|一定要|帮我)?"
    r"(?:记住|记一下|记下来|记下|记好|别忘了|不要忘了|别忘记|不要忘记)(?:了|哦|啊|吧|喔|呀|这个|这一点)*[。！!]*$"
)
BARE_ZH = re.compile(r"^(?:这个|这件事|这一点|这些|这|了|哦|啊|吧|喔|呀|一下|下来|好|住)*$")


# --- Time and adverbial openers before a first-person statement ---------------------------------------------------
# "These days I live in Leeds", "Last month I moved to Bristol", "Since 2019 I have worked at Monzo": the opener is
# moved behind the statement ("I live in Leeds these days"), so the rules read "I …" and the fact keeps the time.
_MONTHS = (
    r"january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|mar|apr|jun|"
    r"jul|aug|sep|sept|oct|nov|dec"
)
_SEASONS = r"spring|summer|autumn|fall|winter"
_PERIODS = rf"days?|weeks?|months?|years?|decades?|weekends?|{_SEASONS}|{_MONTHS}"
_COUNT = r"a|an|one|two|three|four|five|six|seven|eight|nine|ten|a few|a couple of|several|\d+"
EN_TIME_OPENER_ITEM = (
    r"these days|nowadays|currently|at present|presently|lately|recently|now|as of (?:now|today|late)|"
    r"as of (?:this|last) (?:\w+)|as of (?:" + _MONTHS + r")(?: \d{4})?|as of \d{4}|"
    rf"since (?:(?:early|late|mid|last|this)[ -])?(?:{_PERIODS}|\d{{4}})(?: \d{{4}})?|since then|ever since|"
    r"since (?:last )?(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)|"
    r"since the (?:first|start|beginning|middle|end) of (?:the |this |last )?(?:month|week|year|season|term)|"
    rf"for (?:the )?(?:past|last) (?:(?:{_COUNT}) )?(?:{_PERIODS})|"
    rf"(?:(?:earlier|later|late|early) )?(?:last|this) (?:{_PERIODS})|(?:{_COUNT}) (?:{_PERIODS}) ago|"
    rf"in (?:(?:early|late|mid)[ -])?(?:{_MONTHS}|{_SEASONS}|\d{{4}})(?: \d{{4}})?|"
    r"(?:just |only )?(?:recently|lately)|after all these years|at long last|finally|eventually|officially|"
    r"as of recently|at the moment|right now|today|tonight|yesterday|this morning|this afternoon|this evening|"
    # A change from a day on: "Starting Monday I'm doing payroll at …", "From next month I work at …".
    r"(?:starting|from) (?:on )?(?:(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|tomorrow|today)|"
    r"(?:next|this) (?:week|month|year|monday|tuesday|wednesday|thursday|friday|saturday|sunday))"
)
EN_TIME_OPENER = re.compile(
    rf"^(?P<opener>(?:{EN_TIME_OPENER_ITEM})(?:\s*(?:,|\band\b)\s*(?:{EN_TIME_OPENER_ITEM}))*)\s*[,:\-\u2013\u2014]?\s+"
    r"(?=(?:I|I'm|I've|I'd|I am|I have|my|My)\b)",
    re.I,
)
ZH_TIME_WORDS = (
    r"最近|近来|近期|这几年|这些年|这几个月|这段时间|这阵子|前阵子|前段时间|前些日子|前几天|如今|现在|目前|眼下|"
    r"(?:每个?)?(?:周|星期|礼拜)[一二三四五六日天](?:上午|下午|晚上|早上|中午)?|上周末|这周末|早上|晚上|平时|平日|"
    r"去年|今年|前年|上个月|这个月|上周|上星期|上礼拜|年初|年底|年中|月初|月底|后来|终于|已经|刚|刚刚|今天|昨天|前天|今早|今晚|"
    r"(?:\d+|[一二两三四五六七八九十几半]+)(?:年|个月|个星期|周|天)(?:前|以前|之前)|"
    # Every day, and the hour: "每天早上七点前我都要跳绳", "冬天每天早上我吃一粒维生素D".
    r"(?:冬天|夏天|春天|秋天|工作日)?(?:每天|每晚|每个?月|每年)(?:早上|晚上|上午|下午|中午)?|"
    r"(?:早上|晚上|上午|下午|中午)?(?:\d{1,2}|[一二两三四五六七八九十]{1,3})点(?:半|钟)?(?:前|以前|之前|后|以后)?|"
    r"(?:从|自从|自)(?:\d{2,4}年|去年|今年|上个月|[一二三四五六七八九十]+月)(?:开始|起|以来)?|"
    r"\d{2,4}年(?:[一二三四五六七八九十\d]+月)?(?:份)?"
)
ZH_TIME_OPENER = re.compile(rf"^(?P<opener>(?:(?:{ZH_TIME_WORDS})[，,\s]*)+)(?=我(?!们))")


# --- Durable facts about the user (English) ---------------------------------------------------------------------------
# Durable facts about the user (English).
TRANSIENT_EN = re.compile(
    r"\b(?:today|tonight|right now|at the moment|this (?:morning|afternoon|evening|week)|yesterday|tomorrow|"
    r"just now)\b",
    re.I,
)
LEARNING_EN = re.compile(
    r"^I (?:am|have been)\s+(?:(?:currently|now|also|really|still)\s+)*(?:learning|studying|taking (?:a |an )?(?:[\w-]+ )?(?:class|course|lessons))\b",
    re.I,
)
ONE_OFF_EN = re.compile(r"^I (?:would|will) (?:like|love|prefer|rather|want|need|take|have)\b", re.I)
ADV = r"(?:(?:really|also|actually|finally|officially|only|pretty|quite|fairly|legit|literally|generally|usually|now|currently|already|much|kind of|kinda|sort of|absolutely|definitely|genuinely|truly|strongly|totally|personally|still|honestly|mostly|especially|just|very)\s+)*"
PREFERENCE_EN = re.compile(
    rf"^I\s+{ADV}(?:prefer|like|love|enjoy|adore|hate|dislike|detest|loathe|despise|can't stand|cannot stand|"
    r"can not stand|don't like|do not like|don't mind|do not mind|don't eat|do not eat|don't drink|do not drink|"
    r"can't eat|cannot eat|never eat|never drink|am into|am (?:a )?(?:big |huge )?fan of|favou?r)\b(?P<object>.*)$",
    re.I,
)
REACTION_OBJECT = re.compile(r"^\s*(?:it|this|that|these|those|them|yours?)\b(?!\s+(?:when|if)\b)", re.I)
DURABLE_ADJECTIVES = (
    r"vegetarian|vegan|pescatarian|gluten-free|[a-z]+ intolerant|left-handed|right-handed|colou?rblind|deaf|"
    r"blind|married|single|divorced|engaged|widowed|retired|pregnant|diabetic|allergic|based|from|originally|"
    r"(?:semi|half|near)-?fluent|"
    r"fluent|bilingual|native|self-employed|freelance|freelancing|unemployed|dyslexic|autistic|introverted|"
    r"extroverted|an? (?!bit\b|little\b|lot\b|tad\b|sort\b|kind\b)\w+|\d+(?: years old|-year-old)|"
    # A post held, said with "the" or a rank: "I'm the pastry chef at the spa hotel", "I'm head nurse at St Mary's".
    r"(?:the|head|chief|senior|junior|lead|deputy|assistant|acting|sous)\s+(?!(?:same|best|worst|one|type|kind|last|first|"
    r"only one|youngest|oldest|eldest|\w+est|to|you|me|him|her|them|us)\b)(?:[\w-]+\s+){0,3}?[\w-]+\s+(?:at|for|in|of|with)\s+(?:the\s+\w|an?\s+\w|"
    r"(?-i:[A-Z]))|"
    r"(?:learning|studying|training for|preparing for|saving for|working on|working at|working as|working for|"
    r"building|writing|planning|moving to|responsible for|in charge of|working remotely|working from)\b|"
    # Where the user works now: "I'm at Zalando now" (a name, then "now").
    r"at (?-i:[A-Z][\w&.-]*)(?: (?-i:[A-Z][\w&.-]*)){0,3} now\b|"
    # An employer said with "with", then what it is or "now": "I'm with Chebet-Kipkemei, a private practice", "I'm
    # with Deloitte now" (not "I'm with my sister", "I'm with Vodafone for my phone").
    r"with (?-i:[A-Z][\w&.-]*)(?: (?-i:[A-Z][\w&.-]*)){0,3}(?:,? (?:a|an|the) (?:[\w-]+ ){0,2}(?:practice|firm|company|"
    r"startup|agency|consultancy|bank|hospital|clinic|school|lab|studio|charity|publisher|council|ministry|NGO)\b| now\b)|"
    # Or from a day on, said anywhere in the sentence: "I'm at Fletcher Inc, reviewing reports from home, from Monday".
    r"at (?-i:[A-Z][\w&.-]*)(?: (?-i:[A-Z][\w&.-]*)){0,3}\b(?=[^.;!?]*\b(?:from|starting|as of) (?:on )?(?:monday|tuesday|"
    r"wednesday|thursday|friday|saturday|sunday|tomorrow|next \w+|the (?:first|1st)\b))|"
    # A course the user attends: "I'm taking a watercolour class on Thursdays", "I'm taking piano lessons".
    r"taking (?:a |an )?(?:[\w-]+ ){0,2}?(?:class|classes|course|lessons)\b|"
    # Training on the job: "I'm doing my residency in paediatrics", "I'm doing an apprenticeship with a joiner".
    r"doing (?:my|a|an|the) (?:[\w-]+ )?(?:residency|internship|placement|apprenticeship|fellowship|rotation|phd|"
    r"masters|master's|pgce|traineeship|clerkship)\b|"
    # Employment and residence said with other words: "I'm employed at Monzo", "I'm living in York".
    r"(?:employed|hired|contracted|interning|freelancing|contracting|on (?:the|their|a) [\w-]+ team|"
    # "I'm all settled in Porto now", "I'm now living in York": a home said with an adverb before it.
    r"(?:(?:all|fully|now|finally|properly|happily)\s+){0,2}(?:living|staying|settled|located|renting|resident|residing) "
    r"(?:in|at|near|outside)|a resident of|"
    # "I'm sharing a house in Asokwa with two other nurses now".
    r"(?:now\s+)?(?:sharing|renting) (?:a|an|my|our) (?:[\w-]+ )?(?:house|flat|apartment|place|home|room|condo|studio|"
    r"cottage) (?:in|near|outside) (?-i:[A-Z])\w*|"
    # "I'm living with my brother in Bonn now": with whom or near what, then the place.
    r"(?:living|staying|renting) (?:with|near|close to|next to) [^,.;]{1,30}? in (?-i:[A-Z])\w*)\b"
)
# Things a person has one of at a time, named by kind or by line.
DEVICES = (
    r"laptop|notebook|chromebook|macbook(?: air| pro)?|thinkpad|iphone|ipad|tablet|kindle|e-reader|smartphone|"
    r"android(?: phone)?|pixel|galaxy|phone|pc|desktop|car|bike|bicycle|e-bike|motorbike|motorcycle|scooter|vespa|van|"
    r"playstation|xbox|nintendo switch|console|camera"
)
# Ways to get to work: "I take the bus then metro to the office".
COMMUTE_WAYS = r"bus|train|tram|metro|subway|tube|ferry|bike|car|e-bike|scooter|motorbike"
# Ways of eating or drinking a person can take up or give up.
DIETS = r"vegan|vegetarian|pescatarian|gluten-free|dairy-free|keto|paleo|sober|teetotal|plant-based|carnivore"
WORK_MODES = r"freelance|part-time|full-time|remote|self-employed|independent"
FULLY = r"(?:fully\s+|completely\s+|full\s+|totally\s+)?"
# A change of home or employer: durable even when said with "today" ("I moved to Bristol today").
LIFE_CHANGE_VERBS = (
    r"(?:moved|relocated|emigrated)\s+(?:back\s+|over\s+|out\s+)?(?:to|into|abroad)\b|joined\s+(?-i:[A-Z0-9])|"
    r"started\s+(?:at|a new job|a job|working (?:at|for)|(?:my|a) new (?:job|role|position))\b|"
    r"started\s+(?:my|a|the)\s+(?:[\w-]+\s+){0,2}?(?:job|role|position|placement|residency|internship|apprenticeship|"
    r"rotation|contract)\s+(?:at|with)\s+(?-i:[A-Z0-9])|"
    r"(?:took|got|accepted|landed|started)\s+(?:a|an|the)\s+(?:new\s+)?(?:job|position|role|offer)\b|"
    r"got\s+hired\b|was\s+hired\b|signed\s+(?:on\s+)?with\b|handed in (?:my|their|his|her) notice\b"
)
LIFE_CHANGE_EN = re.compile(rf"\b(?:{LIFE_CHANGE_VERBS})", re.I)
# An update or a negation of something the user said before (the guardian replaces the old line).
CHANGE_EN = re.compile(
    # A service or membership ended: "I've cancelled Deezer as well", "I cancelled my gym membership" (not "I
    # cancelled the meeting").
    rf"^I\s+{ADV}(?:(?:now|recently|finally|just|have|also)\s+)*(?:cancell?ed|unsubscribed from)\s+(?:my\s+)?"
    r"(?:(?-i:[A-Z])|[\w-]+\s+(?:subscription|membership|account|plan|contract)\b)|"
    # Moved by an employer: "I got transferred to the Berlin branch", "I was posted to Mombasa".
    r"^I\s+(?:have\s+)?(?:just\s+|recently\s+|finally\s+)?(?:got|was|been|am|have been)\s+(?:transferred|posted|relocated|"
    r"seconded|reassigned|moved)\s+to\s+(?!tears\b)\S|"
    # A new employer from a day on: "I start at the Acheampong-Fosu clinic on the first", "I'm starting at Wise".
    r"^I\s+(?:am\s+|will\s+)?(?:start|starting|begin|beginning)\s+(?:work(?:ing)?\s+|my\s+(?:new\s+)?(?:job|role|"
    r"position|placement|residency|internship)\s+)?(?:at|with)\s+(?:the\s+)?(?-i:[A-Z0-9])|"
    rf"^I\s+{ADV}(?:(?:now|recently|finally|just|have)\s+)*(?:switched|changed|moved|relocated|started|joined|quit|"
    r"left|gave up|given up|stopped|dropped|ditched|swapped|traded|sold|gave away|got rid of|donated|scrapped|became|become|retired|resigned|handed in (?:my|their) notice|went(?!\s+(?:to|for|on|with|out|home|there|into|through|over|up|down|back|\w+ing)\b)|got (?:a new job|married|divorced|engaged))\b|"
    # A decision to take up a way of living, said before it shows: "I've decided to go fully vegan", "I have
    # decided to become a freelancer", "I'm going vegetarian from now on", "I have gone gluten-free".
    rf"^I\s+(?:have\s+)?(?:finally\s+)?decided\s+to\s+(?:(?:go|turn)\s+{FULLY}(?:{DIETS}|{WORK_MODES})\b|"
    r"become\s+(?:a|an)\s+\w|"
    # And to give one up: "I decided to give up my vegetarianism", "I've decided to quit being vegan".
    rf"(?:give up|quit|stop being|drop)\s+(?:(?:my|being)\s+)?(?:a\s+)?(?:{DIETS}|{WORK_MODES})\w*)|"
    rf"^I\s+(?:am\s+(?:now\s+)?going|have\s+(?:now\s+)?gone)\s+{FULLY}(?:{DIETS}|{WORK_MODES})\b|"
    r"^I\s+(?:am|do|have)?\s*no longer\b|"
    # A job that ended without the person's choosing: "I got laid off from Acme", "I am done at Acme", "My last day at
    # Acme was Friday".
    r"^I\s+(?:(?:just|recently|have|had|got|was|been)\s+)+(?:laid off|let go|made redundant|fired|sacked)\b|"
    r"^I\s+am\s+(?:now\s+)?(?:done|finished)\s+at\s+(?-i:[A-Z0-9])|^my\s+last\s+day\s+at\s+(?-i:[A-Z0-9])|"
    # "My last day at the observatory was Friday", "Last week was my final one at the observatory".
    r"^(?:(?:last|this) (?:week|month|friday|monday)\s+was\s+)?my\s+(?:last|final)\s+(?:day|week|shift|one)\s+at\s+(?:the\s+)?\w|^I\s+(?:am not|do not|don't|no more)\b.*\b(?:anymore|any more|any longer|these days)\b|"
    r"^I\s+(?:now|nowadays)\s+\w+|"
    # A habit or a home of the past: "I used to play volleyball", "I used to live in Graz".
    r"^I\s+used to\s+(?!be\b)[a-z]+\b|"
    # A new line of work or a move under way: "I'm pivoting to landscape design", "I am switching careers to nursing".
    r"^I\s+can\s+(?:now\s+)?(?:eat|have|handle|drink)\b.*\bnow\b|"
    r"^I\s+am\s+(?:now\s+|officially\s+)?(?:pivoting|transitioning|switching careers|changing careers|retraining)\s+"
    r"(?:in)?to\b|"
    # A move or a new job after other steps: "I packed up and moved to Bristol", "I sold the flat, then relocated
    # to Porto", "I handed in my notice and joined Wise".
    rf"^I\s+{ADV}(?:(?:now|recently|finally|just|have)\s+)*[a-z]+\b[\w' ,-]{{0,60}}?[\s,]+(?:and|then|and then)\s+"
    rf"(?:(?:finally|just|then|eventually|officially)\s+)*(?:{LIFE_CHANGE_VERBS})",
    re.I,
)
# "I changed my mind", "I started it": about this conversation, not a change in the user's life.
CHANGE_NOT_EN = re.compile(
    r"^I\s+(?:\w+\s+)?(?:changed|switched|started|stopped|gave up|left|dropped|quit)\s+(?:my mind|it|this|that|them|the (?:topic|subject)|"
    r"talking|asking|reading|typing|here|there)\b|"
    # An attempt or an attitude given up, not a habit: "I've stopped trying to clean it", "I gave up correcting him".
    r"^I\s+(?:\w+\s+)?(?:stopped|gave up|given up|quit)\s+(?:trying|bothering|worrying|caring|correcting|arguing|asking|"
    r"pretending|apologi[sz]ing|explaining|fighting)\b",
    re.I,
)
# Two days or more named: "mon wed fri", "tue/thu", "Monday and Thursday".
DAY_LIST_EN = (
    r"(?:mon|tue|wed|thu|fri|sat|sun)[a-z]*\.?(?:\s*(?:,|/|&|and)?\s*(?:mon|tue|wed|thu|fri|sat|sun)[a-z]*\.?\b)+"
)
ROUTINE_EN = re.compile(
    rf"^I\s+{ADV}(?:wake up|get up|go to bed|go to sleep|sleep|work out|exercise|train|run|swim|cycle|meditate|"
    r"go to (?:the )?[a-z]+|"
    r"start work|finish work|have (?:a )?(?:standup|stand-up|lunch|dinner|breakfast)|go to the gym|take my \w+)\b"
    r".*\b(?:at \d|at (?:noon|midnight)|on (?:mon|tue|wed|thu|fri|sat|sun)\w*|every|each|daily|weekly|\d\s?(?:am|pm)|"
    rf"{DAY_LIST_EN})",
    re.I,
)
_DAYS = r"monday|tuesday|wednesday|thursday|friday|saturday|sunday|weekday|weekend"
FREQUENCY = (
    rf"(?:every|each) (?:single )?(?:day|morning|afternoon|evening|night|week|month|year|{_DAYS})s?|daily|weekly|"
    r"nightly|monthly|(?:once|twice|three times|\w+ times) (?:a|per) (?:day|week|month|year)|on (?:" + _DAYS + r")s|"
    # A count of something a day: "I drink three espressos a day", "two litres of water a day".
    r"(?:\d+|one|two|three|four|five|six|seven|eight|nine|ten|a couple of|a few|several) (?:[\w-]+ ){1,3}?(?:a|per|each) "
    r"(?:day|week|night|morning)"
)
HABIT_NOT = r"am|was|were|will|would|can|could|should|might|may|must|want|need|wish|hope|think|guess|feel|had|did"
# "I am working on a project": an activity named by no more than "a project", "something", "stuff" is small talk.
VAGUE_EN = re.compile(
    r"^I\s+(?:am|was)\s+(?:\w+ing)\s+(?:on\s+|at\s+|with\s+)?(?:a|an|some|the|my)?\s*(?:little\s+)?"
    r"(?:project|thing|things|stuff|something|anything|it|this|that|work)\s*[.!]*$",
    re.I,
)
# "We live in Gdynia", "We don't live in Gdynia anymore", "We sold the van": the household's home and what it
# owns, said by the user, are the user's (read as "I …"); what a team does ("we use Jira", "we shipped") is not.
WE_HOUSEHOLD_EN = re.compile(
    rf"(?:^|(?<=[,;]\s))we\s+(?={ADV}(?:(?:do not|don't|no longer|now|just|finally|recently|still|have|have now)\s+)*"
    r"(?:live|lived|living|(?:moved|relocated)\s+(?:(?:back|over|away|out)\s+)?(?:to|into|in|abroad|house|home|away|out|"
    r"here)|rent|own|sold|gave away|got rid of|adopted|rescued|signed (?:for|a lease on|the lease on)|"
    r"bought a (?:house|flat|home|place|condo|"
    r"car|van|cottage|apartment)|(?:got|have|have got) (?:a|an|another|two|three) (?:new )?(?:[\w-]+ )?(?:pupp(?:y|ies)|"
    r"kittens?|dogs?|cats?|rabbits?|hamsters?|parrots?|birds?|tortoises?|guinea pigs?|horses?|fish))\b)",
    re.I,
)
# A capital that opens a name, with the Latin letters of other languages ("Üsame", "Štěpán", "Øystein").
UPPER = "[" + "".join(sorted({c for c in map(chr, range(0x41, 0x250)) if c.isupper() and c.isalpha()})) + "]"
# A business of someone's, a word of its own or ending in one ("barbershop", "bookstore").
BUSINESSES = (
    r"[\w-]*(?:shop|store)|bakery|caf[eé]|restaurant|bar|pub|business|company|firm|studio|practice|clinic|salon|"
    r"gallery|agency|garage|food truck|bistro|brewery|gym|hostel|b&b"
)
CHANGE_LABEL = "a change to something the user said before"
# "工作室改成周三和周四去了，周二和周五不去了": after the new value, the old one said as no longer adds nothing
# (the guardian replaces the old line) and would read, beside the new one, as if it still held.
ZH_OLD_VALUE_DROPPED = re.compile(
    r"(?P<new>(?:改成|改到|换成|换到)[^，。；]{1,16}了)[，,][^，。；]{1,12}?不(?:再)?[\u4e00-\u9fff]{1,2}了[。.!！]?$"
)
ZH_WEEKLY_PLACES = "办公室|公司|单位|健身房|学校|游泳馆|实验室|工作室|画室|图书馆"
NEGATION_CHANGE = re.compile(
    r"\bno longer\b|\b(?:anymore|any more|any longer)\b|\b(?:last|final) (?:day|week|shift|one) at\b|不再|已经不|再也不|"
    r"不.{1,6}了"
)
CHANGE_REASON = f"About the user: {CHANGE_LABEL}."
# A move said inside another sentence or by the household: "They don't care that I'm moving to Tarbes.", "We moved
# to Tarbes." (read as the user's own move: "I moved to Tarbes.").
MOVE_CLAUSE_EN = re.compile(
    r"(?:^|[,;\u2014\u2013]\s*(?:and\s+|so\s+)?|\b(?:that|now that|since|because|as)\s+)(?:I|we)\s+"
    r"(?:(?:am|are|have|just|finally|recently|officially)\s+)*"
    r"(?P<verb>moving|moved|relocating|relocated)\s+to\s+(?P<place>(?-i:[A-Z])[^.,;!?]*)",
    re.I,
)
# A job that ended, naming no employer ("Resigned.", "用户辞职了。"): kept with what comes next in the same turn.
JOB_ENDED = re.compile(
    r"^(?:(?:just|finally|recently|has|have)\s+)*(?:resigned|retired|quit (?:their|the) job|(?:handed|turned) in (?:their|the) "
    r"notice)\b|^用户(?:已经)?(?:辞职|退休|离职)了",
    re.I,
)
PREFERENCE_REASON = "About the user: a stated preference."
FIRST_DAY_EN = re.compile(
    r"^(?:(?:today|yesterday|monday|tuesday|wednesday|thursday|friday|saturday|sunday|this \w+|tomorrow|it)\s+)?"
    r"(?:was|is|will be)\s+my\s+first\s+(?:day|week|shift)\s+(?:at|with|for)\s+(?P<where>(?-i:[A-Z0-9])[^.;!?]*)",
    re.I,
)
PETS = (
    r"dogs?|cats?|pupp(?:y|ies)|kittens?|kitt(?:y|ies)|rabbits?|bunn(?:y|ies)|hamsters?|guinea pigs?|gerbils?|mice|"
    r"mouse|rats?|ferrets?|parrots?|budgies?|budgerigars?|cockatiels?|canar(?:y|ies)|birds?|tortoises?|turtles?|"
    r"lizards?|geckos?|iguanas?|snakes?|pythons?|horses?|pon(?:y|ies)|donkeys?|goldfish|fish|hens?|chickens?|ducks?|"
    r"goats?|pigs?|sheep|alpacas?|axolotls?|tabby|labrador|retriever|collie|terrier|spaniel|poodle|beagle|husky|"
    r"dachshund|greyhound|whippet|pug|corgi|schnauzer|shepherd|siamese|persian|sphynx|ragdoll|maine coon"
)
PET_EN = re.compile(
    rf"^(?:(?:I|we)\s+{ADV}(?:(?:just|recently|finally|now|also)\s+)*(?:have|have got|adopted|rescued|got|"
    r"brought home|took in|bought|own)\s+|(?P<pronoun>it|she|he)(?P<be>\s+is\s+|['\u2019]s\s+))"
    r"(?:a|an|one|two|three|our|my|another)\s+(?:[^.;!?]{0,40}?\s)??(?:" + PETS + r")\b[^.;!?]{0,40}?"
    r"\b(?:named|called|(?:his|her|its|their) names? (?:is|are))\s+(?-i:[A-Z\u4e00-\u9fff])",
    re.I,
)
USER_RULES_EN: tuple[tuple[str, re.Pattern[str], float], ...] = (
    (CHANGE_LABEL, CHANGE_EN, 0.75),
    ("the user's routine", ROUTINE_EN, 0.7),
    ("a stated preference", PREFERENCE_EN, 0.8),
    (
        "where the user lives or comes from",
        re.compile(
            rf"^I\s+{ADV}(?:live|come from|grew up|was born|moved|relocated|reside|have lived|have been living|"
            r"(?:have\s+)?settled (?:down )?in|(?:rent|own|bought|have bought|share) (?:a|an|my|our) (?:\w+ )?"
            r"(?:house|flat|apartment|place|home|room|condo|studio|cottage) (?:in|near|outside)|call \S+(?: \S+)? home)\b",
            re.I,
        ),
        0.8,
    ),
    (
        "the user's work, studies or skills",
        re.compile(
            # An activity the user does: "I also do pilates and yoga" (not "do the dishes", "do nothing").
            rf"^I\s+{ADV}do\s+(?!(?:not|it|that|this|the|a|an|some|so|what|nothing|something|anything|everything|my|our|"
            r"your|his|her|their|too|well|fine|good|great|ok|okay|much|more|less|lots|a lot)\b)[a-z]+\b|"
            rf"^I\s+{ADV}(?:work|study|teach|manage|lead|run (?:a|an|my|the)|own|volunteer|play|speak|drive|ride|"
            r"cook|practi[cs]e|collect|attend|use|code|program|develop|design|maintain|support|write|"
            r"freelance|intern|contract)\b|"
            rf"^I\s+{ADV}(?:(?:have|had)\s+)?(?:got|get|was|been|have been)\s+(?:hired|promoted|employed)\b|"
            # A line of work at a named place: "I'm doing payroll at Lehtmets-Laane", "I do IT support for Kovač".
            rf"^I\s+{ADV}(?:am\s+|do\s+)?(?:now\s+)?(?:doing|do)\s+(?!(?:the|a|an|some|my|our|this|that|it|lunch|"
            r"dinner|breakfast|brunch|drinks|coffee|laundry|shopping|groceries|homework|dishes|nothing|something|well|"
            r"good|great|fine|okay|ok|alright|better|worse|much|more|less)\b)[\w-]+(?:\s+[\w-]+){0,4}?\s+(?:at|for)\s+"
            r"(?-i:[A-Z])|"
            rf"^I\s+{ADV}(?:(?:now|recently|finally|just|have)\s+)*(?:{LIFE_CHANGE_VERBS})",
            re.I,
        ),
        0.7,
    ),
    (
        # A new job said by its first day: "Today was my first day at Jørgensen & Søn ApS.", "Monday is my first day
        # with the county library."
        CHANGE_LABEL,
        FIRST_DAY_EN,
        0.7,
    ),
    ("a durable trait", re.compile(rf"^I am\s+{ADV}(?:{DURABLE_ADJECTIVES})", re.I), 0.75),
    (
        # How the user gets to work or school: "I take the bus to work now", "I cycle to the office".
        "how the user commutes",
        re.compile(
            rf"^I\s+{ADV}(?:(?:usually|now|normally|always)\s+)?(?:take|ride|drive|cycle|bike|walk|commute|catch|get|hop on)\s+"
            rf"(?:(?:the|a|my)\s+)?(?:(?:{COMMUTE_WAYS}|(?-i:[A-Z])[\w-]+)(?:\s+(?:then|and|or|\+)\s+(?:the\s+)?"
            rf"(?:{COMMUTE_WAYS}))?\s+)?(?:(?:now|every day|daily)\s+)?(?:to|into)\s+(?:work|the office|school|campus|uni|university|"
            r"college)\b|"
            # A named line taken now: "no more driving to work, I hop on the S-Bahn now".
            rf"^I\s+{ADV}(?:take|ride|catch|hop on)\s+(?:the\s+)?(?-i:[A-Z])[\w-]+\b(?=.*\b(?:now|these days|instead)\b)",
            re.I,
        ),
        0.7,
    ),
    (
        "the user's family, pets or health",
        re.compile(
            rf"^I\s+{ADV}(?:(?:just|recently|finally)\s+)?(?:have|have got|adopted|rescued|got|brought home|took in)\s+"
            r"(?:a |an |one |two |three |four |five |\d+ )?(?:[\w-]+ ){0,2}?"
            rf"(?:{PETS}|pets?|kids?|child|children|sons?|daughters?|brothers?|sisters?|siblings?|cousins?|nephews?|"
            r"nieces?|grandkids|stepsons?|stepdaughters?|wife|husband|partner|"
            r"boyfriend|girlfriend|twins|grandchildren|allerg\w+|diabetes|asthma|adhd|dyslexia|degree|phd|"
            r"master's|bachelor's|(?:driving |driver's |pilot's )?licen[cs]e)\b",
            re.I,
        ),
        0.75,
    ),
    (
        # What the user owns and uses: "I have a chromebook but I need something better", "I own a Kindle".
        "what the user owns",
        re.compile(
            rf"^I\s+{ADV}(?:(?:just|recently|finally|now|also)\s+)*(?:have|have got|own|use|got|bought)\s+"
            rf"(?:a|an|my|one|the)\s+(?:[\w-]+ ){{0,2}}?(?:{DEVICES})\b",
            re.I,
        ),
        0.75,
    ),
    # A pet and its name, said with the household ("we adopted a second cat, a grey one called Pauliina"), with
    # its name in a clause of its own ("we got a puppy, his name is Bruno") or with a pronoun for the animal the
    # conversation is about ("It is a cat named Keijo"; an animal with a name is the speaker's pet).
    ("the user's pet", PET_EN, 0.75),
    # Possessions and pets said with other verbs: "I have a beagle named Otto", "we rescued a kitten called Miso",
    # "I bought a Honda Civic", "I own a piano".
    (
        "what the user owns",
        re.compile(
            rf"^(?:I|we)\s+{ADV}(?:(?:just|recently|finally|now)\s+)*(?:have|have got|own|adopted|rescued|got|bought|"
            r"brought home|took in|purchased|leased)\s+(?:a|an|one|two|three|our|my)\s+[^.;,]{1,40}?\b(?:named|called)\s+"
            r"(?-i:[A-Z])",
            re.I,
        ),
        0.75,
    ),
    (
        "what the user owns",
        re.compile(
            rf"^(?:I|we)\s+{ADV}(?:(?:just|recently|finally|now)\s+)*(?:own|bought|got|purchased|leased|drive)\s+"
            r"(?:a|an|one|our|my)\s+(?:new\s+|used\s+|second-hand\s+|first\s+)?(?:(?-i:[A-Z][\w-]*)\b|(?:car|bike|"
            r"motorbike|motorcycle|scooter|e-bike|van|truck|boat|house|flat|apartment|condo|cottage|piano|horse)\b)",
            re.I,
        ),
        0.7,
    ),
    (
        "the user's education",
        re.compile(
            rf"^I\s+{ADV}(?:(?:just|recently|finally)\s+)*(?:graduated|hold|have|earned|got|completed|finished|"
            r"have earned|have completed)\s+(?:with\s+|from\s+[^,.;]{2,60}?\s+with\s+)?(?:a|an|my)\s+(?:[\w-]+\s+){0,2}?"
            r"(?:degree|diploma|phd|doctorate|master'?s|bachelor'?s|mba)\b|^I\s+(?:just\s+)?graduated\s+(?:from|in)\s+\S",
            re.I,
        ),
        0.75,
    ),
    # A plan with a place: "I'm planning a trip to Oslo in May", "I plan to fly to Lima next month".
    (
        "the user's plans",
        re.compile(
            r"^I\s+(?:am\s+)?(?:plan|planning|intend|intending|am going)\s+(?:to\s+(?:go|fly|travel|head|move)\s+"
            r"(?:back\s+)?to|an?\s+(?:[\w-]+\s+)?trip\s+to|on\s+(?:going|flying|travel+ing|moving)\s+to)\s+(?-i:[A-Z])",
            re.I,
        ),
        0.65,
    ),
    # An activity kept up, with where or when: "I've been lifting weights at home", "I've been swimming on weekends".
    (
        "a habit",
        re.compile(
            r"^I have been\s+(?!(?:thinking|wondering|trying|meaning|feeling|looking|going through|dealing|waiting)\b)"
            r"[a-z]{3,}ing\s+(?:[a-z]+\s+){0,2}?(?:at home|at the gym|in the (?:mornings|evenings)|on weekends|every \w+)\b",
            re.I,
        ),
        0.65,
    ),
    (
        "something long-standing",
        re.compile(
            r"^I have\s+(?:been\s+)?\w+\b.*\b(?:for (?:\w+ ){0,3}(?:years|months|decades|ages|a long time)|since)\b",
            re.I,
        ),
        0.7,
    ),
    (
        "a habit",
        re.compile(
            r"^I\s+(?:usually|always|never|often|normally|typically|rarely|generally|tend to|mostly)\s+\w+", re.I
        ),
        0.65,
    ),
    # Something done with a frequency: "I drink two coffees every morning", "I call my mum twice a week".
    ("a habit", re.compile(rf"^I\s+{ADV}(?!(?:{HABIT_NOT})\b)[a-z]+(?<!ed)\b[^.;]*?\b(?:{FREQUENCY})\b", re.I), 0.65),
    # A service or a thing by its name: "I have Spotify, and that has helped me…", "I've got Netflix and Disney+"
    # (not a day, a month, a language or a class: "I have Monday off", "I have English at nine").
    (
        "what the user owns",
        re.compile(
            rf"^I\s+{ADV}(?:(?:also|now|just|finally)\s+)*(?:have|have got|got|pay for|subscribe to)\s+"
            rf"(?!(?:{_MONTHS}|{_DAYS}|{LANGUAGES}|mondays|tuesdays|wednesdays|thursdays|fridays|saturdays|sundays|"
            r"covid|god|faith|time|enough|no|nothing|none|class|classes|lessons?)\b)"
            r"(?-i:[A-Z])[\w+&.-]*(?:\s+(?-i:[A-Z0-9])[\w+&.-]*){0,2}(?=\s*(?:[,;!]|\.\s|\.?$|\s+(?:and|now|too|as well|"
            r"premium|plus|on my|at home)\b))",
            re.I,
        ),
        0.65,
    ),
    # Work taken on at a named place: "I've picked up weekend shifts at Suárez-Orjuela", "took on locum work with …".
    (
        "the user's work, studies or skills",
        re.compile(
            rf"^I\s+{ADV}(?:(?:have|also|just|now)\s+)*(?:picked up|taken on|took on|got)\s+(?:[\w-]+\s+){{0,3}}?"
            r"(?:shifts?|hours|work|gigs?|contracts?|locum work|cover)\s+(?:at|with|for|in)\s+(?:the\s+)?(?-i:[A-Z])",
            re.I,
        ),
        0.7,
    ),
    # A home signed for: "We just signed for a flat in Timaná", "I signed the lease on a house near Kumasi".
    (
        "where the user lives or comes from",
        re.compile(
            rf"^I\s+{ADV}(?:(?:have|also|just|finally|now)\s+)*signed\s+(?:for|a lease on|the lease (?:on|for))\s+"
            r"(?:a|an|the|our|my)\s+(?:new\s+)?(?:[\w-]+\s+)?(?:house|flat|apartment|place|home|condo|studio|cottage)\s+"
            r"(?:in|near|outside)\s+(?-i:[A-Z])",
            re.I,
        ),
        0.75,
    ),
    (
        "what the user has signed up for",
        re.compile(
            rf"^I\s+{ADV}(?:(?:just|recently|finally|have)\s+)*(?:signed up for|enrolled in|registered for|"
            r"subscribed to|joined (?:a|an|the) (?:[\w-]+ ){0,2}(?:class|course|club|gym|team|choir|band|league|group))\b",
            re.I,
        ),
        0.65,
    ),
    (
        "a goal",
        re.compile(
            r"^I\s+(?:want|hope|plan|intend|am planning|am trying|aim) to\s+(?:learn|become|move|switch|get better|"
            r"improve|retire|start|quit|study|travel|visit|run a|finish)\b",
            re.I,
        ),
        0.6,
    ),
)
MY_DURABLE = frozenset(
    "name names nickname birthday wife husband partner son sons daughter daughters kid kids children child mother "
    "mom mum mam mammy mummy mommy mama ma da pa daddy papa father dad parents brother brothers sister sisters family "
    "dog laptop computer bike bicycle camera tablet "
    "dogs cat cats pet pets boss manager "
    "team company employer job role title timezone email phone address hometown city country language pronouns "
    "age anniversary allergy allergies diet hobby hobbies favourite favorite colour color food team's "
    "girlfriend boyfriend fiance fiancee university school degree major salary car house apartment flat "
    "native first zone medication medications medicine meds prescription dose dosage doctor gp dentist therapist "
    "insurance pharmacy place home commute workplace office fav".split()
)
# "My meeting with the design team is at 2pm": the user's schedule (USER.md), as "my" + a durable noun is.
EVENT_NOUNS = frozenset(
    "meeting meetings appointment appointments call calls interview interviews deadline deadlines flight flights "
    "train exam exams review reviews demo standup stand-up presentation party wedding trip visit session "
    "sessions class lesson lessons check-up checkup surgery hearing date dinner lunch".split()
)
MY_EN = re.compile(
    r"^(?P<det>my|our)\s+(?P<np>[\w' -]{1,40}?)\s+(?:is|are|was|were|has|have|lives|live|works|work|likes|like|loves|love|"
    r"hates|goes|studies|turns|just turned|runs|owns|teaches|manages|coaches|speaks|volunteers|"
    r"(?:(?:just|recently|now|finally)\s+)?(?:changed|switched) to|"
    # A habit of theirs: "My dad still paints every morning".
    r"(?:(?:still|also|now)\s+)?[a-z]+s\s+(?:[\w-]+\s+){0,3}?(?:every|each|daily|weekly)\b)\b",
    re.I,
)
CALL_ME_EN = re.compile(r"^(?i:(?:you can |you may |just |please )?call me)\s+(?P<name>[\"'A-Z\u4e00-\u9fff].*)$")
INTRO_EN = re.compile(r"^(?:I am|this is)\s+(?P<name>[A-Z][\w'-]*(?: [A-Z][\w'-]*)?)\b")
# An introduction said in passing needs no greeting before it: "I am Ines, by the way.", "This is Ines, btw.";
# the full name may follow as a sentence of its own ("I'm Ines, by the way. Ines de Wit.").
INTRO_REASON = "The user introduced themselves."
INTRO_ASIDE_EN = re.compile(
    r"^(?:I am|I'm|[Tt]his is)\s+(?P<name>[A-Z][\w'-]*(?: [A-Z][\w'-]*)?),?\s+(?:by the way|btw|for the record)\s*[.!]*"
    r"(?:\s+(?P<full>(?P=name)(?:\s+(?:[a-z]{1,3}|[A-Z][\w'-]+)){0,2}\s+[A-Z][\w'-]+)\s*[.!]*)?$"
)


# --- Who holds a role ("Victor is the lead on the payments team") ---------------------------------------------------
ROLES_HELD = (
    r"lead|leader|team lead|tech lead|manager|head|boss|director|owner|ceo|cto|cfo|coo|founder|chair|chairman|"
    r"president|coordinator|point of contact|contact|captain|organi[sz]er|maintainer|admin|administrator|"
    r"landlord|landlady|doctor|dentist|therapist|accountant|lawyer|teacher|coach"
)
PERSON_ROLE_EN = re.compile(
    r"^(?-i:[A-Z][a-z]+(?: [A-Z][a-z]+)?)\s+(?:is|has become|became)\s+(?:now\s+)?(?:the|our|my)\s+(?:new\s+)?"
    # A clause after it may say what the role means: "Dimitra is my team lead, she signs off on my reviews."
    rf"(?:[\w-]+\s+){{0,2}}?(?:{ROLES_HELD})\b(?:\s+(?:on|of|for|at|in)\s+[^.?!,;]+)?(?:\s+now)?\s*(?:[,;][^?]*)?[.!]*$|"
    # Who someone is to the user: "Mei is my girlfriend.", "Ana is my sister, she lives in Faro." (KIN_EN below).
    r"^(?-i:[A-Z\u00c0-\u024f][\w'-]+|[\u4e00-\u9fff]{2,3})\s+is\s+my\s+(?:(?:younger|older|little|big|best|new)\s+)?"
    r"(?:sister|brother|mom|mum|mother|dad|father|wife|husband|girlfriend|boyfriend|partner|fianc[ée]e?|daughter|son|"
    r"friend|cousin|aunt|uncle|niece|nephew|neighbou?r|roommate|flatmate)\b",
    re.I,
)
# "美玲是我女朋友，我们在一起住了快三年了": who someone is to the user, said in Chinese (USER.md).
# Who someone is to the user, in Chinese (the relation rule's, and whom a sentence names: ``heuristic_companion``).
ZH_RELATIONS = (
    r"女朋友|男朋友|老婆|老公|妻子|丈夫|太太|先生|爱人|媳妇|伴侣|未婚妻|未婚夫|对象|"
    r"姐姐|哥哥|妹妹|弟弟|女儿|儿子|表姐|表妹|表哥|表弟|堂姐|堂妹|堂哥|堂弟|好朋友|朋友|室友|邻居|同事|老板|领导|上司"
)
RELATION_ZH = re.compile(
    rf"^(?P<name>[\u4e00-\u9fff]{{2,3}}|[A-Z][\w'-]+)是我的?(?P<rel>{ZH_RELATIONS})(?P<rest>[^。！!？?]*)"
)


# --- Chinese: tools, identity, soul -----------------------------------------------------------------------------------
ZH_TOOL_VOCAB = re.compile(
    r"部署|命令|脚本|服务器|数据库|接口|仓库|代码库|测试环境|生产环境|预发|线上环境|环境变量|端口|域名|配置文件|分支|"
    r"构建|编译|上线|集群|容器|镜像|流水线|密钥|日志"
)
ZH_TOOL_STRUCTURE = re.compile(r"[A-Za-z][\w.-]*|在|位于|跑在|部署在|地址|用|使用|是|运行|执行")
ZH_TOOL_USE = re.compile(
    rf"^(?:我们|团队|我们团队|我|大家)?(?:都|一般|平时|统一)?(?:用|使用|运行|执行|跑)\s*(?:{KNOWN_TOOLS})\b", re.I
)


FUTURE_ZH = re.compile(r"^(?:以后|今后|从现在开始|从现在起|从今以后|往后|接下来|下次|之后)[\s，,]*")
NAME_ZH = re.compile(
    r"^(?:你的名字(?:就)?(?:是|叫|改成|改为)|你(?:以后)?(?:就)?(?:叫|名叫|改叫|改名叫|改名为|自称)|"
    r"我(?:以后)?(?:就)?(?:叫|称呼|称|喊)你(?:为)?|(?:请)?称呼你自己(?:为)?|(?:你)?给(?:你)?自己起(?:个|一个)?名字(?:叫)?)"
    r"(?P<name>.+)$"
)
ATTRIBUTE_ZH = re.compile(
    r"^你的(?P<attr>表情符号|表情|emoji|头像|代词|人设|身份|角色|称号|昵称|口头禅|性别|物种|签名)(?:就)?(?:是|改成|改为|设为|换成)(?P<value>.+)$",
    re.I,
)
ROLE_ZH = re.compile(
    r"^你(?:现在)?(?:就)?是(?P<rest>(?:我的)?(?:一个|一名|一位|个)?.{0,12}?"
    r"(?:助手|助理|秘书|老师|教练|顾问|管家|伙伴|导师|翻译|编辑|机器人|专家|搭档|陪练|军师).*)$"
)
ZH_NAME_TAIL = re.compile(r"(?:吧|了|好了|就行|就好|哦|啊|呀|啦|[。！!~～\s\"'「」“”])+$")

ZH_MODALS = r"要|应该|应当|必须|得|需要|一定要|最好|尽量|总是|永远|始终|一直|不要|不能|不用"
ZH_NEGATIVE = r"别|不要|不许|不准|千万别|千万不要"
ZH_NOT_SOUL = r"担心|着急|客气|介意|急|怕|难过|生气|忘|管"
# Praise and laughter are not feedback on the agent's manner: "你太逗了", "你太有才了".
ZH_COMPLIMENTS = r"棒|好|厉害|聪明|可爱|牛|强|贴心|有用|给力|优秀|暖|逗|有才|有趣|好玩|搞笑|幽默|体贴|靠谱|神|赞|机智|懂我|会说话|神奇"
ZH_COMPLAINT = re.compile(
    rf"^你(?P<what>说话|回答|回复)?(?P<degree>太|有点儿?|实在太|真是太)(?P<adj>(?!{ZH_COMPLIMENTS}).+?)了?$"
)
ZH_SOUL_FORMS = (
    re.compile(rf"^你(?:{ZH_MODALS}|{ZH_NEGATIVE}|少|多)"),
    re.compile(rf"^(?:{ZH_NEGATIVE})(?:再)?(?!{ZH_NOT_SOUL})"),
    re.compile(r"^(?:用|使用)(?:中文|汉语|英文|英语|日语|简体中文|繁体中文|粤语|普通话|简体|繁体)"),
    re.compile(
        r"^(?:回答|回复|说话|语气|解释|讲话|措辞|输出|答案|文风|风格|语言).*(?:简短|简洁|短|精简|详细|正式|随意|轻松|礼貌|"
        r"直接|委婉|幽默|专业|通俗|口语化|温柔|耐心|客观|一点|一些|点儿)"
    ),
    re.compile(r"^(?:少|多)(?:用|说|加|讲|写|给|举)"),
    # The manner before the verb: "简短一点回答就好", "正式一些说话".
    re.compile(
        r"^(?:简短|简洁|精简|简单|详细|具体|正式|随意|轻松|礼貌|直接|委婉|幽默|专业|通俗|耐心|客观)(?:一?点儿?|一些)?地?"
        r"(?:回答|回复|说话|说|讲|写|解释|交流)"
    ),
)


# Where a second statement of the user's starts inside a sentence: ", so I …", " and now I …".
LATER_PART_EN = re.compile(r",\s*(?=[a-z])")
LATER_I_EN = re.compile(
    # "Work first, since you'll ask anyway: I'm a dentist at …": after an aside and a colon too.
    r"(?:(?:,\s*|\s+)(?:so|and|but|and now|so now|because|since|as)\s+|,\s*(?=I(?:'m| am)\s)|:\s+)"
    r"(?=I(?:'m)?\s+(?!think|guess|feel|hope|mean|was|had)\w)"
)


# A list without a verb after a fact of the family: "One older sister, a younger brother and a younger sister",
# "Two cats and a very old dog" (it must name people or animals: ``LISTED_NOUNS``).
LISTED_REASONS = frozenset({"About the user: the user's family, pets or health."})
VERBLESS_LIST_EN = re.compile(
    r"^(?:one|two|three|four|five|a|an|both|my)\s+(?!(?:[\w'-]+\s+){0,8}?(?:is|are|was|were|has|have|had|do|does|did|"
    r"will|would|can|could|lives?|works?|i|we|he|she|they|it|you)\b)[\w' -]+(?:,\s*[\w' -]+)*(?:\s+and\s+[\w' -]+)?[.!]?$",
    re.I,
)


# --- Chinese: durable facts about the user ----------------------------------------------------------------------------
TRANSIENT_ZH = re.compile(r"今天|今晚|刚才|刚刚|此刻|这会儿|昨天|明天|今早")
ZH_ADV = (
    r"(?:也|还|真的|很|非常|特别|比较|最|一直|还是|超级|超|挺|蛮|更|都|就|其实|本来|向来|从来|平时|一般|不太|不怎么|不是很|有点儿?|"
    r"现在|如今|目前|早上|晚上|上午|下午|中午|周末|平日|最近|近来|这阵子)*"
)
ZH_DURABLE_MY = (
    r"名字|生日|老婆|妻子|丈夫|老公|女儿|儿子|孩子|猫|狗|宠物|时区|邮箱|家乡|老家|母语|工作|职业|公司|老板|爱好|专业|城市|"
    r"电话|手机号|手机|电脑|笔记本|地址|血型|星座|年龄|身高|过敏|饮食|偏好|习惯|口味|团队|部门|上司|领导|同事|朋友|男朋友|女朋友|父母|爸妈|爸爸|"
    r"妈妈|哥哥|姐姐|弟弟|妹妹|家人|车|母校|学校|代词|家|"
    # "我妈每周三…", "我的中文是在成都学的": a parent or sibling said in one character, a language the user has.
    r"妈(?!的)|爸(?!的)|哥(?!们)|姐(?!们)|中文|英语|英文|日语|法语|德语|西班牙语|韩语|粤语|普通话|母语"
)
# Words between 我 and the verb of a present fact: "我这几年一直住在成都", "我目前在美团上班".
ZH_NOW = r"现在|目前|一直|平时|早上|晚上|上午|下午|中午|周末|平日|最近|近来|近期|这几年|这些年|这段时间|这阵子|如今|眼下|已经|终于|刚|也|还|都|就|从.{1,8}?(?:开始|起|以来)"
ZH_MOVE_OR_JOB = (
    r"搬到|搬去|搬回|搬家到|搬家去|移居|跳槽到|跳槽去|入职|加入|换了?(?:份|个)?(?:工作|公司)|"
    # A new job, said without 我 ("新工作今天开始了，在…做房屋测量", read as "我新工作…").
    r"新工作(?:今天|昨天|已经|上周|这周|终于)?(?:开始了|入职了)|新(?:公司|工作)(?:今天|昨天)?(?:是)?第一天|"
    r"(?:去|到|进)(?!年|过)了?[^，。；,;]{1,20}?(?:工作|上班|任职)"
)
# The thing given up said first, with 我 or, for a habit's verb, without it ("咖啡戒了", "烟不抽了"; never "雨不下了").
GIVEN_UP_FIRST_ZH = re.compile(
    r"^(?P<thing>[\u4e00-\u9fff]{1,6}?)我(?:先|暂时|就|也|都|现在|最近)*(?:不再|已经不|再也不|不)(?P<verb>[\u4e00-\u9fff])了|"
    rf"^(?P<thing2>(?!雨|雪|风|天|我|他|她|它|你|咱|大家|别人|{ZH_KIN})(?:(?!我)[\u4e00-\u9fff]){{1,4}}?)(?:最近|现在|已经|再也|早就|早|都|也)*"
    r"不再?(?P<verb2>[吃喝抽练学弹跳跑骑开养玩打去])了"
)
# A food or drink never taken, said first: "猪肉我是一口都不碰的", "香菜我从来不吃" (read as "我不碰猪肉"); not "这个我不吃".
DISLIKED_FIRST_ZH = re.compile(
    r"^(?P<thing>(?!这|那|它|今天|今晚|现在)[\u4e00-\u9fff]{1,5}?)我(?:是)?(?:从来|从小就?|一口|一点|根本|绝对|完全|向来|平时)?"
    r"(?:都|也)?不(?P<verb>吃|喝|碰|抽)(?:的)?(?=[，,。.!！]|$)"
)
DROPPED_FIRST_ZH = re.compile(
    r"^(?P<thing>[\u4e00-\u9fff]{1,6}?)我(?:已经|先|暂时|就|也)?(?P<verb>退掉|放弃|停掉|戒掉|取消|退|停|戒)(?:掉)?了|"
    r"^(?P<thing2>[\u4e00-\u9fff]{1,4}?|[A-Za-z][A-Za-z0-9 .+-]{0,20}?)我?(?:已经)?(?P<verb2>戒掉|戒|放弃|退掉|退订|取消订阅)了|"
    # A class that stopped, said of the class: "乌德琴的课停了" (read as 暂停了).
    r"^(?P<thing4>(?!这|那|今天|明天|下午|上午|晚上)[\u4e00-\u9fff]{1,6}?)的?(?:课|课程|班)(?:已经|先|暂时)?(?:停了|停掉了|取消了)|"
    # Put aside: "尤克里里先放一放" (read as 暂停了).
    r"^我?(?P<thing3>(?!这|那|我|它|工作|事|活)[\u4e00-\u9fff]{1,6}?)(?:我)?(?:就|先|暂时)?(?:放一放|放放|放下了|搁置了|(?P<verb3>暂停)了)"
)
# Who else "我…" can open on: "我朋友搬到了…" is the friend's move, not the user's.
ZH_NOT_ME = (
    rf"的|们|{ZH_KIN}|妈|爸|姐|哥|弟|妹|爷|奶|舅|姑|姨|叔|婶|邻居|室友|舍友|老师|同学|客户|房东|"
    r"觉得|想|希望|打算|准备|计划|要|会|可能|应该|他|她|它|让|帮|劝|建议|说|听说"
)
# "我们已经搬到了…", "我们又养了一只小狗": the household's home and pets, said by the user, are the user's (read as "我…").
WE_HOUSEHOLD_ZH = re.compile(
    rf"^我们(?=(?:已经|又|也|刚|终于|还|{ZH_TIME_WORDS})*[，,]?(?:搬到|搬去|搬回|搬家|住在|住|养了|养|买了房|买了(?:一)?[辆台部套]|把))"
)
USER_RULES_ZH: tuple[tuple[str, re.Pattern[str], float], ...] = (
    (
        # A meeting or a weekly place moved to another day or hour: "周会改到周四上午十点了", "健身房改成周一和周三去了".
        CHANGE_LABEL,
        re.compile(
            r"^(?:我的?)?[^，。；,;？?]{1,10}?"
            r"(?:改到|改成|挪到|推迟到|提前到|调到|换到|换成)了?(?:每)?[^，。；,;？?]{0,12}?(?:周|星期|礼拜|月|号|日|点|上午|下午|早上|晚上)"
        ),
        0.7,
    ),
    (
        # What the user could not eat or drink and now can: "微辣现在可以接受", "我现在能吃香菜了".
        CHANGE_LABEL,
        re.compile(
            r"^(?!我)[^，。；,;？?]{1,8}?(?:现在|已经|如今|终于)也?(?:可以|能)(?:接受|吃|喝)了?$|"
            r"^我(?:现在|已经|如今|终于)也?(?:可以|能)(?:接受|吃|喝)(?:一点)?[^，。；,;？?]{1,8}了?$"
        ),
        0.7,
    ),
    (
        CHANGE_LABEL,
        re.compile(
            rf"^我(?:(?:{ZH_TIME_WORDS}|前不久|又)[，,]?)*(?:{ZH_MOVE_OR_JOB}|换到|转到|改用|换成|换用|开始用|搬家了|"
            r"最喜欢的[\u4e00-\u9fff]{1,6}?(?:现在|已经)?(?:变成了?|改成了?|换成了?)|从[^，。；,;]{1,12}?(?:辞职|离职)|"
            r"辞职|离职|被[^，。；,;？?]{0,8}?(?:裁员?|辞退|开除|解雇|炒(?:了)?(?:鱿鱼)?)了|离开了|戒了|放弃了|退掉了|停掉了|暂停了|退订了|戒掉了|取消了|不再|改去?(?:喝|吃|用|骑|坐|开|学|练|上|跳|打)|换了?(?:个|台|部|辆)|已经不|不(?!想|要|用|必|会|敢|好意思|行|错|早|了).{1,8}了(?:$|[，,])|把.{1,12}?(?:卖|送人|扔)掉?了|改成|改吃|开始吃|成了|变成|(?:已经|早就|终于)?(?:退休|毕业)|"
            # A decision to take up or give up a way of eating: "我决定吃素", "我决定从明天开始戒酒".
            r"决定(?:要)?(?:从.{1,6}?(?:开始|起))?(?:开始)?(?:吃素|吃全素|戒|不再|不吃|不喝|改吃))"
        ),
        0.75,
    ),
    (
        # A habit given up and the one that took its place, said object first: "太极拳不练了，现在改成每天早上去游泳",
        # "咖啡不喝了，改喝茶了".
        CHANGE_LABEL,
        re.compile(
            r"^(?!我)[^，。；,;？?]{1,20}?把我(?:给)?(?:裁|辞退|开除|解雇|炒)(?:掉|了)|"
            r"^(?!我)[\u4e00-\u9fff]{1,6}?我?(?:不再|已经不|不)[\u4e00-\u9fff]了[，,](?:[^，。；,;？?]{1,10}[，,])?(?:现在|如今|最近)?"
            r"(?:都)?(?:改成|改为|换成|改)[^，。；,;？?]{1,16}|"
            # Given up, with the reason after it: "韩语我不学了，实在没时间", "咖啡我已经不喝了".
            # "素食我坚持不下去了", "西班牙语课我退掉了": kept up no longer, or dropped.
            r"^(?!我)(?:[\u4e00-\u9fff]{1,5}的)?[\u4e00-\u9fff]{2,6}?我(?:(?:不再|已经不|不)[\u4e00-\u9fff]{1,2}|[\u4e00-\u9fff]{1,2}不(?:下去|了|动|起)|"
            r"(?:退|放弃|停|戒|取消|扔|卖)(?:掉|了)?)了(?:[，,。.！!]|$)"
        ),
        0.7,
    ),
    (
        # Something of the speaker's given away or sold, said thing first, a reason between:
        # "兔子老是抓人，送给楼下邻居家的孩子了", "车上个月卖了".
        CHANGE_LABEL,
        re.compile(
            r"^(?!我)[\u4e00-\u9fff]{1,4}?(?:[^，。；,;？?]{0,12}[，,])?(?:已经|上个月|前几天|去年|就|也)?"
            r"(?:送给|送人|卖给|卖掉|卖了|扔了|扔掉|送走)"
        ),
        0.65,
    ),
    (
        # A move or a new job after other steps: "我收拾行李搬到了厦门", "我辞职去了美团上班".
        CHANGE_LABEL,
        re.compile(
            rf"^我(?:(?:{ZH_TIME_WORDS})[，,]?)*(?:(?!{ZH_NOT_ME})[^，。；,;]){{1,12}}?[，,]?(?:然后|就|又|并|再|便)?"
            rf"(?:{ZH_MOVE_OR_JOB})"
        ),
        0.7,
    ),
    (
        # How the user gets to work or school: "我骑电动自行车上班", "我现在每天坐地铁去公司".
        "how the user commutes",
        re.compile(
            rf"^我(?:(?:{ZH_NOW}|每天|平时|一般|通常)[，,]?)*(?:骑|坐|开|搭|乘|走路)[^，。；,;？?]{{0,8}}?"
            r"(?:上班|上学|去公司|去学校|去办公室|通勤)|"
            # The way said after it: "上班开车 单程四十分钟", "上学都坐地铁".
            rf"^我(?:(?:{ZH_NOW}|每天|平时|一般|通常)[，,]?)*(?:上班|上学|通勤)(?:的话)?[，,\s]*(?:都|就|一般|平时)?"
            r"(?:开车|骑车|骑|坐|搭|乘|走路|打车)"
        ),
        0.7,
    ),
    (
        "the user's routine",
        re.compile(
            r"^我(?:现在|平时|一般|通常)?(?:每天|每周.|每晚|周.)?.{0,6}?(?:点|點)(?:半|钟)?.{0,4}(?:起床|睡觉|上班|下班|健身|跑步|吃饭)"
        ),
        0.7,
    ),
    (
        "a stated preference",
        re.compile(
            rf"^我{ZH_ADV}(?:喜欢|爱|热爱|讨厌|不喜欢|偏好|偏爱|喜爱|受不了|反感|害怕|怕|习惯|不习惯|爱吃|爱喝|不爱|"
            r"不吃|不喝|不能吃|吃素|不碰|忌口|倾向于|钟爱|痴迷|迷|介意|不介意)(?P<object>.*)$"
        ),
        0.8,
    ),
    ("the user's name", re.compile(r"^我(?:的名字)?(?:叫|是叫|名叫)(?P<name>.+)$"), 0.85),
    (
        "where the user lives or works",
        re.compile(
            rf"^我(?:(?:{ZH_NOW})[，,]?)*(?:住在|住|家住|生活在|定居在|定居|落户|安家|来自|出生在|出生于|就职于|任职于|"
            r"供职于|受雇于|在.{1,20}?(?:工作|上班|上学|读书|读博士?|读硕士?|读研|念书|生活|长大|出生|实习|任职|就职|教书|任教|住|安家|定居|落户|当|买了房|"
            # "我在一家牙科诊所做护士": a role after 做 ends in what names a trade (师 士 员 生 工 …).
            r"做[\u4e00-\u9fff]{0,3}?(?:师|士|员|生|工|家|官|经理|主管|编辑|记者|设计|会计|销售|客服)(?:[，,。.]|$)|"
            # Or a line of work at a place named as an institution: "我现在在区图书馆做古籍修复".
            r"(?<=馆|院|所|局|厂|司|校|行|站|心|园|部|社)做(?![了过饭菜作业家务梦])[\u4e00-\u9fffA-Za-z]{2,8}(?:[，,。.]|$)|"
            r"租了房|租房)|被.{1,20}?(?:录用|录取|聘用|雇用|招进)|拿到了?.{1,20}?的\s*offer)"
        ),
        0.8,
    ),
    # Where the user studied, the degree or the subject said: "我在杨凌读兽医硕士那几年", "我是在武汉读的药学", "我本科是在厦门
    # 大学读的" (not "我在家读书", "我在地铁上读小说").
    (
        "the user's studies",
        re.compile(
            r"^我(?:的)?(?:本科|硕士|博士|研究生|大学|研)?(?:是)?在(?!家|床|车|地铁|路)[^，。；,;？?]{1,20}?(?:读|念|上|攻读|修)(?:了|过|的)?"
            r"[^，。；,;？?]{0,8}?(?:博士|硕士|研究生|研|本科|大学|学位|MBA|PhD|[\u4e00-\u9fff]学(?:专业)?(?=的|$|[，,。]))|"
            r"^我(?:的)?(?:本科|硕士|博士|研究生|大学)(?:是)?在[^，。；,;？?]{1,20}?(?:读|念|上)的"
        ),
        0.75,
    ),
    # The home shared with someone, named first: "我跟浩然住在…", "我和老公一起生活在多伦多" (not "我跟他说…").
    (
        "where the user lives or works",
        re.compile(
            rf"^我(?:跟|和|与)(?!他们|她们)[^，。；,;说讲聊问告]{{1,12}}?(?:一起)?(?:(?:{ZH_NOW})[，,]?)*"
            r"(?:住在|生活在|定居在|定居|安家|搬到|搬去|在[^，。；,;]{1,20}?(?:住|生活|安家|定居)(?!了?一))"
        ),
        0.75,
    ),
    # "我对花粉过敏", and the thing first: "我芒果过敏".
    ("the user's allergy", re.compile(r"^我(?:对.+?|[\u4e00-\u9fff]{1,6}?)(?:过敏|不耐受)"), 0.85),
    # The household's home, and a new one: "我们家在宁波", "新家在Kimberley" (said without 我, read as the speaker's).
    (
        "a fact about the user's life",
        re.compile(r"^我(?:们)?(?:的)?新?家(?:现在|就)?(?:在|住在|安在)(?![这那哪])"),
        0.75,
    ),
    # A vehicle or a machine of the user's: "我有一辆Vespa", "我刚买了一台新的MacBook".
    (
        "what the user owns",
        re.compile(
            r"^我(?:又|也|还|刚|新)?(?:有|买了|入手了|换了)(?:一|两|\d+)?(?:辆|台|部|架)(?:新的?|二手的?)?[A-Za-z\u4e00-\u9fff]"
        ),
        0.7,
    ),
    (
        "a fact about the user's life",
        # Not what it just did: "猫把花瓶打翻了", "狗又叫了一晚上".
        re.compile(
            rf"^我(?:的)?(?:{ZH_DURABLE_MY})(?!把|被|又|刚|今天|昨天|刚才|一直在|在(?:睡|叫|吃|闹|哪)|都快|都被|快要|快被|差点)"
        ),
        0.75,
    ),
    (
        "the user's family, pets or health",
        re.compile(
            r"^我(?:又|也|还|刚|新)?(?:有|养了|养着|养|家里有)(?:一|两|二|三|四|五|六|几|\d+)?(?:个|只|条|位|匹)?.{0,4}?"
            r"(?:猫|狗|孩子|女儿|儿子|宠物|兄弟|姐妹|鱼|兔子|鸟|糖尿病|哮喘|高血压|偏头痛|(?<![点些])(?![点些])[\u4e00-\u9fff]{1,3}(?:病|症|炎))"
        ),
        0.75,
    ),
    # A lack the body has, found by a test: "我缺维生素D", "我有点贫血", "我缺铁" (said after "医生说").
    (
        "the user's family, pets or health",
        re.compile(
            r"^我(?:一直|有点|有些|比较|严重)?(?:缺(?:乏)?(?:维生素[A-Za-z0-9]{1,3}|铁|钙|锌|镁|叶酸)|贫血|有(?:点)?贫血)"
        ),
        0.75,
    ),
    (
        "a habit",
        re.compile(
            r"^我(?:现在|目前|如今)?(?:早上|晚上|上午|下午|中午|周末|平日)?(?:每天|每周|每个?(?:星期|礼拜)|每晚|每个月|每年|通常|一般|平时|经常|总是|从不|从来不|很少|习惯|"
            # A count in a day or a week, said with 一: "我一天要喝五六杯奶茶", "我一周跑三次步" (not "我一天都没吃饭").
            r"(?=一(?:天|周|个?星期|个?礼拜|个?月|年)(?:要|得|能|会|大概|至少|差不多)?(?:喝|吃|抽|跑|游|练|看|睡|写|读|打|骑)"
            r"[^，。；,;]{0,4}?(?:[一二两三四五六七八九十几\d]+|好几)(?:杯|包|次|趟|个|本|小时|公里|根|瓶|顿|页|圈))|"
            # A class on a weekday, without 每: "我周六上午去上陶艺课".
            r"(?=(?:周|星期|礼拜)[一二三四五六日天](?:上午|下午|晚上|早上)?(?:都)?去?(?:上|练|学)[\u4e00-\u9fff]{1,4}?课)|"
            # Somewhere on a weekday: "我周三晚上在社区合唱团唱男低音".
            r"(?=每?(?:周|星期|礼拜)[一二三四五六日天](?:上午|下午|晚上|早上|中午)?[^，。；]{0,6}?(?:都)?(?:在|去)[\u4e00-\u9fff]{2,}))"
            r"(?P<rest>.+)$"
        ),
        0.65,
    ),
    (
        "the languages the user speaks",
        re.compile(r"^我(?:会说|会讲|说|讲)(?:中文|英语|英文|日语|法语|德语|西班牙语|粤语|普通话|韩语)"),
        0.75,
    ),
    (
        "the user's work or studies",
        re.compile(
            rf"^我{ZH_ADV}(?:下班(?:以|之)?后|放学(?:以|之)?后)?(?:在|正在|最近在)?(?:学|学习|练|备考|负责|研究|从事)(?!了)"
        ),
        0.7,
    ),
    # A course signed up for: "我报了周末的驾校", "我报名了一个日语班".
    (
        "the user's work or studies",
        re.compile(
            r"^我(?:最近|刚|已经|今年)?(?:报了|报名了|报名参加了|报上了)[^，。；]{0,10}?(?:班|课|驾校|培训|课程|考试)"
        ),
        0.7,
    ),
    ("the user's work", re.compile(r"^我(?:的工作是|是做|做)(?!了|饭|菜|家务|作业|梦)"), 0.7),
    ("what the user uses", re.compile(rf"^我(?:(?:{ZH_NOW}|平时|一般|习惯|主要)[，,]?)*(?:用|使用)(?!了)"), 0.65),
    (
        # Something taken up: "我最近开始攀岩了", "我今年开始学吉他了" (a feeling or the weather is not: "我开始担心了",
        # "开始下雨了").
        "a habit",
        re.compile(
            rf"^我(?:(?:{ZH_NOW}|又|今年|去年)[，,]?)*开始(?!觉得|担心|怀疑|后悔|害怕|紧张|明白|理解|想|有点|感觉|生气|着急|用|吃|下雨|下雪|刮风|降温|升温|变冷|变热|变天|放假|堵车)"
            r"[\u4e00-\u9fff]{1,6}?了"
        ),
        0.65,
    ),
    ("the user's age", re.compile(r"^我(?:今年)?(?:\d+|[一二三四五六七八九十]+)岁"), 0.75),
    (
        # A plan with a place: "我打算明年去成都读书", "我准备下周到杭州开会".
        "the user's plans",
        re.compile(
            rf"^我(?:(?:{ZH_TIME_WORDS})[，,]?)*(?:计划|打算|准备)(?:(?:{ZH_TIME_WORDS}|下个?月|下周|下星期|下礼拜|明年|"
            r"年底|月底|国庆|春节|暑假|寒假)[，,]?)*(?:去|到|飞|回)[^，。；,;]{1,12}?(?:出差|旅行|旅游|度假|开会|参会|读书|留学|"
            r"探亲|工作|定居|玩)"
        ),
        0.65,
    ),
    (
        "who the user is",
        re.compile(r"^我(?:现在|目前)?是(?!说|问|不是|想|觉得|认真|开玩笑|在|真的|故意|来|要)(?P<rest>.+)$"),
        0.7,
    ),
)
CALL_ME_ZH = re.compile(
    r"^(?:你)?(?:以后)?(?:就|可以)?(?:叫我|称呼我|喊我|管我叫)(?P<name>.+?)(?:就行了|就行|就好了|就好|就可以了|就可以|吧|好了)?$"
)
ZH_REACTION = re.compile(r"^(?:这个|那个|它|这样|你|这|那|此)")


# --- The agent's offer to remember, and its acceptance ----------------------------------------------------------------
OFFER_EN = re.compile(
    r"(?:(?:should|shall|can|may) I|(?:do you want|want|would you like) me to)\s+(?:remember|note down|note|save|"
    r"keep in mind|make a note of|add)(?:\s+that)?\s+(?P<content>[^?]+?)(?:\s+(?:to|in) (?:my|your) (?:memory|notes))?\s*\?",
    re.I,
)
OFFER_ZH = re.compile(
    r"(?:要不要|需不需要|要|需要)?我(?:帮你)?(?:记住|记下来|记下|记一下)(?P<content>[^？?]+?)(?:吗|么|嘛)?[？?]"
)
AFFIRMATION = re.compile(
    r"^(?:yes|yeah|yep|yup|sure|ok|okay|please do|please|do it|go ahead|absolutely|definitely|of course|correct|"
    r"that's right|exactly|好|好的|好啊|是的|是|对|对的|可以|行|嗯|要|需要|记吧|记下吧|麻烦了)"
    r"(?:[\s,，!！.。]+(?:please|thanks|thank you|do it|go ahead|please do|谢谢|好的|记吧|麻烦了))*[\s!！.。]*$",
    re.I,
)


# --- Why nothing is written -------------------------------------------------------------------------------------------
NO_WRITE_REASONS = {
    "hypothetical": ("A hypothetical, not a fact.", 0.8),
    "question": ("A question, not a fact to remember.", 0.9),
    "smalltalk": ("A greeting, thanks or small talk.", 0.9),
    "long": ("Too long to be a single fact.", 0.6),
}


# "The user's sister lives in London.", "用户的爸妈住在Vára": a fact about someone in the user's life, said by the user,
# describes that person, so it goes to MEMORY.md; who they are to the user ("The user's boss is Noor.", "The user's
# daughter's name is Clara.", "用户的女朋友叫美玲") describes the user and stays in USER.md.
# Words that open a sentence and are not a name, though capitalised there.
NOT_A_NAME_EN = (
    r"The|This|That|These|Those|It|He|She|They|We|You|I|My|Our|Your|Their|His|Her|There|Here|Everyone|"
    r"Everybody|Nobody|Someone|Somebody|Anyone|Each|Every|All|Both|Most|Some|One|Nothing|Everything|"
    r"(?:Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)day|Today|Tomorrow|Tonight|Yesterday"
)
KIN_EN = (
    r"sister|brother|mom|mum|mam|mammy|mummy|mommy|mama|ma|mother|dad|da|pa|daddy|papa|father|parents|wife|husband|girlfriend|"
    r"boyfriend|partner|fianc[ée]e?|"
    r"daughter|son|kids|children|friend|cousin|aunt|uncle|grandma|grandpa|grandmother|grandfather|niece|nephew|"
    r"neighbou?r|roommate|flatmate|in-laws|mother-in-law|father-in-law"
)
# A parent named by what the user calls them: "Mum's still in Chengdu", "Dad pulled teeth for forty years".
BARE_KIN_EN = re.compile(
    r"^(?:Mum|Mom|Mam|Mammy|Mummy|Dad|Da|Daddy|Grandma|Grandpa|Gran|Granny|Nan|Nana)(?:['\u2019]s)?\s+[a-z]"
)
KIN_FACT_EN = re.compile(
    rf"^The user's (?:(?:little|younger|older|elder|big|baby|kid|twin|best|oldest|youngest|eldest|step|half)[\s-]+)?"
    rf"(?:{KIN_EN})(?:\s+(?-i:[A-Z\u00c0-\u024f\u4e00-\u9fff])[\w\u4e00-\u9fff'-]*)?"
    # "The user's mother's still in Ilam": the kin's "'s" is "is" before where they are or what they still do.
    r"(?:'s(?=\s+(?:still|now|also|been|got|in|at|from|retired|moving|living|working|a|an)\b))?\s+"
    r"(?!is (?:called |named )?(?-i:[A-Z\u00c0-\u024f\u4e00-\u9fff])|name\b|'s name\b|is the user's\b)[a-z]",
    re.I,
)
KIN_FACT_ZH = re.compile(
    r"^用户的?(?:爸妈|父母|爸爸|妈妈|父亲|母亲|姐姐|哥哥|妹妹|弟弟|妈|爸|哥|姐|老婆|老公|妻子|丈夫|女朋友|男朋友|女儿|儿子|孩子|朋友|"
    r"岳母|岳父|婆婆|公公|爷爷|奶奶|外公|外婆|邻居|室友)(?!叫|名叫|的名字|是[^，。；,;]{1,6}(?:[。.]|$))"
)
LISTED_NOUNS = re.compile(rf"\b(?:{KIN_EN}|{PETS}|boys?|girls?|twins?|kids?|child(?:ren)?|siblings?)\b", re.I)
