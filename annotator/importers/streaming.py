"""Staging a trajectory too big to hold: its steps written as they are parsed, in chunks.

A 200 MB single chat or a JSON of a million steps held whole, as parsed JSON, validated steps
and step rows at once, takes several times the file's size in memory. A
:class:`~annotator.importers.base.StreamedRecord` hands its steps over one at a time instead:
each chunk is linked, checked and hashed as it passes (``ToolLinks``, ``Checks``,
``ContentHash``, the same ones a whole trajectory goes through), written unseen under a
provisional id, and let go. Once the steps are in, the rest of the record (metadata that
followed the steps in the file, the id derived from it) gives the row its place; back links
of calls already written are set in the store; the raw copy is compressed from the file as it
is read. Memory stays at a chunk of steps, whatever the file's size.
"""

from __future__ import annotations

from itertools import islice

from sqlite_utils import Database

from annotator.importers.accounting import Checks
from annotator.importers.base import ContentHash, ImportedRecord, StreamedRecord, ToolLinks, source_labels_hash
from annotator.models import Step
from annotator.store import staging
from annotator.store.step_index import IndexedBatches
from annotator.store.trajectories import STEP_CHUNK, SaveResult, set_links, write_steps


def stage_streamed(db: Database, streamed: StreamedRecord, token: str, source_format: str,
                   batches: IndexedBatches) -> tuple[ImportedRecord, SaveResult, str | None]:
    """Write ``streamed`` unseen a chunk at a time; (its record, what publishing will make of
    it, the shadow id of a changed one), as ``staging.stage_trajectory`` answers for a whole one."""
    provisional = staging.open_stream(db, token, source_format)
    links, checks, digest = ToolLinks(), Checks(), ContentHash()
    agents: set[str] = set()
    n = 0
    steps = iter(streamed.steps)
    while chunk := list(islice(steps, STEP_CHUNK)):
        first = n
        for step in chunk:
            links.see(step)
            checks.see(step)
            digest.add(step)
            if step.agent:
                agents.add(step.agent)
        written = _link_back(chunk, first, links)
        write_steps(db, provisional, chunk, batches)
        set_links(db, provisional, written)
        n += len(chunk)
    rec = streamed.rest()
    traj = rec.trajectory
    traj.content_hash = digest.hexdigest(traj)
    traj.content_hash = source_labels_hash(rec)
    checks.report(traj.task, rec.ledger)
    status, shadow = staging.close_stream(db, provisional, traj, n, agents, streamed.raw_file, token, batches)
    return rec, status, shadow


def _link_back(chunk: list[Step], first: int, links: ToolLinks) -> list[tuple[int, int]]:
    """Set the back links of the calls in ``chunk`` (steps ``first`` ...) whose results came in
    it; return those of calls already written, (call, result), for the store to set."""
    written = []
    for call, result in links.late:
        if call >= first:
            chunk[call - first].link = result
        else:
            written.append((call, result))
    links.late.clear()
    return written
