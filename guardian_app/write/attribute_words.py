"""The words the attribute rules of ``guardian_app.write.supersede`` are made of: tools that exclude each other
within a category, roles one person holds, events with a time, weekdays, places and shifts kept on weekdays, diets,
and languages; and the words of a thing given up that ``guardian_app.write.takeback`` reads. Pure data, Django-free.
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
    "phone": ("iphone", "android", "pixel", "galaxy"),
    # The computer one uses day to day, by its line's name: one at a time, as a phone.
    "computer": tuple(
        "macbook|macbook pro|macbook air|thinkpad|chromebook|surface laptop|surface pro|xps|imac|mac mini|mac studio|"
        "framework laptop|zenbook|vivobook|ideapad|matebook".split("|")
    ),
    "terminal": ("iterm", "iterm2", "alacritty", "kitty", "wezterm", "ghostty", "warp"),
    "package manager": ("npm", "pnpm", "yarn", "bun", "pip", "poetry", "uv", "pipenv", "conda"),
    "notes app": ("obsidian", "notion", "evernote", "logseq", "bear", "onenote"),
    "chat app": ("slack", "teams", "discord", "mattermost", "钉钉", "飞书", "企业微信"),
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
DIETS = r"vegetarian|vegan|pescatarian|keto|paleo|carnivore|omnivore|gluten-free|dairy-free|lactose-free|halal|kosher"
LANGS = (
    r"english|chinese|mandarin|cantonese|french|german|spanish|italian|portuguese|japanese|korean|dutch|russian|"
    r"arabic|hindi|polish|swedish|中文|英文|英语|法语|德语|日语|西班牙语|韩语|粤语|普通话"
)

# Something the person no longer has (``takeback``): "Sold the Brompton", "用户把自行车卖了", and a verb of having.
DISPOSED_EN = re.compile(
    r"\b(?:sold|gave away|got rid of|donated|scrapped|traded in)\s+(?:(?:the|my|our|their|his|her|a|an)\s+)?"
    r"(?P<thing>[\w'-]+(?:\s+(?!(?:to|for|on|in|at|last|this|yesterday|because|since|and|as|recently|now|already|today|finally|after|"
    r"before|online|off)\b)[\w'-]+){0,3})|"
    # The old one given to someone: "Gave my old Kindle to my niece."
    r"\bgave\s+(?:my|our|their|his|her|the)\s+old\s+(?P<old>[\w'-]+(?:\s+[\w'-]+)?)\s+to\b",
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
HAS_EN = r"\b(?:own|owns|has|have|bought|got|drives?|rides?|keeps?|uses?|plays?)\b[^.;]{0,40}?"
