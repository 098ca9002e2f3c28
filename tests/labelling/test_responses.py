"""Paid responses arriving together are stored together, before any asker goes on, and none is lost."""

from __future__ import annotations

import asyncio

import pytest

from annotator.errors import StoreError
from annotator.labelling import responses
from annotator.labelling.responses import ResponseWriter
from annotator.store.requests import Response, cached_response, store_responses


def response(i: int) -> Response:
    return Response(f"key-{i}", f"answer {i}", "m", "127.0.0.1", f"t-{i}", None, 10, 0, 5, 0.001)


def spend_rows(db) -> int:
    return db.execute("SELECT count(*) FROM llm_spend").fetchone()[0]


def test_answers_of_one_turn_are_committed_in_one_write_before_their_askers_go_on(db, monkeypatch):
    writer, writes, seen = ResponseWriter(db), [], []

    def counted(d, rows):
        writes.append(len(rows))
        store_responses(d, rows)

    monkeypatch.setattr(responses, "store_responses", counted)

    async def ask(i: int) -> None:
        await writer.store(response(i))
        seen.append(cached_response(db, f"key-{i}"))  # stored by the time the asker goes on

    async def main() -> None:
        await asyncio.gather(*(ask(i) for i in range(5)))
        await ask(5)

    asyncio.run(main())
    assert writes == [5, 1]
    assert seen == [f"answer {i}" for i in range(6)]
    assert spend_rows(db) == 6


def test_a_failed_write_reaches_every_asker_of_the_turn(db, monkeypatch):
    writer = ResponseWriter(db)

    def refuse(d, rows):
        raise StoreError("disk full")

    monkeypatch.setattr(responses, "store_responses", refuse)

    async def main() -> list:
        return await asyncio.gather(*(writer.store(response(i)) for i in range(3)), return_exceptions=True)

    assert [type(r) for r in asyncio.run(main())] == [StoreError] * 3


def test_an_asker_cancelled_before_the_write_loses_no_answer(db):
    writer = ResponseWriter(db)

    async def main() -> None:
        tasks = [asyncio.create_task(writer.store(response(i))) for i in range(3)]
        await asyncio.sleep(0)  # the askers wait for the write scheduled for the next turn
        assert spend_rows(db) == 0
        tasks[0].cancel()
        with pytest.raises(asyncio.CancelledError):
            await tasks[0]
        await asyncio.gather(*tasks[1:])

    asyncio.run(main())
    assert spend_rows(db) == 3
