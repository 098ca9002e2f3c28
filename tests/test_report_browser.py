"""The HTML report opens in headless Chromium without console errors and shows its tables."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
from tests.report_data import add_trajectory, known_prevalence_db, label_all

from annotator.report import render_html
from annotator.report.document import build_report
from annotator.taxonomy import load_taxonomy

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run",
         "--disable-component-update", "--disable-sync", "--enable-logging=stderr", "--v=0"]


@pytest.mark.skipif(CHROMIUM is None,
                    reason="Chromium is not installed (apt-get install chromium); .ci/run installs it")
def test_html_report_renders_in_chromium(db, tmp_path):
    known_prevalence_db(db)
    add_trajectory(db, "evil", title='<script>console.error("injected")</script>', outcome="failure")
    label_all(db, "evil", "alice", {"FM-1.1"})
    page = tmp_path / "report.html"
    page.write_text(render_html.render(build_report(db, "alice", load_taxonomy(), replicates=100)), encoding="utf-8")
    proc = subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", page.as_uri()],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    dom = proc.stdout
    assert "<h1>MAST failure report</h1>" in dom
    assert dom.count("<svg") == 3 and dom.count("<table>") > 10
    assert "&lt;script&gt;console.error" in dom
    assert not re.search(r"<script", dom, re.I)
    console = [ln for ln in proc.stderr.splitlines() if "CONSOLE" in ln]
    assert console == []
