"""Run the annotation app headless in its own process and press keys: ``python drive_app.py DB NAME KEYS...``.

Used by the two-process test: each process annotates the same database file at once through
the real app. Exits 1 if the app showed a store error (e.g. "database is locked").
"""

from __future__ import annotations

import asyncio
import sys

from annotator.tui.app import make_app


async def main(db: str, annotator: str, keys: list[str]) -> int:
    app = make_app(db, annotator)
    errors: list[str] = []
    async with app.run_test(size=(140, 42)) as pilot:
        await pilot.press("enter")
        for key in keys:
            await pilot.press(key)
            status = str(app.screen.query_one("#status-line").render())
            if "locked" in status or "error" in status.lower():
                errors.append(status)
    print("\n".join(errors))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3:])))
