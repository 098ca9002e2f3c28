"""Hostile text reaches every command's output inert: no escape byte, no markup interpreted.

Titles, systems, models, benchmarks, tasks, step text, annotator names, file names and the
error messages that quote them all carry a terminal-title escape, a screen clear, a C1 CSI and
Rich markup (including a Textual action). The table below is driven by the CLI's own list of
commands, so a command added later fails here until it has a row.
"""

from __future__ import annotations

import re
import orjson
import pytest
from click.testing import CliRunner

from annotator.cli import main

HOSTILE = "\x1b]0;PWNTITLE\x07\x1b[2J\x9b31m[bold red]BOLD[/] [@click=app.quit]clickme[/]"
#: How the hostile text reads once made inert (what a user should see).
SHOWN = "\\x1b]0;PWNTITLE\\x07"
ANNOTATOR = "eve" + HOSTILE
FILE_NAME = "runs\x1b[2J\x1b]0;PWNTITLE\x07[bold red]BOLD.jsonl"


def assert_inert(text: str) -> None:
    """No escape byte (7-bit or C1), no bell, and every markup tag still printed as written."""
    assert "\x1b" not in text and "\x9b" not in text and "\x07" not in text, repr(text[:400])
    text = re.sub(r"\\([\[\]])", r"\1", text)  # Markdown's escaped brackets are brackets shown
    for word, tag in (("BOLD", "[bold red]"), ("clickme", "[@click=app.quit]")):
        # A table cell wraps free text, between words or inside one, so the start of the tag may
        # end the line above: what is left of it on the word's line ("red]", "it]"), which
        # interpreted markup would have eaten, must be there.
        for m in re.finditer(word, text):
            piece = text[text.rfind("\n", 0, m.start()) + 1:m.start()].split(" ")[-1]
            assert piece and tag.endswith(piece), repr(text[max(0, m.start() - 60):m.end()])


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """A database whose every text field is hostile, with two hostile-named people's finished reviews."""
    from annotator.models import Label
    from annotator.store import open_db
    from annotator.store.labels import add_labels
    from annotator.store.review import set_review
    from annotator.store.trajectories import list_trajectories
    from annotator.taxonomy import load_taxonomy

    root = tmp_path_factory.mktemp("hostile")
    runs = root / FILE_NAME
    records = [
        {"id": f"hostile-{i}", "system": "sys" + HOSTILE, "model": "m" + HOSTILE, "benchmark": "b" + HOSTILE,
         "task": "task " + HOSTILE, "outcome": "failure" if i % 2 else "success",
         "messages": [{"role": "user", "content": "please " + HOSTILE},
                      {"role": "assistant", "content": "I cannot verify " + HOSTILE}]}
        for i in range(4)
    ]
    runs.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    bad = root / ("bad" + HOSTILE.replace("/", "|") + ".jsonl")
    bad.write_bytes(b'{"messages": [{"role": "user", "content": "x"}]}\n{oops ' + HOSTILE.encode() + b"\n")
    db_path = root / "hostile.db"
    tax = load_taxonomy()
    first = CliRunner().invoke(main, ["--db", str(db_path), "import", "-q", str(runs)])
    assert first.exit_code == 0, first.output
    db = open_db(db_path)
    ids = [t.id for t in list_trajectories(db)]
    assert len(ids) == 4
    for who in (ANNOTATOR, "alice" + HOSTILE):
        for i, tid in enumerate(ids):
            add_labels(db, [Label(trajectory_id=tid, mode_id=m, annotator=who, provenance="human",
                                  verdict="present" if (i + n) % 3 == 0 else "absent",
                                  onset_step=0 if (i + n) % 3 == 0 else None, note=HOSTILE, quote=HOSTILE)
                            for n, m in enumerate(tax.mode_ids)])
            set_review(db, tid, who, "done")
    db.close()
    return {"db": db_path, "runs": runs, "bad": bad, "root": root, "id": ids[1]}


#: The arguments each command is run with; ``{runs}``, ``{bad}``, ``{out}`` are filled in.
#: Every command of the CLI must be here: ``annotate`` opens the app, whose inert text has
#: its own tests (tests/tui), so its row only prints the help.
COMMANDS: dict[str, list[list[str]]] = {
    "import": [["{runs}"], ["{bad}"], ["{root}"]],
    "list": [[], ["--system", "sys" + HOSTILE], ["--json"]],
    "show": [["{id}"], ["{id}", "--step", "0"], ["{id}", "--raw"], [HOSTILE]],
    "report": [["-s", ANNOTATOR, "--bootstrap", "0", "--format", f] for f in ("terminal", "md", "json", "csv", "html")]
    + [["-s", "nobody" + HOSTILE, "--bootstrap", "0"]]
    + [["-s", ANNOTATOR, "--audit", "alice" + HOSTILE, "--bootstrap", "0", "--format", f]
       for f in ("terminal", "md", "csv", "html")] + [["-s", ANNOTATOR, "--audit", "alice" + HOSTILE, "--bootstrap", "0"]],
    "agreement": [["-s", ANNOTATOR, "-s", "alice" + HOSTILE, "--bootstrap", "0", "--format", f]
                  for f in ("terminal", "md", "json", "csv", "html")]
    + [["-s", ANNOTATOR, "-s", "alice" + HOSTILE, "--reference", "alice" + HOSTILE, "--bootstrap", "0"]],
    "sample": [["-s", ANNOTATOR, "-n", "2", "--tag", "audit" + HOSTILE, "--seed", "1"],
               ["-s", ANNOTATOR, "-n", "4", "--tag", "by-system" + HOSTILE, "--stratify", "system"]],
    "export": [["-s", ANNOTATOR, "--format", f] for f in ("jsonl", "csv", "wide-csv", "mad-json")],
    "prelabel": [["--labeller", "rules", "-q"], ["--model", "m", "--dry-run", "--system", "sys" + HOSTILE]],
    "taxonomy": [[], ["--json"]],
    "sources": [[], ["--json"]],
    "formats": [[]],
    "annotate": [["--help"]],
    "assign": [["--annotators", ANNOTATOR + ",bob", "--overlap", "0.5"]],
    "progress": [[], ["--json"]],
    "serve": [["--help"]],
}

#: Commands whose output carries no data from the database or the files.
NO_DATA = {"taxonomy", "formats", "annotate", "prelabel", "serve"}


def test_every_command_has_a_row():
    assert set(main.commands) == set(COMMANDS), "add the new command's runs to COMMANDS"


@pytest.mark.parametrize(
    "command,args", [(c, a) for c, runs in COMMANDS.items() for a in runs], ids=lambda v: repr(v)[:40]
)
def test_output_is_inert(hostile, command, args):
    filled = [a.format(**{k: str(v) for k, v in hostile.items()}) if a.startswith("{") else a for a in args]
    result = CliRunner().invoke(main, ["--db", str(hostile["db"]), command, *filled], env={"COLUMNS": "400"})
    assert not isinstance(result.exception, Exception) or isinstance(result.exception, SystemExit), result.exception
    assert_inert(result.output)
    if command not in NO_DATA and "--format" not in args:
        assert SHOWN in result.output or "PWNTITLE" in result.output, result.output[:400]


def test_html_report_carries_no_control_characters(hostile, tmp_path):
    out = tmp_path / "r.html"
    result = CliRunner().invoke(main, ["--db", str(hostile["db"]), "report", "-s", ANNOTATOR, "--bootstrap", "0",
                                       "--format", "html", "-o", str(out)])
    assert result.exit_code == 0, result.output
    html = out.read_text(encoding="utf-8")
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", html)
    assert SHOWN in html and "[bold red]BOLD[/]" in html


def test_error_line_names_hostile_file_inertly(hostile):
    result = CliRunner().invoke(main, ["--db", str(hostile["db"]), "import", str(hostile["bad"])])
    assert result.exit_code == 1
    assert_inert(result.output)
    assert "failed: " in result.stderr and "\\x1b]0;PWNTITLE" in result.stderr


def test_inert_console_keeps_its_own_styles():
    """Only the data is made inert: the console's own colours still reach a real terminal."""
    from rich.table import Table
    from rich.text import Text

    from annotator.text import inert_console

    console = inert_console(force_terminal=True, color_system="standard", width=200)
    table = Table()
    table.add_column("title")
    table.add_row(HOSTILE)
    with console.capture() as capture:
        console.print(Text("styled", style="bold red"))
        console.print(table)
    printed = capture.get()
    assert "\x1b[1;31mstyled" in printed  # Rich's own escape sequence
    data = printed.split("styled", 1)[1]
    assert "PWNTITLE" in data and "\x1b]0" not in data and "\x1b[2J" not in data
    assert "[bold red]BOLD[/]" in data


def test_the_import_progress_bar_shows_a_hostile_file_name_inert(tmp_path):
    """The progress bar is drawn only on a terminal, after the console's own hooks: run `mast import`
    on a pseudo-terminal and read what reaches it."""
    import os
    import pty
    import subprocess
    import sys

    folder = tmp_path / "in"
    folder.mkdir()
    for i in range(3):
        name = f"{i}\x1b]0;PWNTITLE\x07.jsonl"
        (folder / name).write_bytes(orjson.dumps({"id": f"t{i}", "messages": [
            {"role": "user", "content": "hi"}, {"role": "assistant", "content": "done"}]}) + b"\n")
    leader, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "annotator.cli", "--db", str(tmp_path / "p.db"), "import",
                             str(folder)], stdin=follower, stdout=follower, stderr=follower, close_fds=True)
    os.close(follower)
    seen = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        seen += chunk
    os.close(leader)
    assert proc.wait(timeout=60) == 0, seen[-2000:]
    assert b"\x1b]0;PWNTITLE" not in seen and b"\x07" not in seen, seen[-2000:]
    assert b"\\x1b]0;PWNTITLE\\x07" in seen
