"""Lines a fact takes back by naming what stopped being true, where no attribute key joins the two lines.

- A negation that names the old value: "Is not at Halvorsen Ltd anymore, joined Brightwave." takes back "Works at
  Halvorsen Ltd."; "Doesn't ride the Vespa anymore." "Bought a Vespa GTS."; "用户已经不喝咖啡了" "用户喜欢喝咖啡".
  The line must be about the same person, not negate the value itself, and hold it in the relation the fact
  negates: "Doesn't live in London anymore" takes back "Lives in London", not "Has a sister in London".
- A job that ended and names no employer ("Retired.", "Got laid off.", "Mei已经退休了") takes back the same person's
  lines that say where they work ("Mei是梅，华东物流有限公司的").
- Food the person now accepts: "微辣现在可以接受" takes back "用户不吃辣…", "Can eat spicy food now." "Doesn't eat it".
- A loss: "Biscuit passed away in June; adopted a kitten." takes back "Has a beagle named Biscuit."
- Something given up: "Sold the Brompton." takes back "Bought a Brompton."; "用户把自行车卖了。" "用户有一辆自行车。".
- A request to forget: "Asked the agent to forget their home address." takes back the lines that state the
  home address ("The user's home address is …"), and "用户要求忘掉自己的住址。" those that state 住址.

``takeback_lines(fact, content)`` returns those lines; ``is_forget_request(fact)`` says whether the fact is a
request to forget (the guardian refuses one that finds nothing to take back).
"""

from __future__ import annotations

import re

from guardian_app.write.attribute_words import DISPOSED_EN, DISPOSED_ZH, HAS_EN, KIND_WORDS, TOOL_TO_CATEGORY
from guardian_app.write.forget import forgotten_lines
from guardian_app.write.whose import BULLET, person, subject, the_users, worker
from reflection_site import glossary, memory_files
from reflection_site.text import CJK_RUN, chinese_name, content_words, stem, stop_words, words

_CAP = r"(?-i:[A-Z][\w&'-]*)"
# "not at Halvorsen Ltd anymore", "no longer drives the Vespa", "doesn't work for Acme and Sons any more".
_NEGATED_VALUE_EN = re.compile(
    rf"(?:\bno longer|\bnot|n't)\s+(?:[a-z]+\s+){{0,2}}?(?:(?:at|with|in|for|from|the|a|an|my|their|his|her)\s+)*"
    rf"(?P<v>{_CAP}(?:\s+(?:(?:and|of|&)\s+)?{_CAP}){{0,3}})",
    re.I,
)
_STILL_NEGATED_EN = re.compile(r"\b(?:anymore|any more|any longer)\b|\bno longer\b", re.I)
# "已经不喝咖啡了", "不再养猫了", "不再当医生了": a verb and its object.
_NEGATED_VALUE_ZH = re.compile(
    # "不再踢礼拜五的足球了": a day or a kind before 的 is not the thing.
    r"(?:不再|已经不|已不|再也不)(?P<verb>[\u4e00-\u9fff])(?:[\u4e00-\u9fff]{1,4}的)?(?P<obj>[\u4e00-\u9fff]{1,4}?)(?:了|，|。|$)|"
    # "现在不值夜班了": a plain 不 with 了 after the object; "太极拳不练了": the object before it.
    r"(?<![\u4e00-\u9fff]不)不(?P<verb2>[\u4e00-\u9fff])(?P<obj2>[\u4e00-\u9fff]{1,4}?)了|"
    r"(?P<obj3>[\u4e00-\u9fff]{2,4}?)(?:不再|已经不|不)(?P<verb3>[\u4e00-\u9fff])了|"
    # The thing, then who, then a verb of two: "市集用户不去摆了".
    r"(?P<obj4>[\u4e00-\u9fff]{2,6}?(?:用户|我))(?:不再|已经不|不)(?P<verb4>[\u4e00-\u9fff]{2})了|"
    # Dropped, whatever the person did with it: "西班牙语课用户退掉了", "素食，用户坚持不下去了".
    r"(?P<dropped>[\u4e00-\u9fff]{2,6}?)[，,]?(?:用户|我)(?:退|放弃|暂停|停|戒|取消|[\u4e00-\u9fff]{1,2}不(?:下去|了|动|起))(?:掉|了)?了|"
    r"(?:用户|我)(?:退掉|放弃|停掉|戒掉|取消|暂停|退订|退|停|戒)(?:掉)?了(?P<dropped2>[\u4e00-\u9fff]{2,6}?|[A-Za-z][A-Za-z0-9 .+-]{1,20}?)"
    r"(?:[，,。.；;！!]|$)"
)
# What a dropped class or course was of: "西班牙语课" is 西班牙语.
_COURSE = re.compile(r"(?:课程|课|班|培训)$")
_ROLE_VERBS_ZH = "当做是"
_HABIT_VERBS_ZH = "打练玩学上做去喝吃抽弹跳跑骑开养用"
_NEGATION_BEFORE = re.compile(
    r"(?:\b(?:not|never|no longer)|n't)\W*(?:\w+\W+){0,2}$|(?:不再|已经不|不(?!动|断|停|错|管|久))[\u4e00-\u9fff]{0,3}$",
    re.I,
)  # 雷打不动, 不停, 不管 are not negations.
# "Biscuit passed away in June; …", "用户的猫咪咪去世了": the lines naming Biscuit or 咪咪 are taken back.
_LOSS = re.compile(
    r"\b(?P<name>(?-i:[A-Z][a-z]+))\s+(?:passed away|died|was put down|was put to sleep|ran away|went missing)\b|"
    r"(?:猫|狗|宠物)(?P<zh>[\u4e00-\u9fff]{1,3}?)(?:上个月|去年|前几天|最近)?(?:去世|死了|走丢)",
    re.I,
)

# A job ended, no employer named ("Retired last month.", "Quit their job.", "Mei已经退休了，不去公司上班了。") takes back
# the person's lines that name where they work; "retired" before a noun ("mostly retired schoolteachers") is not one.
_JOB_ENDED = re.compile(
    r"\b(?:retired(?!\s+(?!(?:last|this|early|in|at|from|on|and|but|so|now|after|since|because|a|an|the|for|with|to|"
    r"recently|officially|finally|yesterday|two|three|four|five|six|ten|years?|months?|weeks?)\b)[a-z]+\b)|resigned|quit (?:(?:their|his|her|my|the) )?job|left (?:(?:their|his|her|my|the) )?job|(?:handed|turned) in (?:their|his|her|my|the) notice|"
    r"(?:is|am) (?:now )?retired|no longer works?|(?:last|final) (?:day|week|shift|one) at|(?:doesn't|does not) work anymore|(?:got |was |been )?(?:laid off|let "
    r"go|made redundant|fired|sacked))\b(?!\s+(?:(?:from|at|for|with|by)\s+)?(?-i:[A-Z]))|"
    r"退休(?!老师|教师|工人|干部|人员|金|的)|辞职了|辞掉了?工作|离职了|已经辞了|递了辞呈|交了辞职信|不(?:再)?(?:去|在)(?:公司|单位)(?:上班|工作)|"
    r"被[^，。；,;]{0,8}?(?:裁员?|辞退|开除|解雇|炒(?:了)?(?:鱿鱼)?)了|把(?:用户|我)(?:给)?(?:裁|辞退|开除|解雇|炒)",
    re.I,
)
_EMPLOYER_LINE = re.compile(
    r"\b(?:works?|working|worked|employed|has been|is|was)\s+(?:(?:as\s+)?an?\s+[\w -]{2,30}?\s+)?(?:at|for|with)\s+"
    r"(?-i:[A-Z])|"
    # A role at a place named in lower case: "Is a seismologist at the national observatory", "a vet with the county".
    r"\b(?:is|was)\s+an?\s+[\w-]+(?:\s+[\w-]+)?\s+(?:at|with|for)\s+the\s+\w|"
    r"\b(?-i:[A-Z][\w&'-]*)\s+(?:Ltd|GmbH|AG|SARL|SA|Inc|LLC|BV|NV|Corp|plc)\b|"
    r"(?:公司|集团|银行|股份|有限|单位)[^，。；,.;]{0,3}(?:的|上班|工作|任职)|在[^，。；,.;]{1,20}?(?:工作|上班|任职)|"
    r"在[^，。；,.;]{1,20}?(?:做|当)[\u4e00-\u9fff]{0,3}?(?:师|士|员|生|工|家|官|经理|主管|编辑|记者|设计|会计|销售|客服|翻译|司机|秘书|助理|顾问)",
    re.I,
)


def content_lines(content: str) -> list[str]:
    """The lines of a memory file that state something: not blank, not a heading."""
    return [line for line in (content or "").splitlines() if line.strip() and not memory_files.is_heading(line)]


def _states(line: str, at: int) -> bool:
    """Whether ``line`` states what stands at ``at`` rather than negating it."""
    return at >= 0 and not _NEGATION_BEFORE.search(line[max(0, at - 30) : at])


# Someone else's, not the person's own: "Has a sister in London", "Her boss in Leeds".
_KIN_BEFORE = re.compile(
    r"\b(?:sister|brother|mother|mom|mum|father|dad|parents|friend|cousin|aunt|uncle|son|daughter|wife|husband|"
    r"partner|colleague|boss|manager|kids?|children|grand(?:ma|pa|mother|father)|niece|nephew|in-laws)s?\b"
    r"(?:\W+\w+){0,3}\W*$",
    re.I,
)
# A value that runs on into a longer name is that name, not the value: "London" in "the London Symphony
# Orchestra"; a company's legal form is part of the value ("Halvorsen Ltd").
_LONGER_NAME = re.compile(r"\s+(?!(?:Ltd|GmbH|AG|SARL|SA|Inc|LLC|BV|NV|Corp|plc|Co)\b)(?-i:[A-Z])")
_NEGATION_WORDS = frozenset({"n", "t", "not", "no", "longer", "never", "doesn", "don", "isn", "didn", "wasn", "aren"})
# Having a thing, said with the verb of its use: own, have, bought, got, drive, ride, use, play.
_HAVING = frozenset({"own", "hav", "has", "bou", "buy", "got", "dri", "rid", "use", "pla", "kee"})


def _relation(said: str) -> list[str]:
    """The verb a negation names before its value, stemmed: "n't live in " → live; "n't own the " → own (a verb of
    having is kept though it is a stop word); "not at " → none."""
    stop = stop_words()
    stems = [stem(word) for word in words(said) if word not in _NEGATION_WORDS]
    return [word for word in stems if word not in stop or word[:3] in _HAVING]


def _same_relation(line: str, found: re.Match[str], relation: list[str]) -> bool:
    """Whether ``line`` holds the negated value as the person's own, in the relation the fact negates: the verb of
    "doesn't live in London anymore" (live) must stand in the line before the value ("Lives in London", not "Works
    at Acme in London"); a value after a relative ("Has a sister in London") or inside a longer name ("Loves the
    London Symphony Orchestra") is not the one negated."""
    before = line[: found.start()]
    if _KIN_BEFORE.search(before):
        return False
    if not relation:
        return not _LONGER_NAME.match(line[found.end() :])
    said = {stem(word)[:3] for word in words(before)}
    negated = {word[:3] for word in relation}
    if negated & _HAVING:  # "doesn't drive the Tesla anymore" takes back "Bought a Tesla Model 3".
        negated |= _HAVING
    return bool(negated & said)


# A name in Latin letters negated in Chinese: "用户已经不在Jørgensen & Søn ApS上班了" takes back "Started working at
# Jørgensen & Søn ApS." (a line of either language that states it).
_NEGATED_LATIN_ZH = re.compile(
    r"(?:不再|已经不|不)(?:在|去|用|开|骑)(?P<v>[A-Za-z\u00c0-\u024f][\w&.'\u00c0-\u024f -]*?[\w.])\s*(?:上班|工作|任职|了)|"
    # Said thing first: "Ubuntu不折腾了", "Notion我已经不用了".
    r"(?<![A-Za-z0-9.])(?P<w>[A-Za-z\u00c0-\u024f][\w&.'\u00c0-\u024f -]*?[\w.])\s*(?:我|用户)?(?:也)?(?:不再|已经不|不)(?:用|折腾|玩|碰)了"
)


def _suffixes(text: str) -> list[str]:
    """The endings of ``text`` of two characters or more, longest first."""
    return [text[i:] for i in range(len(text) - 1)]


def _thing_ends(thing: str) -> list[str]:
    """The endings of a thing given up that may stand for it in a line: never the person (every line has "用户")."""
    return [end for end in _suffixes(thing) if end not in {"用户", "自己"}]


def _negated_value_lines(fact: str, lines: list[str]) -> list[str]:
    who = subject(fact)
    stale: list[str] = []
    english = _NEGATED_VALUE_EN.search(fact) if _STILL_NEGATED_EN.search(fact) else None
    if latin := _NEGATED_LATIN_ZH.search(fact):
        value = re.compile(rf"(?<![\w-]){re.escape(latin.group('v') or latin.group('w'))}(?![\w-])", re.I)
        stale += [
            line for line in lines if subject(line) == who and (at := value.search(line)) and _states(line, at.start())
        ]
    relation = []
    if english is not None:
        relation = _relation(fact[english.start() : english.start("v")])
    chinese = _NEGATED_VALUE_ZH.search(fact)
    for line in lines:
        if subject(line) != who:
            continue
        if english is not None:
            found = re.search(rf"(?<![\w-]){re.escape(english.group('v'))}(?![\w-])", line)
            if found and _states(line, found.start()) and _same_relation(line, found, relation):
                stale.append(line)
                continue
            at = None if found else _in_chinese(english.group("v"), relation, line)
            if at is not None and _states(line, at):
                stale.append(line)
                continue
        if chinese is not None and (found := _negated_zh_in(fact, who, chinese, line)) is not None:
            if _states(line, found) and not _THEIRS_ZH.search(line[:found]):  # Not "用户的妈妈爱喝…".
                stale.append(line)
    return stale


def _negated_zh_in(fact: str, who: str | None, chinese: re.Match[str], line: str) -> int | None:
    """Where ``line`` holds what the Chinese negation ``chinese`` names, or None."""
    if dropped := chinese.group("dropped") or chinese.group(
        "dropped2"
    ):  # Any line of the person's that holds the thing, in either language.
        thing = _COURSE.sub("", dropped) or dropped
        ends = _thing_ends(thing)
        found = next((f for end in ends if (f := re.search(re.escape(end), line, re.I))), None)
        if found is not None:
            return found.start()
        return None if CJK_RUN.search(line) else _in_english("", thing, line)
    verb = chinese.group("verb") or chinese.group("verb2") or chinese.group("verb3") or chinese.group("verb4")
    obj = chinese.group("obj") or chinese.group("obj2") or chinese.group("obj3") or chinese.group("obj4")
    topic_first = bool(chinese.group("obj3") or chinese.group("obj4"))
    obj = obj if len(_COURSE.sub("", obj)) < 2 else _COURSE.sub("", obj)  # "不去陶艺课了": the thing is 陶艺.
    verbs = verb + (_ROLE_VERBS_ZH if verb in _ROLE_VERBS_ZH else "")
    found = re.search(rf"[{verbs}](?:了|着|过)?[^，。；,.;]{{0,4}}?{re.escape(obj)}", line)
    if (
        found is None and len(obj) >= 2
    ):  # "不再练太极拳" and "每天去公园打太极拳": a habit's thing, done with another verb.
        found = re.search(rf"[{_HABIT_VERBS_ZH}][^，。；,.;]{{0,3}}?{re.escape(obj)}", line)
    # The thing said first in the fact ("太极拳不练了") or in the line ("夜班改到周一和周五了"): a line that holds
    # it, whatever verb it uses ("每天早上去公园打太极拳").
    topic = re.compile(rf"^\W*(?:用户|{re.escape(who or '用户')})?(?:的)?{re.escape(obj)}")
    thing = obj
    if topic_first:  # Its end: a name before it is not the thing ("红霞太极拳").
        thing = re.sub(r"(?:用户|我|他|她)$", "", obj)  # "韩语我不学了": the thing is 韩语, not 我.
        # Nor the name the fact opens with: "淑芬合唱团淑芬已经不去了" is about 合唱团, not 淑芬.
        thing = next((thing[: -len(e)] for e in _suffixes(thing)[1:] if fact.lstrip("- ").startswith(e)), thing)
    if found is None and len(obj) >= 3 and not topic_first:  # A thing named in full, at a clause's end: "一杯伯爵茶，".
        found = re.search(rf"{re.escape(obj)}(?=[，。,.；;！!]|$)", line)
    if found is None and topic_first:
        ends = _thing_ends(thing)
        found = next((f for end in ends if (f := re.search(re.escape(end), line))), None)
    elif found is None and topic.search(line):
        found = re.search(re.escape(obj), line)
    if found is not None:
        return found.start()
    return _in_english(verb, thing, line)


def _in_english(verb: str, thing: str, line: str) -> int | None:
    """Where an English line holds a thing negated in Chinese, by the dictionary ("韩语我不学了" and "Is learning
    Korean right now."): the thing's word, after a word of the verb's (any verb for a thing dropped), and the
    person's own."""
    if CJK_RUN.search(line):
        return None
    at = glossary.english_at(thing, line)
    if at < 0 or (verb and glossary.english_at(verb, line[:at]) < 0) or _KIN_BEFORE.search(line[:at]):
        return None
    return at


def _in_chinese(value: str, relation: list[str], line: str) -> int | None:
    """Where a Chinese line holds a name negated in English, by the dictionary ("No longer learning Korean." and
    "用户在学韩语。"): a Chinese word for the name, after one for the verb, and the person's own."""
    if not relation or " " in value.strip() or not CJK_RUN.search(line):
        return None
    span = glossary.find(value, line)
    if span is None or _KIN_ZH.search(line[: span[0]]):
        return None
    return span[0] if any(glossary.find(verb, line[: span[0]]) for verb in relation) else None


_LOST_KIND = re.compile(r"^The user's (?P<kind>[\w -]{2,30}?) died\.$")


def _lost_lines(fact: str, lines: list[str]) -> list[str]:
    if kind := _LOST_KIND.match(fact.strip()):
        # "The user's dog died.": the one line that names a dog of theirs ("Got a dog named Peter."); with two, which
        # one is not said, and neither is taken back.
        named = re.compile(rf"\b{re.escape(kind.group('kind'))}s?\b[^.;]{{0,30}}?\b(?:named|called)\s", re.I)
        found = [
            line
            for line in lines
            if (at := named.search(line)) and person(line) is None and not _KIN_BEFORE.search(line[: at.start()])
        ]
        return found if len(found) == 1 else []
    match = _LOSS.search(fact)
    if match is None:
        return []
    # The line that names them as the user's: "Has a beagle named Biscuit.", "Biscuit is …", "一只猫叫咪咪".
    name = re.escape(match.group("name") or match.group("zh"))
    named = re.compile(rf"(?:\b(?:named|called)\s+|叫|名叫|^\W*){name}(?![\w-])")
    return [line for line in lines if named.search(line) and not _LOSS.search(line)]


# Something the person no longer has: "Sold the Brompton, …", "Gave away our old piano.", "用户把自行车卖了。" take back
# the same person's lines that have it ("Bought a second-hand Brompton …", "Owns a piano", "用户有一辆自行车").
_KIN_ZH = re.compile(
    r"(?:姐姐|哥哥|妹妹|弟弟|妈妈|母亲|爸爸|父亲|父母|朋友|同事|老婆|老公|妻子|丈夫|儿子|女儿|孩子|阿姨|叔叔|舅舅|姑姑|邻居)[^，。；]{0,2}$"
)
# A relative's or a friend's, said as theirs ("用户的妈妈爱喝…"), not done with them ("跟同事打羽毛球").
_THEIRS_ZH = re.compile(r"(?:用户的?|我的?|的)" + _KIN_ZH.pattern)


def _had_in_chinese(head: str, line: str) -> re.Match[str] | None:
    """Where a Chinese line has the thing an English fact gave up ("Sold the Skoda", "用户买了一辆二手的斯柯达"):
    a Chinese word for it after a verb of having (``reflection_site.glossary``)."""
    if not CJK_RUN.search(line):
        return None
    span = glossary.find(head, line)
    if (
        span is None
        and head.isascii()
        and (named := re.search(rf"(?<![A-Za-z]){re.escape(head)}(?![A-Za-z])", line, re.I))
    ):
        span = named.span()  # A name in Latin letters, as it stands: "现在听歌都用Deezer".
    if span is None:
        return None
    return re.search(r"(?:有|买|养|骑|开|用(?!户))[^，。；]{0,8}$", line[: span[0]])


def _had_in_english(thing: str, line: str) -> re.Match[str] | None:
    """Where an English line has the thing a Chinese fact gave up ("兔子…送给邻居家的孩子了", "Has a rabbit who
    scratches."): its English word (the dictionary) after a verb of having."""
    if CJK_RUN.search(line) or thing.isascii() or (at := glossary.english_at(thing, line)) < 0:
        return None
    return re.search(rf"{HAS_EN}$", line[:at], re.I)


def _kind_of(head: str) -> str:
    """``head`` as a pattern, and every member of its kind: "laptop" is any computer's name ("Chromebook")."""
    kind = KIND_WORDS.get(head.casefold())
    members = [tool for tool, category in TOOL_TO_CATEGORY.items() if kind and category == kind]
    return "|".join([re.escape(head)] + [re.escape(member) for member in members])


def says_all(named: set[str], line: str, *, bridged: bool) -> bool:
    """Whether ``line`` says every content word of ``named`` as the person's own; with ``bridged``, a Chinese line
    says an English word by the dictionary ("drink", "coffee" in "用户每天早上喝咖啡。")."""
    if bridged and CJK_RUN.search(line):
        spans = [glossary.find(word, line) for word in named]
        return all(spans) and not someone_elses(line, min(span[0] for span in spans))
    return named <= set(content_words(line))


def someone_elses(line: str, at: int) -> bool:
    """Whether what stands at ``at`` in ``line`` is a relative's or a friend's ("The user's sister …", "用户的女儿在学…")."""
    return bool(_KIN_BEFORE.search(line[:at]) or _KIN_ZH.search(line[:at]))


def _disposed_lines(fact: str, lines: list[str]) -> list[str]:
    english_fact = bool(match := DISPOSED_EN.search(fact))
    head = ""
    if match:
        head = next(match.group(g) for g in ("thing", "old", "used", "stolen") if match.group(g)).split()[-1]
        has = re.compile(rf"{HAS_EN}\b(?:{_kind_of(head)})\b", re.I)
    elif match := DISPOSED_ZH.search(fact):
        said = match.group("thing") or match.group("thing2") or match.group("thing3") or match.group("thing4")
        thing = re.sub(r"^(?:我的|我们的|那辆|那台|那个|旧)|(?:那|这)[辆台个部只]$", "", said).strip()  # "尼康那台"
        end = thing if thing.isascii() else thing[-2:]  # "Vespa" whole; "折叠自行车" by its last two characters.
        # A name in Latin letters may stand in an English line ("Rides a red Vespa to work").
        english = (
            r"|\b(?:own|owns|has|have|bought|got|drives?|rides?|keeps?|uses?)\b[^.;]{0,40}?" if thing.isascii() else ""
        )
        has = re.compile(rf"(?:(?:有|买了?|养了?|骑|开)[^，。；]{{0,6}}?{english}){re.escape(end)}", re.I)
    else:
        return []
    who = person(fact)
    bridge = _had_in_chinese if english_fact else _had_in_english

    def holds(line: str) -> bool:  # The person's own, not a relative's ("The user's sister has a Vespa").
        found = has.search(line) or bridge(head or thing, line)
        return found is not None and not (
            _KIN_BEFORE.search(line[: found.start()]) or _KIN_ZH.search(line[: found.start()])
        )

    return [line for line in lines if person(line) == who and holds(line) and not DISPOSED_EN.search(line)]


# A switch from one thing to another: "Has gone from green tea to coffee" takes back the person's line that has
# green tea ("用户每天就喝几杯绿茶。", in Chinese by the dictionary); "Moved from payments to the data platform team."
_SWITCHED_FROM = re.compile(
    r"\b(?:gone|went|switched|changed|moved|swapped)\s+from\s+(?:(?:the|my|their|his|her)\s+)?(?P<old>[\w' -]{2,30}?)\s+to\b",
    re.I,
)


def _switched_lines(fact: str, lines: list[str]) -> list[str]:
    match = _SWITCHED_FROM.search(fact)
    named = set(content_words(match.group("old"))) if match else set()
    if not named:
        return []
    same = (lambda line: person(line) == who) if (who := person(fact)) else the_users  # noqa: E731
    return [
        line for line in lines if same(line) and says_all(named, line, bridged=True) and not _SWITCHED_FROM.search(line)
    ]


def _job_lines(fact: str, lines: list[str]) -> list[str]:
    if not _JOB_ENDED.search(fact):
        return []
    who = worker(fact)
    return [
        line for line in lines if worker(line) == who and _EMPLOYER_LINE.search(line) and not _JOB_ENDED.search(line)
    ]


# What the person could not eat or drink and now can: "微辣现在可以接受" takes back "用户不吃辣，因为吃辣会胃疼",
# "Can eat spicy food now." takes back "Doesn't eat spicy food."; a degree ("微", "mild", "a little") is not the food.
_ACCEPTED_ZH = re.compile(
    r"(?:可以|能)(?:接受|吃|喝)(?:一点)?(?P<x2>[\u4e00-\u9fff]{1,6}?)了?(?:[。，,]|$)|"
    r"(?<![\u4e00-\u9fff])(?P<x>(?!用户|我)[\u4e00-\u9fff]{1,6}?)(?:现在|已经|如今|终于)也?(?:可以|能)(?:接受|吃|喝)"
)
_ACCEPTED_EN = re.compile(
    r"\bcan (?:now )?(?:eat|have|handle|drink) (?:(?:a little|some|mild|mildly)\s+)?(?P<x>[a-z]{3,})\b.*\bnow\b", re.I
)
_DEGREE_ZH = re.compile(r"^(?:微微?|一点|少许|少量|一些|轻|中|稍微)")


def _accepted_lines(fact: str, lines: list[str]) -> list[str]:
    if match := _ACCEPTED_ZH.search(fact):
        food = _DEGREE_ZH.sub("", match.group("x") or match.group("x2") or "")
        refused = rf"不(?:再)?(?:能|太能|敢)?(?:吃|喝|碰|接受)[\u4e00-\u9fff]{{0,2}}?{re.escape(food)}" if food else ""
    elif match := _ACCEPTED_EN.search(fact):
        refused = rf"(?:doesn't|does not|can't|cannot|don't|never)\s+(?:eats?|have|has|handles?|drinks?)\s+(?:[a-z]+\s+){{0,2}}?{re.escape(match.group('x')[:4])}"
    else:
        return []
    who = person(fact)
    return [line for line in lines if refused and person(line) == who and re.search(refused, line, re.I)]


# "my old street address": "old" says which of them, not what; "street" (or "home", "postal") is a kind of address
# a line may not name ("The user's address at the new place is …").
_DROPPED_COURSE_EN = re.compile(
    r"\b(?:dropped|quit|gave up|stopped(?: taking)?|(?:that's|that is|it's|it is) the end of)\s+"
    r"(?:(?:the|my|their|his|her)\s+)?(?P<thing>(?-i:[A-Z])[\w-]+(?:\s+(?-i:[A-Z])[\w-]+)?|[a-z]+)\s+"
    r"(?:course|class|classes|lessons)\b",
    re.I,
)


# A thing given up, one word: "Gave up tango." takes back "用户周四晚上去跳探戈" (a Chinese line, by the dictionary).
_GAVE_UP_EN = re.compile(
    r"\b(?:dropped|quit|gave up|given up|stopped(?: going to| doing| playing)?)\s+(?:(?:the|my|their|his|her)\s+)?"
    # A thing, or an -ing activity after "given up" or "stopped going to" ("Has given up running.").
    r"(?:[a-z-]+\s+)?(?P<thing>[A-Za-z][a-z-]+(?<!ing)|(?<=given up )(?!(?:trying|hoping|caring|waiting|worrying|"
    r"thinking)\b)[a-z-]+ing)\s*(?:[.,;!]|$)|\bstopped going to\s+(?:[a-z-]+\s+)?(?P<doing>[a-z-]+ing)\s*(?:[.,;!]|$)",
    re.I,
)


def _dropped_course_lines(fact: str, lines: list[str]) -> list[str]:
    """ "Dropped the Italian course" takes back the person's lines that learn it ("Is learning Italian.",
    "用户在学意大利语。"); "Gave up tango." the Chinese lines that do it, "Gave up evening naps." "Loves taking naps"."""
    if not (match := _DROPPED_COURSE_EN.search(fact)):
        thing = (given := _GAVE_UP_EN.search(fact)) and (given.group("thing") or given.group("doing")).lower()
        if not thing or thing in stop_words():
            return []
        liked = re.compile(
            rf"\b(?:loves?|likes?|enjoys?|takes?|taking|has|goes to|plays?)\b[^.;]{{0,20}}\b{re.escape(thing)}\b", re.I
        )
        spans = {
            line: glossary.find(thing, line) if CJK_RUN.search(line) else ((m := liked.search(line)) and m.span())
            for line in lines
        }
        return [
            line
            for line, span in spans.items()
            if span and person(line) == person(fact) and _states(line, span[0]) and not someone_elses(line, span[0])
        ]
    thing, who = match.group("thing"), person(fact)
    learning = re.compile(
        rf"\b(?:learn|study|studi|tak|teach|class|course|lesson)\w*\b[^.;]{{0,30}}?\b{re.escape(thing)}\b", re.I
    )

    def learns(line: str) -> bool:  # The person's own, not a relative's ("The user's sister is learning Italian").
        if CJK_RUN.search(line):
            return says_all({thing.lower()}, line, bridged=True)
        found = learning.search(line)
        return found is not None and not someone_elses(line, found.start())

    return [line for line in lines if person(line) == who and learns(line)]


# A business that closed: "我爸妈的茶餐厅上个礼拜关门了", "Arja's bakery closed last month" take back the lines that
# have it open ("用户爸妈在怡保开了三十年茶餐厅").
_CLOSED = re.compile(
    r"(?P<zh>(?:(?!的)[\u4e00-\u9fff]){2,4}?)(?:上个?(?:礼拜|星期|月|周)|去年|前几天|最近|已经)?(?:正式)?(?:关门|倒闭|结业|停业)了|"
    r"\b(?P<en>bakery|shop|store|restaurant|caf[eé]|bar|pub|salon|clinic|studio|business|company|startup)\s+"
    r"(?:has\s+|had\s+)?(?:closed|shut down|went bust|went under|folded)\b",
    re.I,
)


def _closed_lines(fact: str, lines: list[str]) -> list[str]:
    if (match := _CLOSED.search(fact)) is None:
        return []
    thing = re.escape(match.group("zh") or match.group("en"))
    who = person(fact)
    return [line for line in lines if person(line) == who and re.search(thing, line, re.I) and not _CLOSED.search(line)]


def takeback_lines(fact: str, content: str) -> list[str]:
    """The lines of ``content`` that ``fact`` takes back (see the module docstring), in file order. A fact about a
    person named in Chinese is read against that person's lines only, each read as if it were the user's."""
    lines = content_lines(content)
    if (name := chinese_name(fact, lines)) is not None:
        own = {line.replace(name, "用户", 1): line for line in lines if BULLET.sub("", line).strip().startswith(name)}
        said = BULLET.sub("", fact).strip().replace(name, "用户", 1)
        return [own[line] for line in _taken_back(said, list(own))]
    return _taken_back(fact, lines)


def _taken_back(fact: str, lines: list[str]) -> list[str]:
    found = set(_negated_value_lines(fact, lines)) | set(forgotten_lines(fact, lines)) | set(_lost_lines(fact, lines))
    found |= set(_job_lines(fact, lines)) | set(_accepted_lines(fact, lines)) | set(_disposed_lines(fact, lines))
    found |= (
        set(_switched_lines(fact, lines)) | set(_dropped_course_lines(fact, lines)) | set(_closed_lines(fact, lines))
    )
    return [line for line in lines if line in found and BULLET.sub("", line).strip() != fact.strip()]
