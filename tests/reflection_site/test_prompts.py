"""One prompt loader (reflection_site.prompts): a versioned pair of string.Template files per package."""

from __future__ import annotations

from pathlib import Path

import pytest

from reflection_site.prompts import load_prompt, prompts_dir


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "demo-v1.system.txt").write_text("Rules for $file_name.\n", encoding="utf-8")
    (tmp_path / "demo-v1.user.txt").write_text("Fact: $fact\n", encoding="utf-8")
    (tmp_path / "plain-v1.system.txt").write_text("No placeholders, 100 % plain.\n", encoding="utf-8")
    (tmp_path / "plain-v1.user.txt").write_text("$text", encoding="utf-8")
    return tmp_path


def test_a_prompt_is_a_system_and_a_user_template(folder):
    system, user = load_prompt(folder, "demo-v1")
    assert system.template == "Rules for $file_name.\n"
    assert user.substitute(fact="tea") == "Fact: tea\n"


def test_messages_fill_in_both_templates(folder):
    prompt = load_prompt(folder, "demo-v1")
    assert prompt.messages(system={"file_name": "USER.md"}, user={"fact": "Prefers tea"}) == [
        {"role": "system", "content": "Rules for USER.md.\n"},
        {"role": "user", "content": "Fact: Prefers tea\n"},
    ]
    with pytest.raises(KeyError):
        prompt.messages(user={"fact": "x"})  # the system prompt's $file_name is missing


def test_a_system_prompt_without_placeholders_reads_as_itself(folder):
    messages = load_prompt(folder, "plain-v1").messages(user={"text": "a note"})
    assert messages[0]["content"] == "No placeholders, 100 % plain.\n"


def test_an_unknown_version_is_file_not_found(folder):
    with pytest.raises(FileNotFoundError):
        load_prompt(folder, "demo-v9")


@pytest.mark.parametrize(("package", "version"), [("sessions_app", "gate-v1"), ("guardian_app", "guardian-v1")])
def test_an_app_package_names_its_prompts_folder(package, version):
    assert prompts_dir(package).name == "prompts"
    system, user = load_prompt(package, version)
    assert system.template and user.template
