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

from reflection_site.poisoning.chinese import CLASSES as CHINESE_CLASSES
from reflection_site.poisoning.english import CLASSES as ENGLISH_CLASSES
from reflection_site.poisoning.readings import ROT13, normalise, variants

__all__ = ["CLASS_NAMES", "hold_class", "hold_reason", "normalise", "variants"]

# Each class is a list of patterns; the first class with a pattern that matches names the reason.
_CLASSES = (*ENGLISH_CLASSES, *CHINESE_CLASSES)
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
    for reading in (norm[::-1], norm.translate(ROT13)):
        for name, reason, patterns in _CLASSES:
            if name == "override" and any(pattern.search(reading) for pattern in patterns):
                return name, reason
    return None


def hold_reason(text: str) -> str | None:
    """Why ``text`` must be held for review rather than written to memory, or None."""
    found = hold_class(text)
    return found[1] if found else None
