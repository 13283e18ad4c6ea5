"""How the console draws a write: the memory files to choose from, a coloured unified diff, a side-by-side
table and a status badge; stored text is always escaped."""

from __future__ import annotations

import difflib

from django.templatetags.static import static
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from guardian_app.write.diffs import line_kinds
from reflection_site import memory_files


def file_choices() -> list[tuple[str, str]]:
    """The workspace profile's memory files (a form asks when it is drawn: tests change the profile)."""
    return [(name, name) for name in memory_files.active().files]


def file_choices_or_same() -> list[tuple[str, str]]:
    return [("", "(same file)"), *file_choices()]


# A stylesheet, not an inline <style>: the Content-Security-Policy allows the admin's own files only.
DIFF_STYLE = format_html('<link rel="stylesheet" href="{}">', static("guardian_app/diff.css"))


def diff_html(diff: str | None) -> SafeString:
    """A unified diff as coloured HTML; every line is escaped (a fact holding ``<script>`` is text)."""
    if not diff:
        return format_html('<p class="gdiff-empty">{}</p>', "No change.")
    rows = [(kind, line or " ") for kind, line in line_kinds(diff)]
    return format_html('<pre class="gdiff">{}</pre>', format_html_join("", '<span class="{}">{}</span>', rows))


def side_by_side(before: str | None, after: str | None, name: str) -> SafeString:
    # difflib.HtmlDiff escapes &, < and > itself; mark_safe is for its markup only.
    table = difflib.HtmlDiff(wrapcolumn=90).make_table(
        (before or "").splitlines(), (after or "").splitlines(), f"a/{name}", f"b/{name}", context=True, numlines=3
    )
    return mark_safe(table)  # noqa: S308 - HtmlDiff output, escaped by difflib.


def status_badge(status: str) -> SafeString:
    return format_html('<span class="gbadge {}">{}</span>', status, status.replace("_", " "))
