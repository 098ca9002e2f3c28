"""The judge's connection: any OpenAI-compatible endpoint through the official openai client.

This is the only module that imports ``openai`` (lazily, so ``mast --help`` stays fast). It
sends one chat request with a bounded number of attempts, retrying with exponential backoff
and jitter (tenacity) on 429, 5xx, timeouts, dropped connections and unreadable responses, and
honouring ``Retry-After``; every attempt waits for its turn at the :class:`~annotator.labelling.
pacing.Pacer`, which paces the run to the rate limits the server reports. A refused connection
or a malformed URL is not retried: it will not get better. Structured output degrades by capability: ``response_format`` of type
``json_schema`` first; if the server rejects it (llama.cpp answers it with HTTP 500), ``json_object``
with the schema; then plain text, the JSON then being extracted from the reply. The mode that
worked is kept for the rest of the run. The API key lives only inside the client object, and is cut out of every
error message before anyone sees it (a server may echo it back).

The client runs on openai's aiohttp transport (``DefaultAioHttpClient``, the ``aiohttp`` extra):
at 64 requests in flight it costs about a third less CPU per request than the default httpx
pool, which is what bounds a bulk run's throughput on a small machine.
"""

from __future__ import annotations

import json
from typing import Any, Literal

import orjson
from pydantic import BaseModel
from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

from annotator.errors import LabellingError
from annotator.labelling.pacing import Pacer
from annotator.labelling.redaction import Redactor

FormatMode = Literal["json_schema", "json_object", "text"]
_NEXT_MODE: dict[str, FormatMode] = {"json_schema": "json_object", "json_object": "text"}
#: Statuses with which servers turn down a response_format they do not support.
_CAPABILITY_STATUSES = {400, 404, 422, 500, 501}
#: Longest wait a Retry-After header may impose on one retry.
MAX_RETRY_AFTER_S = 60.0


class Completion(BaseModel):
    """A judge's reply and what it cost."""

    content: str
    tokens_in: int = 0
    #: Input tokens the provider served from its prompt cache (billed at the cached rate).
    tokens_cached: int = 0
    tokens_out: int = 0


class EndpointError(LabellingError):
    """The endpoint kept failing until the attempts ran out, or refused the request outright."""


def _openai():
    import openai

    return openai


def refused(exc: BaseException) -> bool:
    """Whether a connection error is the server refusing the connection (nothing listens there)."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, ConnectionRefusedError) or getattr(cur, "errno", None) == 111:
            return True
        os_error = getattr(cur, "os_error", None)  # aiohttp's ClientConnectorError
        if isinstance(os_error, ConnectionRefusedError):
            return True
        cur = cur.__cause__ or cur.__context__
    return False


def _transient(exc: BaseException) -> bool:
    openai = _openai()
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code == 429 or exc.status_code >= 500
    if isinstance(exc, openai.APIConnectionError) and refused(exc):  # aiohttp reports it as a connect timeout
        return False
    return isinstance(
        exc, (openai.APITimeoutError, openai.APIConnectionError, openai.APIResponseValidationError, json.JSONDecodeError)
    )


def _retry_after(exc: BaseException | None) -> float | None:
    response = getattr(exc, "response", None)
    value = response.headers.get("retry-after") if response is not None else None
    try:
        return min(max(float(value), 0.0), MAX_RETRY_AFTER_S) if value is not None else None
    except ValueError:
        return None


class _Wait:
    """Exponential backoff with jitter, unless the server said how long to wait."""

    def __init__(self, initial: float, maximum: float):
        self._backoff = wait_exponential_jitter(multiplier=initial, max=maximum)

    def __call__(self, state) -> float:
        told = _retry_after(state.outcome.exception() if state.outcome else None)
        return told if told is not None else self._backoff(state)


class JudgeClient:
    """One endpoint: an AsyncOpenAI client, its pacer, retries and the format fallback."""

    def __init__(
        self,
        *,
        base_url: str | None,
        api_key: str,
        timeout: float = 120.0,
        max_attempts: int = 5,
        concurrency: int = 16,
        rpm: float | None = None,
        tpm: float | None = None,
        adaptive: bool = True,
        backoff_initial: float = 0.5,
        backoff_max: float = 30.0,
    ):
        openai = _openai()
        self.redact = Redactor(api_key, base_url)
        try:
            self._client = openai.AsyncOpenAI(base_url=base_url, api_key=api_key, timeout=timeout, max_retries=0,
                                              http_client=openai.DefaultAioHttpClient(timeout=timeout))
        except Exception as exc:  # the client validates the URL
            raise EndpointError(f"the endpoint URL {self.redact.url(base_url or '')!r} is not usable: "
                                f"{self.redact(str(exc))}") from None
        self.base_url = self.redact.url(str(self._client.base_url))
        #: The chat endpoint's absolute URL, joined once: given a path, the client parses it and
        #: joins it to its base URL again for every request.
        self._chat_url = str(self._client.base_url.copy_with(raw_path=self._client.base_url.raw_path
                                                             + b"chat/completions"))
        self.max_attempts = max(1, max_attempts)
        self.pacer = Pacer(concurrency, rpm=rpm, tpm=tpm, adaptive=adaptive)
        self._wait = _Wait(backoff_initial, backoff_max)
        import httpx2  # the client's own HTTP library (loaded with openai): its response class

        self._response_type = httpx2.Response
        self.modes: dict[str, FormatMode] = {}

    def __repr__(self) -> str:  # never show the key
        return f"JudgeClient(base_url={self.base_url!r})"

    async def close(self) -> None:
        await self._client.close()

    async def complete(
        self, model: str, messages: list[dict[str, str]], *, temperature: float, schema: dict[str, Any] | None,
        max_tokens: int | None = None, tokens: int = 0,
    ) -> Completion:
        """One reply, trying weaker structured-output modes if the server rejects a stronger one.

        ``tokens``: what the request is expected to count against a tokens-per-minute limit.
        """
        mode: FormatMode = self.modes.get(model, "json_schema" if schema is not None else "text")
        openai = _openai()
        while True:
            probe = schema is not None and mode != "text" and self.modes.get(model) != mode
            try:
                result = await self._send(model, messages, temperature, schema, mode, max_tokens, probe, tokens)
            except openai.APIStatusError as exc:
                if not probe or exc.status_code not in _CAPABILITY_STATUSES:
                    raise EndpointError(self.redact(f"{model}: HTTP {exc.status_code}: {_message(exc)}")) from None
                if self.modes.get(model) != mode:  # not confirmed meanwhile by another request
                    mode = _NEXT_MODE[mode]
                continue
            except openai.APIConnectionError as exc:
                raise EndpointError(self.redact(f"{model}: {self._connection_problem(exc)}")) from None
            except (openai.APIError, json.JSONDecodeError) as exc:
                raise EndpointError(self.redact(f"{model}: {type(exc).__name__}: {_message(exc)}")) from None
            self.modes[model] = mode
            return result

    def _connection_problem(self, exc: BaseException) -> str:
        """What went wrong with the connection, in words that say what to check."""
        openai = _openai()
        where = self.base_url
        if refused(exc):
            return f"connection refused by {where}: nothing is listening there (check --base-url)"
        if isinstance(exc, openai.APITimeoutError):
            return f"no answer from {where} within the timeout (--timeout)"
        return f"cannot reach {where}: {_message(exc)}"

    def request_body(
        self, model: str, messages: list[dict[str, str]], temperature: float, schema: dict[str, Any] | None,
        mode: FormatMode = "json_schema", max_tokens: int | None = None,
    ) -> dict[str, Any]:
        """The request body for a mode (also what a Batch API input line carries)."""
        body: dict[str, Any] = {"model": model, "messages": messages, "temperature": temperature}
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        if schema is not None and mode == "json_schema":
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "judge_answer", "schema": schema, "strict": False},
            }
        elif schema is not None and mode == "json_object":
            body["response_format"] = {"type": "json_object", "schema": schema}
        return body

    async def _send(
        self, model, messages, temperature, schema, mode: FormatMode, max_tokens, probe: bool, tokens: int
    ) -> Completion:
        content = orjson.dumps(self.request_body(model, messages, temperature, schema, mode, max_tokens))
        openai = _openai()

        def retryable(exc: BaseException) -> bool:
            # A capability probe (mode not yet confirmed) is not retried: its failure means fallback.
            openai = _openai()
            if probe and isinstance(exc, openai.APIStatusError) and exc.status_code in _CAPABILITY_STATUSES:
                return False
            return _transient(exc)

        async for attempt in AsyncRetrying(
            stop=stop_after_attempt(self.max_attempts),
            wait=self._wait,
            retry=retry_if_exception(retryable),
            reraise=True,
        ):
            with attempt:
                async with self.pacer.slot(tokens) as sent_at:
                    try:
                        # ``post`` with the finished body: ``chat.completions.create`` would walk the
                        # messages and the schema through its TypedDict transform first, which is most
                        # of the client's CPU per request and changes nothing in a plain-JSON body. The
                        # body goes as bytes serialised by orjson (``content``): the client's own
                        # ``json.dumps`` took a thirtieth of the runner's CPU at 64 in flight. The
                        # answer comes back as the HTTP response itself (``cast_to`` the client's
                        # response class), its body parsed by orjson: building openai's typed
                        # ChatCompletion from it cost a sixth of the client's CPU, and its raw-response
                        # wrapper and ``json.loads`` a further tenth.
                        response = await self._client.post(self._chat_url, content=content,
                                                           cast_to=self._response_type)
                    except openai.APIStatusError as exc:
                        if exc.status_code == 429:
                            await self.pacer.rate_limited(exc.response.headers, _retry_after(exc), sent_at)
                        raise
                    data = orjson.loads(response.content)
                    usage = _field(data, "usage")
                    await self.pacer.succeeded(response.headers, tokens, _count(usage, "total_tokens"))
                return _completion(data, usage)
        raise AssertionError("unreachable")  # pragma: no cover - reraise=True always raises

    # -- Batch API ---------------------------------------------------------------------------

    async def submit_batch(self, jsonl: bytes) -> str:
        """Upload a JSONL of chat requests and start a batch over it; returns the batch id."""
        f = await self._client.files.create(file=("requests.jsonl", jsonl, "application/jsonl"), purpose="batch")
        batch = await self._client.batches.create(
            input_file_id=f.id, endpoint="/v1/chat/completions", completion_window="24h"
        )
        return batch.id

    async def batch_status(self, batch_id: str) -> tuple[str, str | None]:
        """(status, output file id) of a batch."""
        b = await self._client.batches.retrieve(batch_id)
        return b.status, b.output_file_id

    async def download(self, file_id: str) -> bytes:
        content = await self._client.files.content(file_id)
        return content.read() if hasattr(content, "read") else bytes(content.content)


def _field(data: object, name: str) -> dict[str, Any]:
    """``data[name]`` if both are JSON objects, else an empty one."""
    value = data.get(name) if isinstance(data, dict) else None
    return value if isinstance(value, dict) else {}


def _count(data: dict[str, Any], name: str) -> int:
    """A token count of ``usage``: 0 when absent or not a count."""
    value = data.get(name)
    return value if isinstance(value, int) and value > 0 else 0


def _completion(data: object, usage: dict[str, Any]) -> Completion:
    """The reply and its token counts from a chat completion's JSON. One without a message is
    unreadable, and retried like a body that is not JSON."""
    choices = data.get("choices") if isinstance(data, dict) else None
    message = _field(choices[0], "message") if isinstance(choices, list) and choices else None
    if not message:
        raise json.JSONDecodeError("response without choices", "", 0)
    content = message.get("content")
    return Completion(
        content=content if isinstance(content, str) else "",
        tokens_in=_count(usage, "prompt_tokens"),
        tokens_cached=_count(_field(usage, "prompt_tokens_details"), "cached_tokens"),
        tokens_out=_count(usage, "completion_tokens"),
    )


def _message(exc: BaseException) -> str:
    body = getattr(exc, "body", None)  # an HTTP error's own message, without the client's prefix
    text = body.get("message") if isinstance(body, dict) and isinstance(body.get("message"), str) else None
    text = text or getattr(exc, "message", None) or str(exc)
    return " ".join(str(text).split())[:300]


def extract_json(text: str) -> Any:
    """The JSON object in a reply: the whole text, a fenced block, or the outermost braces."""
    text = text.strip()
    candidates = [text]
    if "```" in text:
        for chunk in text.split("```")[1::2]:
            candidates.append(chunk.removeprefix("json").strip())
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start : end + 1])
    for c in candidates:
        try:
            return orjson.loads(c)
        except orjson.JSONDecodeError:
            continue
    raise ValueError("no JSON object found in the reply")
