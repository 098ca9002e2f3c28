"""``mast serve`` end to end: the real server, real headless Chromium driven by Playwright.

A browser opens the URL with the token and a name, reaches the queue, opens a trajectory,
tags a mode, and the tag is in the database (and still there after a reload, in a new app);
requests without the token are refused on every route, the websocket included; a non-local
address gets a generated token printed once in the URL. A local server answers only its own
names (no DNS rebinding), and what it pastes into its page or prints is escaped.
"""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from annotator.store import labels, open_db
from annotator.tui.serve import needs_token, serve
from tests.tui.conftest import build_db

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]
pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Chromium is not installed; .ci/run installs it")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(db: Path, *args: str) -> tuple[subprocess.Popen, int, str]:
    """``mast serve`` in a process of its own; returns it, its port and the URL it printed."""
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "annotator.cli", "--db", str(db), "serve", "--port", str(port), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    line = proc.stdout.readline()
    assert "mast serve: open http://" in line, line
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # it says so as it starts, before it listens
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.1)
    return proc, port, line.split("open ", 1)[1].strip()


def _status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


def _wait_drawn(page, timeout: float = 60.0) -> None:
    """Until the app has drawn its screen in the terminal (a canvas: the picture grows) and settled."""
    page.wait_for_selector("#terminal.-connected", timeout=timeout * 1000)
    blank = len(page.screenshot())
    deadline, last = time.monotonic() + timeout, 0
    while time.monotonic() < deadline:
        size = len(page.screenshot())
        if size > 1.5 * blank and abs(size - last) < 0.02 * size:
            return
        last = size
        time.sleep(0.5)
    raise AssertionError("the app never drew its screen")


def _wait_label(db_path: Path, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        db = open_db(db_path)
        try:
            found = labels.current_labels(db, "t1", "alice")
        finally:
            db.close()
        if found:
            return found
        time.sleep(0.3)
    return []


def test_a_browser_tags_a_mode_and_it_is_stored(tmp_path):
    from playwright.sync_api import sync_playwright

    db_path = tmp_path / "mast.db"
    build_db(db_path)
    proc, port, url = _start(db_path, "--token", "s3cret")
    try:
        assert url == f"http://127.0.0.1:{port}/?token=s3cret"
        base = f"http://127.0.0.1:{port}"
        for path in ("/", "/?annotator=alice", "/static/js/textual.js", "/ws", "/ws/anything", "/?token=wrong"):
            assert _status(base + path) == 403, path
        with sync_playwright() as p:
            # Playwright gives every launch a fresh profile of its own (it refuses --user-data-dir).
            # rebound.example resolves to 127.0.0.1, as a DNS-rebinding attacker's name would.
            rebinding = "--host-resolver-rules=MAP rebound.example 127.0.0.1"
            browser = p.chromium.launch(executable_path=CHROMIUM, args=[*FLAGS, rebinding])
            page = browser.new_page(viewport={"width": 1200, "height": 800})
            assert page.goto(f"http://rebound.example:{port}/?token=s3cret&annotator=alice").status == 403
            page.goto(url + "&annotator=alice")
            _wait_drawn(page)
            page.screenshot(path=str(tmp_path / "queue.png"))
            page.click("#terminal")
            page.keyboard.press("Enter")  # opens Task t1, at step 0
            time.sleep(2)
            page.keyboard.press("1")  # tags FM-1.1 there
            stored = _wait_label(db_path)
            assert [(lab.mode_id, lab.verdict, lab.onset_step) for lab in stored] == [("FM-1.1", "present", 0)]
            page.reload()
            _wait_drawn(page)
            assert [lab.mode_id for lab in _wait_label(db_path)] == ["FM-1.1"], "kept across a reload (a new app)"
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_a_page_without_a_name_asks_for_one_and_escapes_it(tmp_path):
    db_path = tmp_path / "mast.db"
    build_db(db_path)
    proc, port, url = _start(db_path)
    try:
        assert url == f"http://127.0.0.1:{port}/", "local: no token"
        with urllib.request.urlopen(url, timeout=10) as response:
            assert b"Your name on the labels" in response.read()
        with urllib.request.urlopen(url + "?annotator=%3Cb%3E%1b", timeout=10) as response:
            page = response.read()
        assert b"<b>" not in page and b"printable characters" in page
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_a_non_local_address_gets_a_token_printed_once(tmp_path):
    assert needs_token("0.0.0.0") and not needs_token("127.0.0.1")
    db_path = tmp_path / "mast.db"
    build_db(db_path)
    proc, port, url = _start(db_path, "--host", "0.0.0.0")
    try:
        token = url.split("?token=", 1)[1]
        assert len(token) >= 24
        assert _status(f"http://127.0.0.1:{port}/") == 403
        assert _status(f"http://127.0.0.1:{port}/?token={token}") == 200
    finally:
        proc.terminate()
        proc.wait(timeout=20)


async def test_a_local_server_answers_only_its_own_host_and_websockets_of_its_own_pages(tmp_path):
    """DNS rebinding: a page of another site whose name now resolves to 127.0.0.1 is refused,
    whether it loads the page (which holds a session key) or opens the websocket."""
    from aiohttp import WSServerHandshakeError
    from aiohttp.test_utils import TestClient, TestServer

    db_path = tmp_path / "mast.db"
    build_db(db_path)
    port = _free_port()
    server = serve(db_path, host="127.0.0.1", port=port, token=None)
    async with TestClient(TestServer(await server._make_app(), host="127.0.0.1", port=port)) as client:
        rebound = {"Host": f"rebound.example:{port}"}
        for path in ("/", "/?annotator=alice", "/static/js/textual.js", "/ws/anything"):
            assert (await client.get(path, headers=rebound)).status == 403, path
        assert (await client.get("/", headers={"Host": f"127.0.0.1:{port + 1}"})).status == 403, "another port"
        page = await client.get("/?annotator=alice", headers={"Host": f"localhost:{port}"})
        assert page.status == 200
        websocket = re.search(rf'"ws://localhost:{port}(/ws/[^"?]+)"', await page.text()).group(1)
        for origin in (f"http://rebound.example:{port}", "null", None):
            headers = {"Host": f"localhost:{port}"} | ({"Origin": origin} if origin else {})
            with pytest.raises(WSServerHandshakeError) as refused:
                await client.ws_connect(websocket, headers=headers)
            assert refused.value.status == 403, origin
    # A websocket of the server's own page is accepted: the browser test above opens one.


async def test_the_address_the_page_was_opened_by_is_escaped_in_it(tmp_path):
    from aiohttp.test_utils import TestClient, TestServer

    db_path = tmp_path / "mast.db"
    build_db(db_path)
    server = serve(db_path, host="0.0.0.0", port=_free_port(), token="s3cret")
    async with TestClient(TestServer(await server._make_app(), host="127.0.0.1")) as client:
        page = await client.get("/?token=s3cret&annotator=alice", headers={"Host": 'x"><script>alert(1)</script>'})
        body = await page.text()
    assert page.status == 200 and "<script>alert(1)" not in body
    shown = "x&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;"
    assert f'src="http://{shown}/static/js/textual.js"' in body
    assert f'data-session-websocket-url="ws://{shown}/ws/' in body, "the websocket too: 0.0.0.0 is no address"


async def test_what_the_server_prints_is_inert(tmp_path, capsys):
    server = serve(tmp_path / "mast.db", host="\x1b]0;owned\x07\x1b[2J", port=8000, token="s3cret")
    await server.on_startup(None)
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    assert "mast serve: open http://\\x1b]0;owned" in out and "\\x1b[2J:8000/?token=s3cret" in out


async def test_an_ipv6_address_is_printed_and_served_in_brackets(tmp_path):
    """``::1`` in a URL must stand in brackets: the printed address and the page's own links
    (scripts, the websocket) are ones a browser can open."""
    from aiohttp.test_utils import TestClient, TestServer

    db_path = tmp_path / "mast.db"
    build_db(db_path)
    port = _free_port()
    server = serve(db_path, host="::1", port=port, token=None)
    assert server.url() == f"http://[::1]:{port}/"
    async with TestClient(TestServer(await server._make_app(), host="127.0.0.1", port=port)) as client:
        page = await client.get("/?annotator=alice", headers={"Host": f"[::1]:{port}"})
        body = await page.text()
    assert page.status == 200
    assert f'src="http://[::1]:{port}/static/js/textual.js"' in body
    assert f'data-session-websocket-url="ws://[::1]:{port}/ws/' in body
