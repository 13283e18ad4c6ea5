"""A life event that leaves something lasting, read by the kind of event rather than by a wording.

"Passed my UAE driving test, on the fourth try!", "My little brother Usman got into King Edward Medical University",
"The wine academy in Yerevan has finally certified me as a sommelier", "I've taken up the saxophone", "Narek and
his wife have had their first baby", "我上个月考到了巴基斯坦的驾照", "公司给我报了斯瓦希里语的高级班". Each is told as news,
often with "this week" or "last month" and an exclamation, which the last reading of ``heuristic_durable`` takes for
the moment. What such a sentence leaves is lasting: a licence held, a school attended, a child, a hobby, a home.

The events are the kinds a life-event inventory lists (education, work, family, home, pastimes, health), each
by the verbs that say it happened and, where the verb alone says too little ("passed", "bought", 拿到了), by the kind
of thing it leaves. A sentence is one only when:

- it says the event happened: no negation, wish, plan, condition or future before the verb (didn't, hope to, if,
  will; 没, 想, 打算, 要, 如果);
- the event is someone's in the speaker's life: the speaker (no subject, I, we, or "me"/"us" after the verb), their
  kin ("my brother"), or a person named at the start ("Saba's son Bilaal", "Narek and his wife"); never "you".

A fallback like the reading it joins: consulted only when no phrase rule found anything in the turn.
"""

from __future__ import annotations

import re

from sessions_app import heuristic_rules as rules
from sessions_app.heuristic_reading import is_chinese

SPEAKER = "speaker"
OTHER = "other"

# --- English ----------------------------------------------------------------------------------------------------------
_POSS = r"(?:my|our|his|her|their|the|a|an|its)"
_CREDENTIAL = (
    r"(?:(?!\d)[\w'-]+\s+){0,3}(?:test|exams?|boards|bar|licen[cs]e|finals|viva|degree|diploma|certificate|certification|"
    r"PhD|doctorate|master's|masters|bachelor's|MBA|qualification|black belt|citizenship|residency|visa|green card|"
    r"scholarship|place|offer)"
)
_PLACE_OF_STUDY = r"(?:school|university|uni|college|nursery|kindergarten|daycare|preschool|an? apprenticeship)"
_KEEPS = (
    r"(?:[\w'-]+\s+){0,3}(?:house|flat|apartment|home|cottage|farm|plot|land|car|van|truck|motorbike|motorcycle|"
    r"scooter|bike|boat|puppy|dog|kitten|cat|horse|season ticket|membership|allotment|drone|camera|piano|guitar|"
    rf"kayak|caravan|camper|campervan|tractor|laptop|e-bike|telescope|sewing machine|pup|{rules.PETS})"
)
_BUSINESS = rf"(?:[\w'-]+\s+){{0,3}}(?:{rules.BUSINESSES}|stall)"
_GROUP = r"(?:[\w'-]+\s+){0,3}(?:club|team|choir|band|orchestra|gym|league|society|squad|troupe|crew|union|association)"
_CHILD = (
    r"(?:first|second|third|fourth|new)?\s*(?:baby|son|daughter|boy|girl|child|grandchild|grandson|granddaughter|twins)"
)
_ME = r"(?:me|us)"
_EVENT_EN = re.compile(
    r"\b(?:"
    rf"(?:passed|aced|cleared|(?<!'ve )(?<!have )(?<!has )got|earned|received|was awarded|won)\s+{_POSS}\s+{_CREDENTIAL}\b|"
    r"(?:got|gotten)\s+into\s+(?!it\b|that\b|this\b|trouble\b)|"
    r"(?:got|been|was|were|is|are)\s+(?:accepted\s+(?:to|into|for|at|on|by)|admitted\s+(?:to|into))\b|"
    rf"(?:accepted|admitted|certified|hired|promoted|appointed|licensed)\s+{_ME}\b|"
    rf"(?:taken|took|taking)\s+{_ME}\s+on\b|"
    # A post given: "The ski school has made me head instructor", "they've named me deputy editor".
    rf"(?:made|named|appointed|promoted|elected)\s+{_ME}\s+(?:to\s+)?(?:an?\s+|the\s+|its\s+|their\s+)?(?:[\w-]+\s+){{0,2}}?"
    r"(?:manager|director|instructor|chef|head|lead|partner|captain|coach|editor|supervisor|officer|teacher|"
    r"coordinator|principal|president|chair|secretary|treasurer|foreman|boss|consultant|registrar)\b|"
    r"(?:certified|qualified|registered|ordained|licensed)\s+as\b|"
    r"graduated\b|enrolled\s+(?:in|at|on)\b|signed\s+up\s+(?:for|with|to)\b|"
    r"(?:taken|took)\s+up\b|"
    rf"started\s+(?:at\s+(?!\d)|as|{_PLACE_OF_STUDY}|(?:a|her|his|their|my|our)\s+(?:new\s+)?(?:job|course|apprenticeship|"
    r"residency|internship|master's|PhD|degree)|(?:working|work|teaching|studying)\s+(?:at|for|as)|learning|playing)\b|"
    r"(?:got|been|was|were)\s+(?:promoted|hired|appointed|elected|transferred|posted|diagnosed)\b|"
    rf"(?:had|welcomed|adopted)\s+{_POSS}\s+{_CHILD}\b|(?:had|welcomed)\s+twins\b|"
    r"(?:got|are|is|am|been)\s+(?:married|engaged|divorced)\b|"
    rf"(?:adopted|rescued)\s+(?:{_POSS}\s+|{_ME}\b|two\s+|three\s+)|"
    rf"(?:bought|rented|inherited|got)\s+{_POSS}\s+{_KEEPS}\b|"
    # A make and a model bought: "a second-hand Toyota Prius", "a Fender Stratocaster".
    rf"(?:bought|purchased)\s+{_POSS}\s+(?:(?!(?:from|of|for|with|to|at|in|on|about)\b)[\w'-]+\s+){{0,2}}"
    r"(?-i:[A-Z][a-z][\w-]*\s+[A-Z0-9][\w-]*)|"
    rf"(?:opened|launched|founded|set up|started)\s+{_POSS}\s+(?:own\s+)?{_BUSINESS}\b|"
    rf"joined\s+{_POSS}\s+{_GROUP}\b|"
    r"(?:moved|relocated)\s+(?:to|into|back to|in with)\b|retired\b"
    r")",
    re.I,
)
# Before the event: not that it happened ("didn't pass", "hope to get into", "if I pass", "will start").
_NOT_HAPPENED_EN = re.compile(
    r"n't\b|\b(?:not|never|no|if|when|once|unless|will|'ll|shall|would|could|should|might|may|must|can|going to|gonna|"
    r"about to|want|wants|wanted|hope|hopes|hoping|plan|plans|planning|trying|try|wish|need|needs|to)\b|\?",
    re.I,
)
_FIRST_PERSON_EN = re.compile(r"\b(?:I|I've|I'm|we|we've|we're|me|us)\b", re.I)
_KIN_OPENING = re.compile(r"^(?:my|our)\s+", re.I)
# A person named first: "Saba's son Bilaal", "Narek and his wife", "Dilnoza". Not "The …", "This …", a month or a day.
_NAMED_OPENING = re.compile(
    rf"^(?!(?:{rules.NOT_A_NAME_EN}|Last|Next|(?i:{rules._MONTHS}))\b)[A-Z\u00c0-\u024f][\w\u00c0-\u024f-]+"
    r"(?:'s\s+\w+(?:\s+[A-Z][\w-]+)?|\s+and\s+(?:his|her|their)\s+\w+)?\s+(?:has\s+|have\s+|had\s+|just\s+|finally\s+)*$"
)
# Before a verb with no subject, words of when or how only: "Finally passed …", "Well, joined …".
_NO_SUBJECT_EN = re.compile(
    r"^(?:(?:finally|just|also|recently|officially|eventually|so|and|well|oh|yes|yay|at last|today|yesterday|"
    r"(?:last|this) \w+)[\s,!:]*)*$",
    re.I,
)
_YOU = re.compile(r"\b(?:you|your)\b", re.I)


def _whose_en(sentence: str) -> str | None:
    match = _EVENT_EN.search(sentence)
    if match is None:
        return None
    before, event = sentence[: match.start()], match.group(0)
    done_to_me = re.search(rf"\b{_ME}\b", event, re.I)  # "Bagratuni Dental, a clinic in Agarak, has taken me on"
    if _YOU.search(before) or _NOT_HAPPENED_EN.search(before) or (len(before.split()) > 7 and not done_to_me):
        return None
    # The subject nearest the verb decides: "I think she graduated", "I know someone who got engaged" are not mine.
    nearest = re.split(r"\b(?:I|I've|I'm|we|we've|we're)\b", before, flags=re.I)[-1]
    if re.search(r"\b(?:he|she|they|someone|somebody|people|who|that)\b", nearest, re.I):
        return None
    if _NO_SUBJECT_EN.match(before.strip()) or _FIRST_PERSON_EN.search(before) or done_to_me:
        return SPEAKER
    if _KIN_OPENING.match(before) or _NAMED_OPENING.match(before):
        return OTHER
    return None


# --- Chinese ----------------------------------------------------------------------------------------------------------
_CREDENTIAL_ZH = r"(?:驾照|执照|证书|证|学位|文凭|签证|绿卡|offer|资格|奖学金|居留|身份|名额|黑带)"
_EVENT_ZH = re.compile(
    rf"(?:考上|考到|考过|考下|拿到|领到|拿下|办下)了?[^，。；！]{{0,14}}?{_CREDENTIAL_ZH}|考上了|被[^，。；]{{1,14}}录取|录取了|"
    r"毕业了|报了[^，。；]{1,14}(?:班|课|课程)|学起了|开始学|入职了|升职了|升为|升了[^，。；]{0,4}(?:主管|经理|主任|组长)|"
    r"调到[^，。；]{1,14}(?:了|当|做)|退休了|开了(?:一|个|家|间)[^，。；]{0,10}(?:店|馆|铺|诊所|工作室|公司|摊)|"
    r"生了(?:个|一个|一对)?(?:儿子|女儿|宝宝|孩子|二胎|老二|双胞胎)|怀孕了|结婚了|订婚了|离婚了|领证了|"
    r"领养了|收养了|养了(?:[一两二三四五六七八九十几\d]+)(?:只|条|匹|头)|买了(?:房|车|(?:一)?(?:套|辆|栋|块)[^，。；]{0,8})|"
    r"搬(?:到|进|去)(?:了[^，。；]{1,14}|[^，。；]{1,14}了)|加入了[^，。；]{1,14}(?:队|团|俱乐部|合唱团|乐队|协会|社)|确诊了|查出(?:了)?[^，。；]{1,8}(?:病|症)"
)
_NOT_HAPPENED_ZH = re.compile(r"没|不|别|想|打算|准备|要|希望|如果|要是|可能|也许|将|会|能|快|[？?]|你|您")
# Before the event, only when it happened: "上个月", "去年底", "终于", "总算".
_WHEN_ZH = re.compile(
    r"(?:(?:上|下|这|那|去|今|前)?(?:个)?(?:月|年|周|星期|礼拜|阵子|段时间)(?:底|初|中|末)?)?(?:正式|终于|总算|已经|也|刚刚|刚|又|就)*"
)
_KIN_ZH = r"(?:爸|妈|哥|姐|弟|妹|老公|老婆|丈夫|妻子|儿子|女儿|孩子|朋友|表|堂|外甥|侄)"
# A place first is not a person: "楼下新开了一家奶茶店".
_PLACE_ZH = re.compile(r"楼下|楼上|对面|隔壁|附近|街上|路口|门口|村里|小区|镇上|城里|这边|那边|这里|那里|新$")
# A person first: 他/她, a name of two or three characters or in Latin letters, or a name's kin ("欣然的哥哥").
_OTHER_ZH = re.compile(
    rf"^(?:他|她)|^(?:[\u4e00-\u9fff]{{2,3}}|[A-Z][\w-]+)(?:的?{_KIN_ZH}[\u4e00-\u9fff]?)?(?:也|终于|总算|已经)?$"
)


def _whose_zh(sentence: str) -> str | None:
    match = _EVENT_ZH.search(sentence)
    if match is None:
        return None
    clause = re.split(r"[，,；;]", sentence[: match.start()])[-1].strip()
    if _NOT_HAPPENED_ZH.search(clause) or len(clause) > 16:
        return None
    if "我" in clause:  # "我上个月考到了…", "公司给我报了…"; "我弟弟考上了…" is the brother's.
        return OTHER if re.search(rf"我(?:们)?(?:的)?{_KIN_ZH}", clause) else SPEAKER
    if _WHEN_ZH.fullmatch(clause):  # No subject at all: the speaker's (Chinese drops it).
        return SPEAKER
    return OTHER if _OTHER_ZH.search(clause) and not _PLACE_ZH.search(clause) else None


def milestone_whose(sentence: str) -> str | None:
    """``SPEAKER`` or ``OTHER`` when ``sentence`` tells a life event that happened and leaves something lasting (see
    the module docstring), else None."""
    return _whose_zh(sentence) if is_chinese(sentence) else _whose_en(sentence)
