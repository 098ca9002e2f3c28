"""step_heads follows the steps table (insert, re-import, delete) and serves cut steps with their length."""

from __future__ import annotations

from annotator.models import Step, Trajectory
from annotator.store.step_heads import get_step_head
from annotator.store.steps import get_step, step_previews
from annotator.store.trajectories import delete_trajectory, save_trajectory
from annotator.views import HEAD_CHARS


def _traj(content: str, h: str) -> Trajectory:
    steps = [Step(index=0, agent="A", kind="tool_result", tool_name="cat", content=content, raw={"c": content}),
             Step(index=1, agent="B", content="short")]
    return Trajectory(id="t", source_format="test", content_hash=h, steps=steps)


def test_heads_follow_the_steps(db):
    save_trajectory(db, _traj("x" * 5000, "1"))
    first = step_previews(db, "t")
    assert [(p.index, p.agent, p.kind, p.tool_name, len(p.preview), p.length) for p in first] == [
        (0, "A", "tool_result", "cat", 240, 5000),
        (1, "B", "message", None, 5, 5),
    ]
    save_trajectory(db, _traj("y" * 300, "2"))
    assert [p.length for p in step_previews(db, "t")] == [300, 5]
    assert step_previews(db, "t")[0].preview == "y" * 240
    delete_trajectory(db, "t")
    assert step_previews(db, "t") == []


def test_step_head_is_cut_without_raw(db):
    save_trajectory(db, _traj("z" * (HEAD_CHARS + 500), "1"))
    step, total = get_step_head(db, "t", 0)
    assert (step.content, total, step.raw, step.tool_name) == ("z" * HEAD_CHARS, HEAD_CHARS + 500, None, "cat")
    whole = get_step(db, "t", 0)
    assert step.model_copy(update={"content": whole.content, "raw": whole.raw}) == whole
    short, total = get_step_head(db, "t", 1)
    assert (short.content, total) == ("short", 5)
