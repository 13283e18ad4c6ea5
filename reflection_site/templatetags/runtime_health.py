"""``{% runtime_problems as problems %}``: what keeps turns from being decided, for the admin index's banner."""

from __future__ import annotations

from django import template

from reflection_site.health import runtime_problems as _runtime_problems

register = template.Library()


@register.simple_tag
def runtime_problems() -> list[str]:
    return _runtime_problems()
