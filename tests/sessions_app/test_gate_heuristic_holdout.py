"""The offline gate on phrasings its rules were not written against: a second, independent table.

tests/sessions_app/test_heuristic_gate.py holds the rules' own labelled table; these 40 rows were
written afterwards by someone else and never used to tune the rules, so their accuracy is the figure
to expect on new text. The README quotes it. Raise the floor when the rules improve, never lower it.
"""

from __future__ import annotations

from sessions_app.heuristic_gate import classify_turn

HOLDOUT = [
    # English
    ("Remember my passport expires in August.", "UPDATE_MEMORY"),
    ("Don't forget the quarterly review is next Tuesday.", "UPDATE_MEMORY"),
    ("Note that our anniversary is on the 14th.", "UPDATE_MEMORY"),
    ("I prefer dark mode in every app.", "UPDATE_USER"),
    ("My wife's name is Clara.", "UPDATE_USER"),
    ("I'm based in Toronto.", "UPDATE_USER"),
    ("I usually wake up at 6am.", "UPDATE_USER"),
    ("I love hiking on weekends.", "UPDATE_USER"),
    ("I'm learning Japanese.", "UPDATE_USER"),
    ("I work at a hospital as a nurse.", "UPDATE_USER"),
    ("Please always cite your sources.", "UPDATE_SOUL"),
    ("Don't be so formal with me.", "UPDATE_SOUL"),
    ("Use bullet points when you summarise.", "UPDATE_SOUL"),
    ("Your name is Sage from now on.", "UPDATE_IDENTITY"),
    ("You're my writing coach.", "UPDATE_IDENTITY"),
    ("Run `npm run build` before deploying.", "UPDATE_TOOLS"),
    ("Our Grafana dashboard is at https://grafana.internal.example.com.", "UPDATE_TOOLS"),
    ("The deploy key lives in the ops vault.", "UPDATE_TOOLS"),
    ("What time is it in Tokyo?", "NO_WRITE"),
    ("Can you summarise this article?", "NO_WRITE"),
    ("Good morning!", "NO_WRITE"),
    ("Thank you so much!", "NO_WRITE"),
    ("lol", "NO_WRITE"),
    ("Write me a haiku about autumn.", "NO_WRITE"),
    ("I'm tired today.", "NO_WRITE"),
    # Chinese
    ("记住我的护照八月到期", "UPDATE_MEMORY"),
    ("别忘了下周二有季度评审", "UPDATE_MEMORY"),
    ("我喜欢晚上跑步", "UPDATE_USER"),
    ("我老婆叫小芳", "UPDATE_USER"),
    ("我在深圳上班", "UPDATE_USER"),
    ("我对海鲜过敏", "UPDATE_USER"),
    ("以后回答请附上出处", "UPDATE_SOUL"),
    ("别那么正式", "UPDATE_SOUL"),
    ("你以后叫小白", "UPDATE_IDENTITY"),
    ("发布前先运行 `make test`", "UPDATE_TOOLS"),
    ("监控面板在 https://grafana.example.com", "UPDATE_TOOLS"),
    ("现在几点了？", "NO_WRITE"),
    ("早上好", "NO_WRITE"),
    ("帮我写一首诗", "NO_WRITE"),
    ("太感谢了", "NO_WRITE"),
]

# Measured when this table was written: 39 of 40 ("The deploy key lives in the ops vault." reads as no fact).
MEASURED_ACCURACY = 39 / 40


def test_decision_accuracy_on_text_the_rules_never_saw():
    misses = [
        (message, classify_turn(message).decision)
        for message, decision in HOLDOUT
        if classify_turn(message).decision != decision
    ]
    accuracy = 1 - len(misses) / len(HOLDOUT)
    assert accuracy >= MEASURED_ACCURACY, misses


def test_the_independent_table_covers_every_decision_in_both_languages():
    english = {decision for message, decision in HOLDOUT if message.isascii()}
    chinese = {decision for message, decision in HOLDOUT if not message.isascii()}
    assert (
        english
        == chinese
        == {"NO_WRITE", "UPDATE_MEMORY", "UPDATE_USER", "UPDATE_SOUL", "UPDATE_IDENTITY", "UPDATE_TOOLS"}
    )
