"""Grounding, windows and voting: the pure parts of turning answers into verdicts."""

from __future__ import annotations

import pytest

from annotator.labelling.grounding import check_answer, quote_in_steps
from annotator.labelling.verdicts import InvalidAnswer, JudgeAnswer, ModeVerdict
from annotator.labelling.voting import majority
from annotator.labelling.windows import clip, merge_windows, plan_windows
from annotator.models import Step
from annotator.taxonomy import load_taxonomy

TAX = load_taxonomy()
STEPS = [Step(index=i, content=c) for i, c in enumerate(["Start the task.", "I will  search\n again for  the file.", "done"])]


def test_quote_matches_after_whitespace_normalisation_only_in_cited_steps():
    by_index = {s.index: s for s in STEPS}
    assert quote_in_steps("search again for the", by_index, [1])
    assert not quote_in_steps("search again for the", by_index, [0, 2])
    assert not quote_in_steps("", by_index, [1])


def test_present_with_quote_in_cited_step_is_grounded():
    a = JudgeAnswer.model_validate({"modes": [
        {"mode_id": m, "present": m == "FM-1.3", "onset_step": 1 if m == "FM-1.3" else None,
         "quote": "search again" if m == "FM-1.3" else None}
        for m in TAX.mode_ids]})
    by = {v.mode_id: v for v in check_answer(a, TAX, STEPS)}
    assert by["FM-1.3"].verdict == "present" and by["FM-1.3"].grounded is True
    assert by["FM-1.1"].verdict == "absent"


def test_quote_not_in_the_trajectory_is_stored_ungrounded():
    a = JudgeAnswer.model_validate({"modes": [
        {"mode_id": m, "present": m == "FM-1.3", "onset_step": 1 if m == "FM-1.3" else None,
         "quote": "never said" if m == "FM-1.3" else None} for m in TAX.mode_ids]})
    by = {v.mode_id: v for v in check_answer(a, TAX, STEPS)}
    assert by["FM-1.3"].grounded is False


@pytest.mark.parametrize(
    ("modes", "message"),
    [
        ([{"mode_id": "FM-9.9", "present": True}], "unknown mode id 'FM-9.9'"),
        ([], "no answer for mode"),
        ([{"mode_id": "FM-1.3", "present": True, "onset_step": 7, "quote": "x"}], "do not exist"),
        ([{"mode_id": "FM-1.3", "present": False}, {"mode_id": "1.3", "present": True}], "more than once"),
    ],
)
def test_invalid_answers_are_refused_with_a_reason(modes, message):
    rest = [{"mode_id": m, "present": False} for m in TAX.mode_ids if m != "FM-1.3"]
    with pytest.raises(InvalidAnswer, match=message):
        check_answer(JudgeAnswer.model_validate({"modes": rest + modes}), TAX, STEPS)


def test_citing_a_step_outside_the_window_is_invalid():
    a = JudgeAnswer.model_validate({"modes": [
        {"mode_id": m, "present": m == "FM-1.3", "onset_step": 0 if m == "FM-1.3" else None, "quote": "Start"}
        for m in TAX.mode_ids]})
    with pytest.raises(InvalidAnswer, match="valid steps: 1..2"):
        check_answer(a, TAX, STEPS[1:])


def test_clip_keeps_head_and_tail_with_a_visible_marker():
    text = "A" * 5000 + "MIDDLE" + "Z" * 5000
    clipped = clip(text, 600)
    assert clipped.startswith("A" * 400) and clipped.endswith("Z" * 200)
    assert "characters clipped" in clipped and "MIDDLE" not in clipped
    assert clip("short", 600) == "short"


def test_windows_fit_the_budget_overlap_and_cover_every_step():
    sizes = [10] * 20
    windows = plan_windows(sizes, 50, overlap=2)
    assert all(sum(sizes[i] for i in w) <= 50 for w in windows)
    assert windows[0].start == 0 and windows[-1].stop == 20
    for a, b in zip(windows, windows[1:], strict=False):
        assert b.start == a.stop - 2
    assert plan_windows(sizes, 1000) == [range(0, 20)]
    assert plan_windows([500, 10], 100) == [range(0, 1), range(1, 2)]


def test_merge_prefers_grounded_then_earliest_onset():
    def v(verdict, onset=None, grounded=None):
        return ModeVerdict(mode_id="FM-1.3", verdict=verdict, onset_step=onset, grounded=grounded)

    merged = merge_windows([[v("absent")], [v("present", 9, False)], [v("present", 12, True)], [v("present", 11, True)]])
    assert merged[0].verdict == "present" and merged[0].onset_step == 11 and merged[0].grounded
    assert merge_windows([[v("absent")], [v("present", 5, False)]])[0].grounded is False
    assert merge_windows([[v("absent")], [v("unknown")]])[0].verdict == "absent"


def test_majority_vote_keeps_every_vote():
    def vs(verdict, onset=None):
        return [ModeVerdict(mode_id="FM-1.3", verdict=verdict, onset_step=onset, grounded=verdict == "present")]

    out = majority([("a#0", vs("present", 4)), ("a#1", vs("present", 2)), ("b#0", vs("absent"))])[0]
    assert out.verdict == "present" and out.onset_step == 2
    assert out.confidence == pytest.approx(2 / 3)
    assert [x["voter"] for x in out.votes] == ["a#0", "a#1", "b#0"]
    tie = majority([("a#0", vs("present", 1)), ("b#0", vs("absent"))])[0]
    assert tie.verdict == "unknown" and tie.confidence == 0.0
    single = majority([("a#0", vs("absent"))])[0]
    assert single.votes == []
