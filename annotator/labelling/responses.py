"""Paid responses written as they arrive, those of one turn of the event loop in one transaction.

Every response is stored before anything is made of it (a ``kill -9`` must lose neither the
answer, which would be paid for again on resume, nor what it cost). At 64 requests in flight
several answers arrive in the same turn of the loop, and a transaction for each of them was a
twentieth of the runner's CPU: the first answer of a turn schedules one write for the next
turn, the others join it, and every asker waits until that write is committed. Nothing waits
on the network in between, and the write is ahead of anything a cancellation schedules.
"""

from __future__ import annotations

import asyncio

from sqlite_utils import Database

from annotator.store.requests import Response, store_responses


class ResponseWriter:
    """The pending responses of the current turn and the write that will store them."""

    def __init__(self, db: Database):
        self.db = db
        self._pending: list[Response] = []
        self._written: asyncio.Future[None] | None = None  # set while a write is scheduled

    async def store(self, response: Response) -> None:
        """Return once ``response`` is committed (raising what the write raised, if it failed)."""
        self._pending.append(response)
        written = self._written
        if written is None:
            loop = asyncio.get_running_loop()
            written = self._written = loop.create_future()
            loop.call_soon(self._write)
        await asyncio.shield(written)  # an asker cancelled meanwhile does not cancel the write

    def _write(self) -> None:
        pending, written = self._pending, self._written
        self._pending, self._written = [], None
        try:
            store_responses(self.db, pending)
        except Exception as exc:  # every asker of the turn sees the failure
            written.set_exception(exc)
        else:
            written.set_result(None)
