"""The words the attribute rules of ``guardian_app.write.supersede`` are made of: tools that exclude each other
within a category, roles one person holds, events with a time, weekdays, places and shifts kept on weekdays, diets,
and languages; the patterns that read an attribute and its value out of a fact (``ATTRIBUTE_PATTERNS``); and the
words of a thing given up that ``guardian_app.write.takeback`` reads. Pure data, Django-free.
"""

import re

# Tools that exclude each other within a category (one editor at a time).
TOOL_CATEGORIES: dict[str, tuple[str, ...]] = {
    "editor": tuple(
        "vim|neovim|nvim|emacs|vscode|vs code|visual studio code|sublime text|sublime|pycharm|intellij|webstorm|"
        "goland|zed|helix|cursor|nano|atom|xcode|android studio".split("|")
    ),
    "shell": ("bash", "zsh", "fish", "nushell", "powershell"),
    "os": ("macos", "mac os", "linux", "windows", "ubuntu", "fedora", "debian", "arch linux", "nixos", "chromeos"),
    "browser": ("chrome", "firefox", "safari", "edge", "brave", "arc", "vivaldi", "opera"),
    "phone": (
        "iphone",
        "android",
        "pixel",
        "google pixel",
        "galaxy",
        "samsung galaxy",
        "samsung",
        "fairphone",
        "oneplus",
        "xiaomi",
        "redmi",
        "huawei",
        "nokia",
        "motorola",
        "oppo",
        "vivo",
        "honor",
        "nothing phone",
        "xperia",
    ),  # fmt: skip
    # Computer-aided design: one at a time, as an editor.
    "cad": ("fusion 360", "onshape", "solidworks", "autocad", "freecad", "sketchup", "rhino", "shapr3d", "catia"),
    # The computer one uses day to day, by its line's name: one at a time, as a phone.
    "computer": tuple(
        "macbook|macbook pro|macbook air|thinkpad|chromebook|surface laptop|surface pro|xps|imac|mac mini|mac studio|"
        "framework laptop|zenbook|vivobook|ideapad|matebook".split("|")
    ),
    "terminal": ("iterm", "iterm2", "alacritty", "kitty", "wezterm", "ghostty", "warp"),
    "package manager": ("npm", "pnpm", "yarn", "bun", "pip", "poetry", "uv", "pipenv", "conda"),
    "notes app": ("obsidian", "notion", "evernote", "logseq", "bear", "onenote"),
    "chat app": ("slack", "teams", "discord", "mattermost", "钉钉", "飞书", "企业微信"),
    # The music service one pays for: one at a time ("Spotify我退订了，现在听歌都用Deezer").
    "music service": (
        "spotify",
        "deezer",
        "apple music",
        "tidal",
        "youtube music",
        "amazon music",
        "qobuz",
        "网易云音乐",
        "qq音乐",
    ),  # fmt: skip
}
TOOL_TO_CATEGORY = {tool: category for category, tools in TOOL_CATEGORIES.items() for tool in tools}
# A word for a kind of thing that stands for any of its category: "Sold my laptop" and "Has a Chromebook".
KIND_WORDS = {
    "laptop": "computer",
    "computer": "computer",
    "notebook": "computer",
    "电脑": "computer",
    "笔记本": "computer",
    "phone": "phone",
    "smartphone": "phone",
    "cellphone": "phone",
    "手机": "phone",
}
TOOL_RE = "|".join(sorted((re.escape(t) for t in TOOL_TO_CATEGORY), key=len, reverse=True))

ROLES_HELD = (
    r"lead|leader|team lead|tech lead|manager|head|boss|director|owner|ceo|cto|cfo|coo|founder|chair|chairman|"
    r"president|coordinator|point of contact|contact|captain|organi[sz]er|maintainer|admin|administrator|"
    r"landlord|landlady|doctor|dentist|therapist|accountant|lawyer|teacher|coach"
)
EVENTS = (
    r"meetings?|appointments?|calls?|interviews?|deadlines?|flights?|train|exams?|reviews?|demo|stand-?up|"
    r"presentation|party|wedding|trip|visit|sessions?|class|lessons?|check-?up|surgery|hearing|dinner|lunch"
)
WHEN = (
    r"(?:\d{1,2}(?::\d\d)?\s?(?:am|pm)|\d{1,2}:\d\d|noon|midnight|(?:mon|tues|wednes|thurs|fri|satur|sun)day|"
    r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)\w*\s+\d{1,2}|\d{1,2}(?:st|nd|rd|th)?\s+(?:of\s+)?"
    r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)\w*|tomorrow|next \w+)"
)
WEEKDAYS_EN = r"(?:(?:mon|tues|wednes|thurs|fri|satur|sun)days?|weekdays|weekends)"
WEEKDAYS_ZH = r"[一二三四五六日天]"
WEEKDAY_RE = re.compile(r"(?:mon|tues|wednes|thurs|fri|satur|sun)day|weekday|weekend|[一二三四五六日天]", re.IGNORECASE)
WEEKLY_PLACES_EN = r"office|gym|studio|campus|home|site|lab|pool|school|university|class"
GAVE_UP = r"\b(?:gave up|give up|giving up|given up|quit|quitting|stopped being|dropped)\b"
WEEKLY_PLACES_ZH = r"办公室|公司|单位|健身房|学校|游泳馆|家办公|实验室|工作室|画室|图书馆"
# A shift is kept on weekdays the way a place is visited: "每周二和周四晚上值夜班", "夜班改到周一和周五了".
SHIFTS_ZH = r"大夜班|小夜班|夜班|白班|早班|晚班|中班"
DIETS_ZH = {
    "吃素": "vegetarian",
    "素食主义者": "vegetarian",
    "素食者": "vegetarian",
    "纯素": "vegan",
    "吃全素": "vegan",
}
DIETS = r"vegetarian|vegan|pescatarian|keto|paleo|carnivore|omnivore|gluten-free|dairy-free|lactose-free|halal|kosher"
LANGS = (
    r"english|chinese|mandarin|cantonese|french|german|spanish|italian|portuguese|japanese|korean|dutch|russian|"
    r"arabic|hindi|polish|swedish|中文|英文|英语|法语|德语|日语|西班牙语|韩语|粤语|普通话"
)

# Something the person no longer has (``takeback``): "Sold the Brompton", "用户把自行车卖了", and a verb of having.
DISPOSED_EN = re.compile(
    r"\b(?:sold|gave away|got rid of|donated|scrapped|traded in|cancell?ed|unsubscribed from)\s+(?:(?:the|my|our|their|his|her|a|an)\s+)?"
    r"(?P<thing>[\w'-]+(?:\s+(?!(?:to|for|on|in|at|last|this|yesterday|because|since|and|as|recently|now|already|today|finally|after|"
    r"before|online|off)\b)[\w'-]+){0,3})|"
    # The old one given to someone: "Gave my old Kindle to my niece."
    r"\bgave\s+(?:my|our|their|his|her|the)\s+old\s+(?P<old>[\w'-]+(?:\s+[\w'-]+)?)\s+to\b|"
    # Had once, not now: "Used to have a dog."; taken from them: "Their e-bike got stolen."
    r"\bused to (?:have|own|keep)\s+(?:(?:a|an|the|my|their|his|her)\s+)?(?P<used>[\w'-]+)|"
    r"\b(?:my|their|his|her|the)\s+(?P<stolen>[\w'-]+)\s+(?:got|was|has been)\s+stolen\b",
    re.I,
)
DISPOSED_ZH = re.compile(
    r"把(?P<thing>[\u4e00-\u9fff]{1,6}?|[A-Za-z][\w -]{0,20}?)(?:卖|送人|送给[\u4e00-\u9fff]{1,4}|给了|扔|处理)(?:掉)?了?|"
    r"卖掉了(?P<thing2>[\u4e00-\u9fff]{1,6}?)(?:[，。,.]|$)|"
    # The old one given to someone: "旧的iPhone给了我岳母", "以前的车送给了表弟".
    r"(?:旧的|以前的|原来的)(?P<thing3>[\u4e00-\u9fff]{1,6}?|[A-Za-z][\w -]{0,20}?)(?:送给|给)了|"
    # The thing first, the reason between: "兔子老是抓人，送给楼下邻居家的孩子了", "车上个月卖了".
    r"^\W*(?:用户的?)?(?P<thing4>[\u4e00-\u9fff]{1,4}?)(?:[^，。；,;]{0,12}[，,])?(?:已经|上个月|前几天|去年|就|也)?"
    r"(?:送给|送人|卖给|卖掉|卖了|扔了|扔掉|送走)"
)
# Where someone is from, said beside their home ("Lives in Carouge but is really from Baku").
ORIGIN = re.compile(r"\b(?:(?:really|originally) from|born in|grew up in|raised in)\b|来自|出生在|出生于|老家", re.I)
HAS_EN = r"\b(?:own|owns|has|have|bought|got|drives?|rides?|keeps?|uses?|plays?)\b[^.;]{0,40}?"


# (key or key template, pattern). A pattern's group "v" is the value; "k" fills "{k}" in the key.
ATTRIBUTE_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (key, re.compile(pattern, re.IGNORECASE))
    for key, pattern in (
        ("tool:{cat}", rf"\b(?:switched|moved|migrated|changed)\s+from\s+(?:{TOOL_RE})\s+to\s+(?P<v>{TOOL_RE})\b"),
        (
            "tool:{cat}",
            rf"\b(?:uses?|using|switched to|moved to|migrated to|prefers?|codes? in|writes? code in|works? in|"
            rf"runs?|is on|on an?|has|owns?)\s+(?:(?:an?|the|my|their|his|her)\s+)?"
            rf"(?:(?:old|new|used|second-hand|refurbished|[\w-]+'s)\s+){{0,2}}(?P<v>{TOOL_RE})\b",
        ),
        # "用的是公司发的ThinkPad": what is used may come after 的是 and who gave it.
        (
            "tool:{cat}",
            rf"(?:用|使用|改用了?|换成了?|换用了?|开始用|切换到了?|(?:换|买|入手)了(?:一)?[台个部])(?:的是)?(?:[\u4e00-\u9fff]{{1,6}}的)?\s*(?P<v>{TOOL_RE})",
        ),
        # Which days a weekly habit falls on: "Goes to the office on Tuesdays and Thursdays", "每周二和周四去办公室".
        (
            "weekly:{k}",
            rf"\b(?:goes|go|going|commutes?|works?|working|is|am)\s+(?:to|in|into|at|from)\s+(?:the\s+)?"
            rf"(?P<k>{WEEKLY_PLACES_EN})\s+(?:on|every)\s+(?P<v>{WEEKDAYS_EN}(?:(?:\s*,\s*|\s+and\s+|\s*&\s*){WEEKDAYS_EN})*)",
        ),
        (
            "weekly:{k}",
            rf"每(?:周|星期|礼拜)(?P<v>{WEEKDAYS_ZH}(?:(?:和|、|跟|与|及|，|,)?(?:周|星期|礼拜)?{WEEKDAYS_ZH})*)"
            rf"(?:都|会)?(?:(?:早上|上午|中午|下午|晚上|夜里)?(?:去|到|在|回)(?P<k>{WEEKLY_PLACES_ZH})|"
            rf"(?:早上|上午|中午|下午|晚上|夜里)?(?:值|上|轮)(?P<k2>{SHIFTS_ZH})|"
            # An activity the clause ends on: "每周三和周六早上去游泳".
            r"(?:早上|上午|中午|下午|晚上|夜里)?(?:去|到)(?P<k3>[\u4e00-\u9fff]{2,4}?)(?=[。，,.；;]|$))",
        ),
        # Days a place is kept to, said without 每: "现在只有周三能在家办公" (never one week's day: "下周三去公司").
        (
            "weekly:{k}",
            rf"(?:只有|只在|只|现在|如今|目前|改成|改为)(?:每)?(?:周|星期|礼拜)"
            rf"(?P<v>{WEEKDAYS_ZH}(?:(?:和|、|跟|与|及|，|,)?(?:周|星期|礼拜)?{WEEKDAYS_ZH})*)"
            rf"(?:才|能|可以|都|会|要)*(?:早上|上午|中午|下午|晚上)?(?:去|到|在|回)(?P<k>{WEEKLY_PLACES_ZH})",
        ),
        # The place first, then the new days: "工作室改成周三和周四去了，周二和周五不去了。" (the old days, named as no
        # longer, are not the value).
        (
            "weekly:{k}",
            rf"(?:(?P<k>{WEEKLY_PLACES_ZH}|{SHIFTS_ZH})|^\W*(?:用户|我)?的?(?P<k3>[\u4e00-\u9fff]{{2,4}}?))"
            r"(?:改成|改到|换成|换到)了?每?(?:周|星期|礼拜)"
            rf"(?P<v>{WEEKDAYS_ZH}(?:(?:和|、|跟|与|及|，|,)?(?:周|星期|礼拜)?{WEEKDAYS_ZH})*)",
        ),
        # A meeting moved: "组会改到周三下午三点了。" (the meeting must come just before the verb: "下周组会因为节假日改到
        # 12月9日" is one week's exception, not the standing time).
        (
            "when:{ev}",
            r"(?P<ev>[\u4e00-\u9fff]{0,4}?(?:会|课|面试|复诊))(?:时间)?(?:改到|改成|挪到|推迟到|提前到|调到|换到|定在)了?"
            r"(?P<v>[^，。；,;]+)",
        ),
        # A favourite said with the value first: "Rust is now their favorite language", "Rust现在是用户最喜欢的语言".
        (
            "my:{k}",
            r"(?P<v>[\w#+.-]+(?: [\w#+.-]+){0,2}?)\s+is\s+(?:now\s+|still\s+)?(?:my|their|the user's|his|her)\s+"
            r"(?:new\s+|current\s+)?(?P<k>favou?rite\s+(?:[\w-]+\s+){0,2}?[\w-]+)\s*(?:[.,;!]|$)",
        ),
        (
            "my:{k}",
            r"(?P<v>[\w#+.-]+|[\u4e00-\u9fff]{1,8}?)(?:现在|已经|如今)?(?:是|成了|变成了?)(?:用户|我)(?:现在)?"
            r"(?P<k>最喜欢的[\u4e00-\u9fff]{1,6})",
        ),
        (
            "my:{k}",
            r"(?:用户|我)(?:现在)?(?P<k>最喜欢的[\u4e00-\u9fff]{1,6}?)(?:现在|已经|如今)?(?:是|成了|变成了?|改成了?)"
            r"(?P<v>[^，。；,.;]+)",
        ),
        (
            "who-is:{k}",
            rf"^(?P<v>[\w-]+(?: [\w-]+)?)\s+(?:is|has become|became)\s+(?:now\s+)?(?:the|our)\s+(?:new\s+)?"
            rf"(?P<k>(?:[\w-]+\s+){{0,2}}?(?:{ROLES_HELD}))\b(?:\s+(?:on|of|for|at|in)\s+(?P<org>[^.]+?))?"
            r"(?:\s+now)?\s*\.?$",
        ),
        (
            "my:{k}",
            rf"^(?P<v>[\w-]+(?: [\w-]+)?)\s+(?:is|has become|became)\s+(?:now\s+)?(?:the user's|their|my)\s+"
            rf"(?:new\s+)?(?P<k>(?:[\w-]+\s+){{0,2}}?(?:{ROLES_HELD}))\b",
        ),
        ("my:address", r"\blives?\s+at\s+(?P<v>\d[^,;]*)"),
        (
            # When an event is: "The user's meeting with the design team is at 2pm on Friday." and "The design
            # team meeting moved to 3pm on Friday." share the key "when:design meeting team".
            "when:{ev}",
            rf"^(?P<ev>(?:[\w'-]+\s+){{0,6}}?(?:{EVENTS})\b(?:\s+(?:with|for|of|about)\s+(?:[\w'-]+\s+){{0,4}}?)?)\s*"
            r"(?:(?:is|was|has been|got|will be)\s+)?(?:now\s+)?(?:(?:moved|rescheduled|pushed(?: back)?|changed|"
            rf"shifted|brought forward)\s+to\s+|(?:at|on|is)\s+)(?P<v>{WHEN}[^.;]*)",
        ),
        (
            "home",
            r"\b(?:lives?|living|resides?|residing|is based|based|moved|moving|relocated|relocating|settled|posted|transferred|"
            r"seconded)\s+"
            # "relocated again, this time to Porto", "moved back to Leeds", "moved once more to Ghent".
            r"(?:(?:back|again|once more|once again|over|,|this time)\s*){0,4}(?:in|to)\s+(?P<v>[^,.;]+)|"
            # "Is now a resident of Porto", "Is officially a Porto resident" (a name: see ``_attribute``).
            r"\bresident of\s+(?P<v2>[^,.;]+)|\b(?:is|am|became|now)\s+(?:(?:now|officially|finally)\s+)*an?\s+"
            r"(?P<v3>[^\s,.;]+(?: [^\s,.;]+)?)\s+resident\b",
        ),
        (
            "home",
            r"\b(?:bought|rents?|renting|owns?|shares?|sharing|has|signed for|signed (?:a|the) lease on)\s+"
            r"(?:a|an|their|his|her|my|our)\s+(?:new\s+)?(?:[\w-]+\s+){0,2}?"
            r"(?:house|flat|apartment|place|home|room|condo|studio|cottage)\s+(?:in|near|outside)\s+(?P<v>[^,.;]+)",
        ),
        ("home", r"\bcalls?\s+(?P<v>[A-Z][^,.;]*?)\s+home\b"),
        # "is renting near their sister in Sumqayıt now": who or what it is near, then the place.
        (
            "home",
            r"\b(?:is|am|are)\s+(?:now\s+)?(?:renting|living|staying)\s+(?:near|with|close to|next to)\s+[^,.;]{1,30}?\s+in\s+"
            r"(?P<v>[A-Z][^,.;]*)",
        ),
        # "The user's new flat is in Trebnje": where one's home is, said of the home.
        (
            "home",
            r"^(?:the user's|user's|my|their)\s+(?:new\s+)?(?:flat|place|house|apartment|home|room)\s+is\s+(?:now\s+)?"
            r"in\s+(?P<v>[^,.;]+)",
        ),
        # "is in Chatsworth now": a place one is in now (a name: see ``_unnamed_place``; not "in hospital now").
        ("home", r"\b(?:is|am|are)\s+(?:now\s+)?(?:based\s+)?in\s+(?P<v3>[^\W\d][^,.;]{1,40}?)\s+now\b"),
        # "is in a small flat in Ararototangi now": a home said by the place one lives in.
        (
            "home",
            r"\b(?:is|am|are)\s+(?:now\s+)?in\s+(?:a|an|their|his|her|my)\s+(?:[\w-]+\s+){0,2}?"
            r"(?:house|flat|apartment|place|home|room|condo|studio|cottage)\s+(?:in|near|outside)\s+(?P<v>[^,.;]+)",
        ),
        (
            "home",
            r"(?:住在|家住|住(?![了过着一])|生活在|定居在|定居|落户|安家在|安家|搬到了?|搬去了?|搬回了?|搬进了?|搬家到了?|移居到?|现居)"
            r"(?P<v>[^，。；,.;]+)|在(?P<v2>[^，。；,.;在]{1,20}?)(?:安家|定居|落户|买了房|租了房|租房|住)|"
            r"是(?P<v3>[^，。；,.;是]{1,20}?)(?:的)?(?:居民|市民|常住人口)|"
            # The home said of the home: "用户的家在杭州", "我们家在Kimberley", "用户新家在Mbombela".
            r"(?:^|[，,；;])(?:用户|我们?)?(?:的)?新?家(?:现在|就)?(?:在|安在)(?P<v4>[^，。；,.;]+)",
        ),
        (
            "employer",
            r"\b(?:works?|working|employed|is employed|has a job|got a job|a new job|started|joined|is)\s+"
            r"(?:at|for|with)\s+(?P<v>[A-Z0-9][^,.;]*)",
        ),
        ("employer", r"\b(?:joined|works? at|working at)\s+(?P<v>[^,.;]+)"),
        # Training or a job begun at a place: "started their ward placement at Komfo Anokye", "Starts at the
        # Acheampong-Fosu clinic on the first" (not "starts at 9").
        (
            "employer",
            r"\bstarted\s+(?:their|his|her|my|a|the)\s+(?:new\s+)?(?:[\w-]+\s+){0,2}?(?:placement|residency|internship|"
            r"rotation|job|role|position|apprenticeship|post)\s+(?:at|with)\s+(?P<v>[A-Z0-9][^,.;]*)|"
            r"\b(?:starts|is starting|will start)\s+(?:work\s+)?at\s+(?:the\s+)?(?!(?:noon|midnight|one|two|three|four|five|six|"
            r"seven|eight|nine|ten|eleven|twelve|weekend|end|start|beginning|same|top|bottom|latest|earliest)\b)"
            r"(?P<v2>[^\W\d][^,.;]*)",
        ),
        # A line of work at a named place: "Is doing payroll at Lehtmets-Laane", "does IT support for Kovač".
        (
            "employer",
            r"\b(?:is |am )?(?:doing|does)\s+(?!(?:the|a|an|some|well|good|great|fine)\b)(?:[\w-]+\s+){1,5}?"
            r"(?:at|for)\s+(?P<v>[A-Z0-9][^,.;]*)",
        ),
        # "在区图书馆做古籍修复": a line of work at a place named as an institution.
        (
            "employer",
            r"在(?P<v>[^，。；,.;在]{1,20}?(?:馆|院|所|局|厂|司|校|行|站|心|园|部|社))做(?![了过饭菜作业家务梦])"
            r"[\u4e00-\u9fffA-Za-z]{2,8}(?:[，,。.；;]|$)",
        ),
        # "took the front desk job at Dallinger & Marte", "landed a new role with Wise".
        (
            "employer",
            r"\b(?:took|takes|got|landed|accepted|started|has)\s+(?:a|an|the)\s+(?:new\s+)?(?:[\w-]+\s+){0,3}?"
            r"(?:job|position|role|post)\s+(?:at|with|in)\s+(?P<v>[A-Z0-9][^,.;]*)",
        ),
        (
            "employer",
            # Not a diet: "Is a vegan at heart" says what they eat, not where they work.
            rf"\b(?:is|am|works as)\s+(?:an?|the)\s+(?!(?:{DIETS})\b)(?:[\w-]+\s+){{0,3}}?(?:at|for|with)\s+(?P<v>[a-z0-9][^,.;]*)",
        ),
        (
            "employer",
            r"\b(?:(?:got |was |been )?hired|employed|(?:took|got|accepted|landed|started)\s+(?:a|an|the)\s+(?:new\s+)?"
            r"(?:job|position|role|offer)|signed(?:\s+on)?|freelances?|freelancing|interns?|interning|contracts?|"
            r"contracting)\s+(?:at|by|with|for|from)\s+(?P<v>[A-Z0-9][^,.;]*)",
        ),
        (
            "employer",
            r"\b(?:quit|left|resigned from|handed in (?:their|his|her|my) notice at|(?:laid off|let go|fired|sacked|made "
            r"redundant)\s+(?:from|by|at)|(?:is |am )?(?:done|finished) at|last day at)\s+(?:(?:their|his|her|my|the)\s+)?"
            r"(?:(?:job|position|role|work)\s+)?(?:at\s+)?(?P<v>[A-Z0-9][^,.;]*)",
        ),
        (
            "employer",
            r"(?:在|于)(?P<v>[^，。；,.;在]{1,20}?)(?:工作(?![室服证日量台组坊间餐狂表单簿制])|上班|任职|就职|实习|教书|任教)|(?:跳槽到了?|跳槽去了?|入职了?|加入了?|"
            r"跳到了?(?=[^，。；,.;]{0,20}?(?:公司|厂|集团|银行|医院|学校|单位))|"
            r"就职于|任职于|供职于|受雇于)(?P<v2>[^，。；,.;]+)|被(?P<v3>[^，。；,.;]{1,20}?)(?:录用|聘用|雇用|招进)|"
            r"(?:去|到|进)(?!年|过)了?(?P<v4>(?:[^，。；,.;]|\.(?=\S)){1,30}?)(?:工作(?![室服证日量台组坊间餐狂表单簿制])|上班|任职|报到)|拿到了?(?P<v5>[^，。；,.;]{1,20}?)的\s*offer|"
            r"换了?(?:份|个)?(?:工作|公司)[^。；;]*?在(?P<v6>[^，。；,.;在]+)|"
            # A role at a workplace: "在Andresen AS做产品设计", "在一家出版社当编辑".
            r"在(?P<v7>[^，。；,.;在]{1,20}?)(?:做|当)[\u4e00-\u9fff]{0,4}?"
            r"(?:师|士|员|生|工|官|经理|主管|编辑|记者|设计|会计|销售|客服)(?:[，,。.；;]|$)",
        ),
        ("role", r"\b(?:works? as|working as|is now|job is|role is|promoted to)\s+(?:an?\s+)?(?P<v>[^,.;]+)"),
        (
            "diet",
            rf"\b(?:is|am|are|went|became|eats?|turned)\s+(?:(?:a|an|fully|strictly|mostly)\s+)*(?P<v>{DIETS})\b",
        ),
        ("diet", rf"\b(?:not|no longer)\s+(?:a\s+|an\s+)?(?P<v>{DIETS})\b"),
        # Given up: "Decided to give up their vegetarianism", "quit being vegan" (read as a negation below).
        ("diet", rf"{GAVE_UP}\s+(?:(?:my|their|his|her|being)\s+)?(?:a\s+|an\s+)?(?P<v>{DIETS})\w*"),
        ("diet", r"(?P<v>吃素|素食主义者|素食者|纯素|吃全素)"),
        ("diet", rf"\b(?P<v>{DIETS})\b"),  # Named anywhere else: "started eating fish, so pescatarian is fine".
        # How one gets to work: "Takes the bus to work now", "用户骑电动自行车上班" (the way, or the verb if none).
        (
            "commute",
            r"\b(?P<v2>takes?|rides?|drives?|cycles?|bikes?|walks?|commutes?|catch(?:es)?)\s+(?:(?:the|a|my|their)\s+)?"
            r"(?P<v>bus|train|tram|metro|subway|tube|ferry|bike|car|e-bike|scooter|motorbike)?\s*(?:to|into)\s+(?:and from\s+)?"
            r"(?:work|the office|school|campus)\b",
        ),
        ("commute", r"(?:骑|坐|开|搭|乘)(?P<v>[\u4e00-\u9fff]{1,6}?)(?:上班|上学|去公司|去学校|去办公室|通勤)"),
        # A named line taken now: "hops on the S-Bahn now".
        (
            "commute",
            r"\b(?:hops? on|takes?|rides?|catch(?:es)?)\s+the\s+(?P<v>[A-Z][\w-]+)\b(?=[^.;]*\b(?:now|these days|instead)\b)",
        ),
        (
            "commute",
            r"(?:上班|上学|通勤)[^。；;]{0,8}?(?:骑|坐|开|搭|乘)(?P<v>[\u4e00-\u9fff]{1,5}?)(?=[\s，。,；;]|$)",
        ),
        (
            "reply_language",
            rf"\b(?:answer|answers|reply|replies|respond|responds|write|writes|talk|talks|speak to (?:me|the user))"
            rf"\w*\s+(?:\w+\s+){{0,3}}in\s+(?P<v>{LANGS})\b",
        ),
        ("reply_language", rf"(?:用|使用)(?P<v>{LANGS})(?:回答|回复|交流|说话)"),
        (
            "routine:{k}",
            r"\b(?P<k>wakes? up|gets? up|goes to bed|goes to sleep|works? out|exercises?)\s+(?P<v>(?:at|on|every|around)\b.+)",
        ),
        ("routine:{k}", r"(?P<v>[^，。,.]{1,10}?)(?P<k>起床|睡觉|健身|跑步)"),
        (
            "my:{k}",
            r"^(?:the user's|user's|my|the agent's)\s+(?:new\s+|current\s+|former\s+)?(?P<k>[\w' -]{2,30}?)\s+(?:is|is now|"
            r"has become|is called|(?:has\s+|have\s+)?(?:(?:just|recently|now|finally)\s+)?(?:changed|switched) to)\s+(?P<v>.+)",
        ),
        # "用户的车是…", "用户新手机是…"; never an adverb before 是 ("用户还是最喜欢蓝色": still, not an attribute 还).
        (
            "my:{k}",
            r"^(?:用户|我)的?(?:新)?(?!(?:还|也|就|都|真|只|总|倒|又|仍|仍然|依然|一直|其实|确实|原来|本来|现在|已经|如今|不|才|正|"
            r"可|却|应该|可能|大概|一定|肯定|主要)(?:是|叫))(?P<k>[\u4e00-\u9fff]{1,6}?)(?:是|叫)(?P<v>.+)",
        ),
        ("name", r"^(?:prefers to be called|goes by|wants to be called|likes to be called)\s+(?P<v>.+)"),
        ("name", r"^(?:用户)?(?:希望被称为|叫)(?P<v>.+)"),
        (
            "prefers:{k}",
            r"\b(?:prefers?|likes?|loves?|wants?)\s+(?:(?:my|their|the)\s+)?(?P<k>answers|replies|responses|summaries|"
            r"explanations|messages)\s+(?:kept\s+|to be\s+)?(?!(?:on|at|in|for|to|with|about|by|from|and|or)\b)(?P<v>[\w-]+)\b",
        ),
        (
            "prefers:{k}",
            r"\b(?:prefers?|likes?|loves?|wants?|would like)\s+(?:(?:my|their|the)\s+)?(?P<v>[\w-]+)\s+"
            r"(?P<k>answers|replies|responses|summaries|explanations|messages)\b",
        ),
    )
)
