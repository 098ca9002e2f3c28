"""The report and the agreement over a generated database, pinned byte for byte.

The database is the benchmark's (``benchmarks.bench_report.generate``, seeded) at 3,000
trajectories; the documents are rendered in every file format but the terminal's (drawn by
rich, whose layout is its own) with the time they were made and the library versions blanked,
and their digests compared with those of the code before the report's reads and renderings were
made faster. Every number is in them: the bootstrap intervals (same seed, same replicates), the
logistic regressions, the per-trajectory listing. A change that moves any of them, or a library
upgrade that does, fails here on purpose: read the difference before pinning the new digest.
"""

from __future__ import annotations

import hashlib

import pytest

from annotator.report import output
from annotator.report.agreement_report import build_agreement
from annotator.report.document import build_report
from annotator.store import open_db
from annotator.taxonomy import load_taxonomy
from benchmarks import bench_report

FORMATS = ("json", "csv", "html", "md")
PINNED = {
    "report": {
        "json": "143932f3e0f3e370fcd7187601ea734f3c3549c3299b4b0c0828c14b6e53721d",
        "csv": "ab5c9f57896a95f4a4bace890d7dce1191e642fd5a44c5236e26d345bcb5767d",
        "html": "88290cae34c67e503483c31fc4a23cf4ab55ef969cc03605cc6d54373f6d6560",
        "md": "52e4caaa91df715bcc087c10489d13be97c32c68311ad141ba6518181054ce2e",
    },
    "agreement": {
        "json": "5538d6172975bb6db8a39dcfe7e4d85f32195738e22639809b401a697d1633b6",
        "csv": "c52e3735c10b8fb17065cc8a8753dd8672ceca01c340f979182a1199b33cea8a",
        "html": "6264303323cd59e94b5e78d8111d57a83be368d8660e65c6adf519a5ef4a7f5d",
        "md": "54864ab9524b266b040924141ba96a1ad4163b3c0d26a4bec876c6b7bb191a81",
    },
}


def digests(path) -> dict[str, dict[str, str]]:
    """Each document's digest per format, over the database at ``path``."""
    db, tax = open_db(path), load_taxonomy()
    docs = {"report": build_report(db, "alice", tax, seed=1, replicates=200, row_limit=None),
            "agreement": build_agreement(db, list(bench_report.SOURCES), tax, reference="alice", seed=1,
                                         replicates=200)}
    out = {}
    for name, doc in docs.items():
        doc.header.update(generated_at="-", tool_version="-", libraries={})
        out[name] = {fmt: hashlib.sha256(output.render_text(doc, fmt).encode()).hexdigest() for fmt in FORMATS}
    db.close()
    return out


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    path = tmp_path_factory.mktemp("pinned") / "bench.db"
    bench_report.generate(path, 3000)
    return path


def test_report_and_agreement_are_the_pinned_bytes(generated):
    assert digests(generated) == PINNED
