"""Audits of a judge: `mast sample`, `mast report --audit` (PPI), blind reviews and automation bias.

The judge is a real `mast prelabel` run against the local test server, whose canned answers
(``JUDGE:FM-x.y`` markers) give it known verdicts; the people's labels are written with the
annotation session, as the TUI writes them, or imported in the export format.
"""

from __future__ import annotations

import csv
import html
import io
import os
import re

import numpy as np
import orjson
import pytest
from click.testing import CliRunner

from annotator.annotating.session import AnnotationSession
from annotator.cli import main
from annotator.models import Label
from annotator.annotating.queue import queue
from annotator.store import open_db
from annotator.store.labels import add_labels, current_labels
from annotator.store.samples import get_sample, sample_items
from annotator.report.stratified import share
from tests.openai_server import FakeOpenAI
from tests.report_data import MODES, add_trajectory
from annotator.taxonomy import load_taxonomy

ppi_py = pytest.importorskip("ppi_py")
TAX = load_taxonomy()
N = 120


def _truth(i: int) -> set[str]:
    """Trajectory i's true modes: FM-1.1 in every 4th, FM-2.3 in every 5th."""
    return {m for m, k in (("FM-1.1", 4), ("FM-2.3", 5)) if i % k == 0}


def _judge(i: int) -> set[str]:
    """The judge's verdicts: the truth, plus FM-1.1 over-called on every 7th, FM-2.3 missed on every 10th."""
    modes = set(_truth(i))
    if i % 7 == 3:
        modes.add("FM-1.1")
    if i % 10 == 0:
        modes.discard("FM-2.3")
    return modes


@pytest.fixture
def judged(tmp_path):
    """N trajectories labelled by a real judge run (run:1) against the local server."""
    path = tmp_path / "audit.db"
    db = open_db(path)
    for i in range(N):
        markers = " ".join(f"JUDGE:{m}" for m in sorted(_judge(i))) or "nothing"
        add_trajectory(db, f"t{i:03d}", outcome="failure" if i % 3 else "success", system="A" if i % 2 else "B",
                       steps=3)
        db.execute("UPDATE steps SET content = ? WHERE trajectory_id = ? AND idx = 1",
                   [f"ID:t{i:03d} markers {markers}", f"t{i:03d}"])
    db.conn.commit()
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")} | {"OPENAI_API_KEY": "sk-test"}
    with FakeOpenAI() as server:
        r = CliRunner().invoke(main, ["--db", str(path), "prelabel", "--model", "judge", "--base-url", server.base_url,
                                      "-q"], env=env, catch_exceptions=False)
    assert r.exit_code == 0, r.output
    return path, db


def invoke(path, *args):
    return CliRunner().invoke(main, ["--db", str(path), *args], env={"COLUMNS": "100"})


def _label_as(db, tid: str, annotator: str, present: set[str]) -> None:
    add_labels(db, [Label(trajectory_id=tid, mode_id=m, annotator=annotator, provenance="human",
                          verdict="present" if m in present else "absent") for m in MODES])


def test_the_judge_run_has_the_canned_verdicts(judged):
    _, db = judged
    labels = current_labels(db, "t003", "run:1")
    assert {lab.mode_id for lab in labels if lab.verdict == "present"} == _judge(3) == {"FM-1.1"}


def test_sample_is_stored_tagged_and_reproducible(judged):
    path, db = judged
    r = invoke(path, "sample", "-s", "run:1", "-n", "30", "--tag", "audit-1", "--seed", "7")
    assert r.exit_code == 0, r.output
    assert "sample audit-1: 30 of the 120 trajectories run:1 finished (simple random, seed 7)" in r.output
    items = sample_items(db, "audit-1")
    assert len(items) == 30 and {i.inclusion_probability for i in items} == {30 / N}
    assert {i.stratum for i in items} == {"all"} and get_sample(db, "audit-1").strata == {"all": (N, 30)}
    listed = invoke(path, "list", "--tag", "audit-1", "--json")
    assert sorted(orjson.loads(line)["id"] for line in listed.output.splitlines()) == [i.trajectory_id for i in items]
    assert sorted(q.summary.id for q in queue(db, "alice", tag="audit-1").rows) == [i.trajectory_id for i in items]
    again = invoke(path, "sample", "-s", "run:1", "-n", "30", "--tag", "audit-1", "--seed", "7")
    assert again.exit_code == 1 and "exists already" in again.output
    invoke(path, "sample", "-s", "run:1", "-n", "30", "--tag", "same-seed", "--seed", "7")
    assert [i.trajectory_id for i in sample_items(db, "same-seed")] == [i.trajectory_id for i in items]
    too_many = invoke(path, "sample", "-s", "run:1", "-n", "500", "--tag", "big")
    assert too_many.exit_code == 1 and "cannot draw 500" in too_many.output


def test_stratified_sample_oversamples_the_judges_positives(judged):
    path, db = judged
    r = invoke(path, "sample", "-s", "run:1", "-n", "40", "--tag", "strat", "--stratify", "verdict", "--mode", "FM-2.3")
    assert r.exit_code == 0, r.output
    sample = get_sample(db, "strat")
    positives = sum(1 for i in range(N) if "FM-2.3" in _judge(i))
    assert positives == 12  # fewer than an equal share (20): all are taken, the rest go to the other stratum
    assert sample.strata == {"FM-2.3 absent": (N - positives, 28), "FM-2.3 present": (positives, 12)}
    probs = {i.stratum: i.inclusion_probability for i in sample_items(db, "strat")}
    assert probs == {"FM-2.3 present": 1.0, "FM-2.3 absent": 28 / (N - positives)}


def _audit(db, tag: str, annotator: str = "alice") -> list[str]:
    ids = [i.trajectory_id for i in sample_items(db, tag)]
    for tid in ids:
        _label_as(db, tid, annotator, _truth(int(tid[1:])))
    return ids


def _reference(ids: list[str], strata: dict[str, str] | None = None) -> dict[str, tuple]:
    """Per mode, the corrected point computed from its definition (each stratum × judge-verdict
    cell's audited share, weighted by the cell's population share; for a simple random audit
    ppi-python's PPI with the judge recalibrated per verdict, the reference), its interval by
    :func:`annotator.report.stratified.share` over the same data, and the people's share."""
    all_ids = [f"t{i:03d}" for i in range(N)]
    out = {}
    for mode in ("FM-1.1", "FM-2.3"):
        y = np.array([mode in _truth(int(t[1:])) for t in ids], dtype=float)
        yhat = np.array([mode in _judge(int(t[1:])) for t in ids], dtype=float)
        yall = np.array([mode in _judge(int(t[1:])) for t in all_ids], dtype=float)
        stratum = np.array([strata[t] if strata else "all" for t in ids])
        stratum_all = np.array([strata[t] if strata else "all" for t in all_ids])
        if strata is None:
            f = np.vectorize({v: y[yhat == v].mean() for v in (0.0, 1.0)}.get)
            point = float(np.squeeze(ppi_py.ppi_mean_pointestimate(y, f(yhat), f(yall), lam=1.0)))
        else:
            cells = {(h, v) for h, v in zip(stratum_all, yall, strict=True)}
            point = sum(((stratum_all == h) & (yall == v)).sum() / N * y[(stratum == h) & (yhat == v)].mean()
                        for h, v in cells)
        interval = share(y, stratum, stratum_all, yhat, yall)
        out[mode] = (point, interval.low, interval.high, y.mean())
    return out


def test_report_with_an_audit_gives_three_estimates_in_every_format(judged, tmp_path):
    path, db = judged
    invoke(path, "sample", "-s", "run:1", "-n", "60", "--tag", "audit-1", "--seed", "3")
    ids = _audit(db, "audit-1")
    r = invoke(path, "report", "-s", "run:1", "--audit", "alice", "--format", "json", "--bootstrap", "0")
    assert r.exit_code == 0, r.output
    data = orjson.loads(r.stdout)
    tables = {t["name"]: t for s in data["sections"] for t in s["tables"]}
    table = tables["prevalence_ppi"]
    assert table["columns"][:12] == ["mode", "n_audit", "n_total", "judge", "judge_ci_low", "judge_ci_high", "human",
                                     "human_ci_low", "human_ci_high", "ppi", "ppi_ci_low", "ppi_ci_high"]
    rows = {rec["mode"]: rec for rec in table["records"]}
    reference = _reference(ids)
    for mode, (point, lo, hi, human) in reference.items():
        rec = rows[mode]
        assert (rec["n_audit"], rec["n_total"]) == (60, N)
        assert rec["judge"] == pytest.approx(sum(mode in _judge(i) for i in range(N)) / N, abs=1e-6)
        assert rec["human"] == pytest.approx(human, abs=1e-6)
        assert rec["ppi"] == pytest.approx(point, abs=1e-6)
        assert (rec["ppi_ci_low"], rec["ppi_ci_high"]) == pytest.approx((lo, hi), abs=1e-6)
        assert rec["ppi_ci_high"] - rec["ppi_ci_low"] < rec["human_ci_high"] - rec["human_ci_low"]
    assert rows["FM-1.1"]["judge"] > rows["FM-1.1"]["ppi"]  # the over-calling judge is corrected down
    # No positive seen in 60 of 120 is not certainty: the interval stays open above 0.
    assert rows["FM-3.3"]["ppi"] == 0 and rows["FM-3.3"]["ppi_ci_low"] == 0 < rows["FM-3.3"]["ppi_ci_high"]
    assert {"prevalence_ppi_by_system", "gap_ppi", "mean_modes_ppi"} <= tables.keys()
    assert data["header"]["audit"]["sample"]["tag"] == "audit-1" and data["header"]["audit"]["audited"] == 60
    corrected = {f["key"]: f for f in data["findings"]}
    assert corrected["judge_corrected"]["text"].startswith("judge corrected by alice's audit of 60 of 120")
    assert {r["mode"] for r in corrected["judge_corrected"]["data"]["outside"]} == {
        m for m, r in rows.items() if r["ppi_ci_low"] is not None and not r["ppi_ci_low"] <= r["judge"] <= r["ppi_ci_high"]}
    assert "mean_modes_failed_corrected" in corrected
    top = corrected["top_modes_corrected"]
    assert [m["mode"] for m in top["data"]["modes"]] == [
        r["mode"] for r in sorted(rows.values(), key=lambda r: -r["ppi"])[:3] if r["ppi"] > 0]
    assert top["text"].startswith("top modes, judge corrected: FM-1.1 ")
    gap = {r["mode"]: r for r in tables["gap_ppi"]["records"]}
    assert all(r["ppi_gap_p"] is None or 0 <= r["ppi_gap_p"] <= 1 for r in gap.values())
    predictor = corrected["strongest_predictor_corrected"]
    # The modes here do not depend on the outcome: nothing is named.
    assert predictor["data"]["mode"] is None and predictor["text"].startswith(
        "no mode separates failed from successful runs once the judge is corrected, at this audit size (")
    lines = [corrected[k]["text"] for k in ("judge_corrected", "top_modes_corrected", "strongest_predictor_corrected")]
    for fmt in ("md", "html", "csv", "terminal"):
        out = invoke(path, "report", "-s", "run:1", "--audit", "alice", "--format", fmt, "--bootstrap", "0")
        assert out.exit_code == 0, out.output
        assert "prevalence_ppi" in out.stdout or "Judge corrected" in out.stdout
        flat = " ".join(out.stdout.split())
        flat = html.unescape(flat) if fmt == "html" else re.sub(r"\\(.)", r"\1", flat) if fmt == "md" else flat
        assert all(" ".join(line.split()) in flat for line in lines), fmt
    rows_csv = list(csv.reader(io.StringIO(invoke(path, "report", "-s", "run:1", "--audit", "alice", "--format",
                                                  "csv", "--bootstrap", "0").stdout)))
    assert any(row[0] == "prevalence_ppi" for row in rows_csv)
    terminal = invoke(path, "report", "-s", "run:1", "--audit", "alice", "--bootstrap", "0")
    assert "Judge corrected by the audit" in terminal.stdout and "audit-1" in terminal.stdout
    assert max(len(line) for line in terminal.stdout.splitlines()) <= 100


def test_a_stratified_audit_is_estimated_stratum_by_stratum(judged):
    path, db = judged
    invoke(path, "sample", "-s", "run:1", "-n", "40", "--tag", "strat", "--stratify", "verdict", "--mode", "FM-2.3")
    ids = _audit(db, "strat")
    strata = {f"t{i:03d}": "FM-2.3 present" if "FM-2.3" in _judge(i) else "FM-2.3 absent" for i in range(N)}
    assert {i.trajectory_id: i.stratum for i in sample_items(db, "strat")} == {t: strata[t] for t in ids}
    reference = _reference(ids, strata)
    data = orjson.loads(invoke(path, "report", "-s", "run:1", "--audit", "alice", "--format", "json",
                               "--bootstrap", "0").stdout)
    rows = {r["mode"]: r for s in data["sections"] for t in s["tables"] if t["name"] == "prevalence_ppi"
            for r in t["records"]}
    for mode, (point, lo, hi, _) in reference.items():
        assert rows[mode]["ppi"] == pytest.approx(point, abs=1e-6)
        assert (rows[mode]["ppi_ci_low"], rows[mode]["ppi_ci_high"]) == pytest.approx((lo, hi), abs=1e-6)
    # The judge misses FM-2.3 on every 10th trajectory: the audit of its "absent" stratum raises it.
    assert rows["FM-2.3"]["ppi"] > rows["FM-2.3"]["judge"]


def test_an_audit_of_some_modes_pairs_each_mode_with_its_own_judge_column(judged):
    """People who audited only FM-2.3: PPI corrects FM-2.3 with the judge's FM-2.3 verdicts (not the
    judge's first column, FM-1.1), and the section covers FM-2.3 alone."""
    path, db = judged
    invoke(path, "sample", "-s", "run:1", "-n", "60", "--tag", "audit-1", "--seed", "3")
    ids = [i.trajectory_id for i in sample_items(db, "audit-1")]
    for tid in ids:
        verdict = "present" if "FM-2.3" in _truth(int(tid[1:])) else "absent"
        add_labels(db, [Label(trajectory_id=tid, mode_id="FM-2.3", annotator="alice", provenance="human",
                              verdict=verdict)])
    data = orjson.loads(invoke(path, "report", "-s", "run:1", "--audit", "alice", "--format", "json",
                               "--bootstrap", "0").stdout)
    rows = {r["mode"]: r for s in data["sections"] for t in s["tables"] if t["name"] == "prevalence_ppi"
            for r in t["records"]}
    point, lo, hi, human = _reference(ids)["FM-2.3"]
    assert set(rows) == {"FM-2.3"}
    assert rows["FM-2.3"]["ppi"] == pytest.approx(point, abs=1e-6)
    assert rows["FM-2.3"]["human"] == pytest.approx(human, abs=1e-6)
    assert (rows["FM-2.3"]["ppi_ci_low"], rows["FM-2.3"]["ppi_ci_high"]) == pytest.approx((lo, hi), abs=1e-6)


def test_audit_errors_are_one_line(judged):
    path, db = judged
    r = invoke(path, "report", "-s", "run:1", "--audit", "nobody", "--bootstrap", "0")
    assert r.exit_code == 1 and "no labels by 'nobody'" in r.output and "Traceback" not in r.output
    r = invoke(path, "report", "-s", "run:1", "--audit", "run:1", "--bootstrap", "0")
    assert r.exit_code == 1 and "not the source itself" in r.output
    r = invoke(path, "sample", "-s", "run:1", "-n", "10", "--tag", "x", "--stratify", "verdict", "--mode", "FM-9.9")
    assert r.exit_code == 1 and "--mode FM-9.9: no such mode" in r.output and isinstance(r.exception, SystemExit)
    r = invoke(path, "report", "-s", "run:1", "--audit-sample", "audit-1", "--bootstrap", "0")
    assert r.exit_code == 2 and "give --audit SOURCE with it" in r.output
    assert invoke(path, "sample", "-s", "run:1", "-n", "5", "--tag", "twice", "--outcome", "failure").exit_code == 0
    r = invoke(path, "sample", "-s", "run:1", "-n", "5", "--tag", "twice")
    assert r.exit_code == 1 and "exists already" in r.output
    assert {i.trajectory_id for i in sample_items(db, "twice")} <= {f"t{i:03d}" for i in range(N) if i % 3}


def test_reviews_record_whether_the_person_worked_blind(judged):
    _, db = judged
    AnnotationSession(db, "t001", "alice", TAX, blind=True).mark_done()
    sighted = AnnotationSession(db, "t002", "alice", TAX)
    sighted.mark_done()
    mixed = AnnotationSession(db, "t004", "alice", TAX, blind=True)
    mixed.toggle("FM-1.1", 0)
    AnnotationSession(db, "t004", "alice", TAX).mark_done()  # came back with the suggestions in view
    flags = dict(db.execute("SELECT trajectory_id, blind FROM review_state WHERE annotator = 'alice'").fetchall())
    assert flags == {"t001": 1, "t002": 0, "t004": 0}
    events = db.execute("SELECT blind FROM review_events WHERE trajectory_id = 't004' ORDER BY id").fetchall()
    assert [e[0] for e in events] == [1, 0]
    # A review from before blind was recorded (NULL): a sighted write makes it sighted, a blind one
    # leaves it unknown, since its earlier writes may have seen the suggestions.
    db.execute("INSERT INTO review_state (trajectory_id, annotator, status, seconds_spent, updated_at, blind)"
               " VALUES ('t005', 'alice', 'in_progress', 0, '2026-01-01T00:00:00', NULL),"
               " ('t007', 'alice', 'in_progress', 0, '2026-01-01T00:00:00', NULL)")
    db.conn.commit()
    AnnotationSession(db, "t005", "alice", TAX).mark_done()
    AnnotationSession(db, "t007", "alice", TAX, blind=True).mark_done()
    flags = dict(db.execute("SELECT trajectory_id, blind FROM review_state WHERE annotator = 'alice'").fetchall())
    assert flags["t005"] == 0 and flags["t007"] is None


def test_agreement_with_a_run_reports_automation_bias(judged):
    """bob works blind and labels the truth; carol sees the suggestions and accepts every one."""
    path, db = judged
    for i in range(0, 40):
        tid = f"t{i:03d}"
        if i % 2:
            blind = AnnotationSession(db, tid, "bob", TAX, blind=True)
            for mode in sorted(_truth(i)):
                blind.toggle(mode, 1)
            blind.mark_done()
        else:
            seen = AnnotationSession(db, tid, "bob", TAX)
            for mode, offered in seen.suggestions().items():
                seen.decide(offered[0], "accepted")
            seen.mark_done()
        carol = AnnotationSession(db, tid, "carol", TAX)
        for offered in carol.suggestions().values():
            carol.decide(offered[0], "accepted")
        carol.mark_done()
    alone = AnnotationSession(db, "t041", "carol", TAX, blind=True)  # carol's only blind review
    alone.mark_done()
    r = invoke(path, "agreement", "-s", "run:1,bob,carol", "--reference", "run:1", "--format", "json",
               "--bootstrap", "200", "--seed", "1")
    assert r.exit_code == 0, r.output
    tables = {t["name"]: t for s in orjson.loads(r.stdout)["sections"] for t in s["tables"]}
    bias = {row["person"]: row for row in tables["automation_bias"]["records"]}
    bob = bias["bob"]
    assert (bob["reviews_blind"], bob["reviews_sighted"]) == (20, 20)
    assert bob["agreement_sighted"] == 1.0
    wrong = sum(len(_truth(i) ^ _judge(i)) for i in range(1, 40, 2))
    assert bob["agreement_blind"] == pytest.approx(1 - wrong / (20 * len(MODES)), abs=1e-6)
    assert bob["diff_pp_sighted_minus_blind"] > 0 and bob["diff_ci_low_pp"] <= bob["diff_pp_sighted_minus_blind"]
    # One blind review: every replicate redraws it, so its interval is undefined, not a certainty.
    carol = bias["carol"]
    assert (carol["reviews_blind"], carol["reviews_sighted"]) == (1, 40)
    assert carol["diff_pp_sighted_minus_blind"] is not None
    assert carol["diff_ci_low_pp"] is None and carol["diff_ci_high_pp"] is None
    taken = {row["person"]: row for row in tables["suggestions_taken"]["records"]}
    offered = sum(len(_judge(i)) for i in range(0, 40))
    assert taken["carol"]["suggestions_seen"] == offered
    assert taken["carol"]["share_accepted_unchanged"] == 1.0
    assert taken["bob"]["suggestions_seen"] == sum(len(_judge(i)) for i in range(0, 40, 2))


def test_the_corrected_gap_is_named_only_when_supported():
    """The report's rule on the judge-corrected gap: BH q < 0.05 and 10 audited in each group."""
    from annotator.report.audit_findings import predictor
    from annotator.report.frame import Frame

    frame = Frame.__new__(Frame)
    frame.taxonomy = TAX

    def gaps(q: float, failed: int, succeeded: int) -> list[dict]:
        big = {"mode": "FM-3.2", "n_audit_failed": failed, "n_audit_succeeded": succeeded, "ppi_gap_pp": 21.0,
               "ppi_gap_ci_low_pp": 9.5, "ppi_gap_ci_high_pp": 31.0, "ppi_gap_bh_q": q}
        return [big, {**big, "mode": "FM-1.1", "ppi_gap_pp": 4.0, "ppi_gap_bh_q": 0.5}]

    named = predictor(frame, gaps(0.001, 40, 12))
    assert named.data["mode"] == "FM-3.2" and named.text.startswith(
        "strongest predictor of failure, judge corrected (audited): FM-3.2 ")
    assert "gap +21.0 pp (95% CI [+9.5, +31.0]), BH q = 0.001; 40 failed, 12 succeeded" in named.text
    for q, failed, succeeded in ((0.2, 40, 12), (0.001, 40, 9)):
        none = predictor(frame, gaps(q, failed, succeeded))
        assert none.data["mode"] is None and none.data["candidate"]["mode"] == "FM-3.2"
        assert none.text == ("no mode separates failed from successful runs once the judge is corrected, at this"
                             f" audit size ({failed} failed, {succeeded} succeeded audited)")
