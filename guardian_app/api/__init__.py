"""The write guardian's JSON API: one router per part, each added in reflection_site/api.py."""
