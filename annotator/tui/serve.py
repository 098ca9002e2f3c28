"""``mast serve``: the annotation app in a browser, through textual-serve, behind a token.

textual-serve runs one app process per browser connection (its websocket); each gets the
annotator name the page was opened with (``?annotator=alice``, or asked for by a small form),
passed to the process in its environment, never through a shell. Bound to 127.0.0.1 by
default; any other address needs a token, given or generated, and a check in front of every
route (the page, its static files, downloads and the websocket) refuses a request that does not
carry it (403). The token travels once in the URL; the page sets it as an HTTP-only,
same-site cookie, which the websocket and the static files then present.

Served on a local address, a page of any web site could still reach the server through DNS
rebinding (its name made to resolve to 127.0.0.1): every request must then name the server
itself as its Host (the bound address or another loopback form of it, with the port). On any
address a websocket must come from a page of its own origin. Anything else is refused (403).
"""

from __future__ import annotations

import hmac
import html
import secrets
import shlex
import sys
from pathlib import Path
from urllib.parse import quote, urlsplit

import jinja2
from aiohttp import web
from textual_serve.app_service import AppService
from textual_serve.server import Server

from annotator.text import inert_console

#: Addresses that reach only this machine: served without a token unless one is given.
LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
COOKIE = "mast_token"

_ASK_NAME = jinja2.Environment(autoescape=True).from_string(
    """<!doctype html><html><head><meta charset="utf-8"><title>mast annotate</title></head>
<body style="font-family: sans-serif; background: #1e1e1e; color: #eee; padding: 3em">
<form method="get" action="/"><label>Your name on the labels: <input name="annotator" autofocus required></label>
{% if token %}<input type="hidden" name="token" value="{{ token }}">{% endif %}
<button type="submit">Start annotating</button></form>
{% if error %}<p style="color: #ff8787">{{ error }}</p>{% endif %}</body></html>"""
)


def needs_token(host: str) -> bool:
    return host not in LOCAL_HOSTS


def local_names(host: str, port: int) -> frozenset[str] | None:
    """The Host headers a server bound to ``host``:``port`` answers (lower case), or None when
    ``host`` is not local: then the token guards it, whatever name it is reached by."""
    if needs_token(host):
        return None
    names = {"127.0.0.1", "localhost", "[::1]", f"[{host}]" if ":" in host else host}
    # A browser leaves out the port it would assume (80 for http).
    return frozenset({f"{name}:{port}" for name in names} | (names if port == 80 else set()))


class _PersonService(AppService):
    """The app process of one connection, with that person's name in its environment."""

    def __init__(self, *args, annotator: str, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._annotator = annotator

    def _build_environment(self, width: int = 80, height: int = 24) -> dict[str, str]:
        environment = super()._build_environment(width=width, height=height)
        environment["MAST_ANNOTATOR"] = self._annotator
        return environment


class AnnotationServer(Server):
    """textual-serve's server with a token check on every route and one annotator per page."""

    def __init__(self, db: Path, *, host: str, port: int, token: str | None, blind: bool = False) -> None:
        command = [sys.executable, "-m", "annotator.cli", "--db", str(db), "annotate"] + (["--blind"] if blind else [])
        # An IPv6 literal in a URL stands in brackets (RFC 3986 §3.2.2); textual-serve writes the
        # host as given, so "::1" would print as http://::1:8000, an address no browser opens.
        authority = f"[{host}]" if ":" in host else host
        super().__init__(shlex.join(command), host=host, port=port, title="mast annotate",
                         public_url=f"http://{authority}:{port}")
        # What the server prints and logs names addresses and paths: through the inert console.
        self.console = inert_console()
        self.token = token
        self.hosts = local_names(host, port)
        """The Host headers accepted (None: any, the token guards)."""
        self._names: dict[str, str] = {}
        """Session key (in the websocket's path) -> the annotator the page was opened for."""

    def url(self) -> str:
        """The address to open (with the token, when there is one)."""
        return self.public_url + "/" + (f"?token={quote(self.token)}" if self.token else "")

    async def on_startup(self, app: web.Application) -> None:
        self.console.print(f"mast serve: open {self.url()}")
        self.console.print("every annotator opens it with their own name · Ctrl+C stops", style="dim")

    def _authorised(self, request: web.Request) -> bool:
        if self.token is None:
            return True
        given = request.query.get("token") or request.cookies.get(COOKIE) or ""
        return hmac.compare_digest(given.encode(), self.token.encode())

    def _same_origin(self, request: web.Request) -> bool:
        """A request from a page of this server: a Host it answers to and, for a websocket
        (which a page of any origin may open), an Origin of that same host."""
        host = request.host.lower()
        if self.hosts is not None and host not in self.hosts:
            return False
        if request.headers.get("Upgrade", "").lower() != "websocket":
            return True
        origin = urlsplit(request.headers.get("Origin", ""))
        return origin.scheme in ("http", "https") and origin.netloc.lower() == host

    @web.middleware
    async def _guard(self, request: web.Request, handler):
        if not self._same_origin(request):
            raise web.HTTPForbidden(text="forbidden: not a page of this server (Host or Origin)")
        if not self._authorised(request):
            raise web.HTTPForbidden(text="forbidden: this server needs its token (?token=...)")
        response = await handler(request)
        if self.token is not None and request.query.get("token"):
            response.set_cookie(COOKIE, self.token, httponly=True, samesite="Strict", path="/")
        return response

    async def _make_app(self) -> web.Application:
        app = await super()._make_app()
        app.middlewares.append(self._guard)
        app.router.add_get("/ws/{session}", self.handle_websocket, name="person_websocket")
        return app

    async def handle_index(self, request: web.Request) -> web.StreamResponse:
        name = request.query.get("annotator", "").strip()
        if not name or len(name) > 100 or not name.isprintable():
            error = "a name of at most 100 printable characters, please" if name else None
            form = _ASK_NAME.render(token=request.query.get("token"), error=error)
            return web.Response(text=form, content_type="text/html")
        session = secrets.token_urlsafe(16)
        self._names[session] = name
        response = await super().handle_index(request)
        # The page's addresses, its websocket's included, are the ones the browser used (0.0.0.0
        # is no address to connect to, and the websocket's Origin must be of its own host), and
        # its websocket names the session, so that the app started for it knows who.
        where = request.host
        bound = self.public_url.split("://", 1)[1]
        websocket = "wss" if request.scheme == "https" else "ws"
        body = response.text.replace(f"ws://{bound}/ws", html.escape(f"{websocket}://{where}") + "/ws", 1)
        body = body.replace(self.public_url, html.escape(f"{request.scheme}://{where}"))
        body = body.replace('/ws"', f'/ws/{session}"', 1)
        return web.Response(text=body, content_type="text/html")

    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        """One app process for this connection, as the person the page was opened for."""
        name = self._names.get(request.match_info.get("session", ""))
        if name is None:
            raise web.HTTPForbidden(text="forbidden: open the page first, it names the annotator")
        websocket = web.WebSocketResponse(heartbeat=15)
        await websocket.prepare(request)
        service = _PersonService(
            self.command,
            annotator=name,
            write_bytes=websocket.send_bytes,
            write_str=websocket.send_str,
            close=websocket.close,
            download_manager=self.download_manager,
            debug=self.debug,
        )
        try:
            await service.start(_size(request, "width", 80), _size(request, "height", 24))
            await self._process_messages(websocket, service)
        finally:
            await service.stop()
        return websocket


def _size(request: web.Request, key: str, default: int) -> int:
    value = request.query.get(key, "")
    return int(value) if value.isdigit() else default


def serve(db: Path, *, host: str, port: int, token: str | None, blind: bool = False) -> AnnotationServer:
    """The server, ready to ``serve()``; a non-local host without a token gets a fresh one."""
    if token is None and needs_token(host):
        token = secrets.token_urlsafe(24)
    return AnnotationServer(db, host=host, port=port, token=token, blind=blind)
