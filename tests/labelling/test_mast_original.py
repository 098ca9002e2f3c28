"""The mast-original answer parser, including the cases the original judge's parser gets wrong."""

from __future__ import annotations

import pytest

from annotator.errors import LabellingError
from annotator.labelling import mast_original as mo
from annotator.labelling.verdicts import InvalidAnswer
from annotator.taxonomy import load_taxonomy

TAX = load_taxonomy()


def answer(lines: str, summary: str = "Fine.", completed: str = "no") -> str:
    return f"@@\nA. {summary}\nB. {completed}\nC. Failure modes:\n{lines}\n@@"


def test_long_and_short_line_forms():
    p = mo.parse(answer("1.1 Disobey Task Specification: yes\n1.2 no\n1.3: YES\n- **1.4 Loss of Conversation History:** no"), TAX)
    assert p.verdicts["FM-1.1"] == "present"
    assert p.verdicts["FM-1.2"] == "absent"
    assert p.verdicts["FM-1.3"] == "present"
    assert p.verdicts["FM-1.4"] == "absent"
    assert p.verdicts["FM-2.1"] == "unknown"


def test_echoed_names_containing_no_do_not_steal_the_answer():
    # the original parser reads "no" inside "Ignored" and "No or Incorrect Verification"
    p = mo.parse(answer("2.5 Ignored Other Agent's Input: yes\n3.2 No or Incorrect Verification: yes"), TAX)
    assert p.verdicts["FM-2.5"] == "present"
    assert p.verdicts["FM-3.2"] == "present"


def test_mode_mentioned_in_summary_does_not_steal_the_answer():
    text = answer("2.6 Action-Reasoning Mismatch: yes", summary="Tools failed, etc. 2.6 was not an issue")
    assert mo.parse(text, TAX).verdicts["FM-2.6"] == "present"


def test_code_dot_is_not_a_wildcard_and_two_codes_on_a_line_are_ambiguous():
    p = mo.parse(answer("1.2 1.3 yes\n2.1 Conversation Reset: no"), TAX)
    assert p.verdicts["FM-2.1"] == "absent"
    assert p.verdicts["FM-1.2"] == "unknown"
    assert p.verdicts["FM-1.3"] == "unknown"


def test_missing_or_unreadable_answers_are_unknown_not_no():
    p = mo.parse(answer("1.1 Disobey Task Specification: maybe\n1.3 Step Repetition: <yes or no>"), TAX)
    assert p.verdicts["FM-1.1"] == "unknown"
    assert p.verdicts["FM-1.3"] == "unknown"
    assert set(mo.parse("", TAX).verdicts.values()) == {"unknown"}
    assert set(mo.parse(None, TAX).verdicts.values()) == {"unknown"}


def test_contradicting_lines_for_one_mode_are_unknown():
    assert mo.parse(answer("1.1 yes\n1.1 no"), TAX).verdicts["FM-1.1"] == "unknown"


def test_task_completion_is_read_from_its_own_line():
    # the original regex finds "b. No" inside "web. Nothing" and says False
    text = "@@\nA. It searched the web. Nothing else was needed.\nB. yes\nC.\n1.1 no\n@@"
    p = mo.parse(text, TAX)
    assert p.task_completed is True
    assert p.summary == "It searched the web. Nothing else was needed."


def test_stray_codes_of_the_draft_taxonomy_are_ignored():
    p = mo.parse(answer("1.6 yes\n2.7 yes\n1.1 no"), TAX)
    assert p.verdicts["FM-1.1"] == "absent"
    assert "present" not in p.verdicts.values()


def test_an_answer_with_no_readable_mode_is_invalid():
    with pytest.raises(InvalidAnswer):
        mo.to_verdicts("I refuse.", TAX)
    verdicts = mo.to_verdicts(answer("1.3 Step Repetition: yes"), TAX)
    assert {v.mode_id: v.verdict for v in verdicts}["FM-1.3"] == "present"
    assert {v.mode_id: v.verdict for v in verdicts}["FM-1.1"] == "unknown"


def test_official_definitions_are_matched_by_name_not_by_their_swapped_numbers(shared_data):
    defs = mo.load_definitions(shared_data / "mast_official_text" / "definitions.txt", TAX)
    assert set(defs) == set(TAX.mode_ids)
    # the file's "3.2 Weak Verification" is our FM-3.3; its "3.3 No or Incorrect Verification" our FM-3.2
    assert defs["FM-3.3"].lower().startswith("weak verification")
    assert "omission of proper checking" in defs["FM-3.2"].lower()
    msgs = mo.messages(TAX, "TAG", "run", defs)
    user = msgs[1]["content"]
    assert "3.3 Incorrect verification: Weak verification" in user


def test_definitions_file_without_headings_is_refused(tmp_path):
    bad = tmp_path / "defs.txt"
    bad.write_text("nothing here\n")
    with pytest.raises(LabellingError, match="no '<code> <name>:'"):
        mo.load_definitions(bad, TAX)
