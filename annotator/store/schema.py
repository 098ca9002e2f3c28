"""Numbered, append-only migrations. Never edit one that has shipped: add the next.

Each function says why it exists. ``open_db`` applies the pending ones inside one
transaction, so a database is always at the latest schema or untouched.
"""

from __future__ import annotations

from sqlite_utils import Database
from sqlite_utils.migrations import Migrations

from annotator.store import verdict_summary
from annotator.store.names import annotator_names

MIGRATIONS = Migrations("mast-annotator")


@MIGRATIONS(name="001_initial")
def _m001_initial(db: Database) -> None:
    """The core tables.

    Steps get a row each so a 10,000-step trajectory is read a page at a time; labels are
    append-only rows and ``label_state`` points at the current row of each
    (trajectory, annotator, mode) so that reading the current labels never scans history.
    """
    db.execute(
        """
        CREATE TABLE trajectories (
            id TEXT PRIMARY KEY,
            schema_version INTEGER NOT NULL,
            source_format TEXT NOT NULL,
            source_path TEXT,
            source_ref TEXT,
            title TEXT,
            system TEXT,
            model TEXT,
            benchmark TEXT,
            task TEXT,
            outcome TEXT NOT NULL DEFAULT 'unknown',
            score REAL,
            metadata TEXT NOT NULL DEFAULT '{}',
            raw BLOB,
            content_hash TEXT NOT NULL,
            imported_at TEXT NOT NULL,
            n_steps INTEGER NOT NULL DEFAULT 0,
            agents TEXT NOT NULL DEFAULT '[]'
        )"""
    )
    for col in ("system", "model", "benchmark", "outcome", "source_format"):
        db.execute(f"CREATE INDEX idx_trajectories_{col} ON trajectories({col})")
    db.execute(
        """
        CREATE TABLE steps (
            trajectory_id TEXT NOT NULL REFERENCES trajectories(id) ON DELETE CASCADE,
            idx INTEGER NOT NULL,
            id TEXT NOT NULL,
            agent TEXT,
            role TEXT,
            recipient TEXT,
            kind TEXT NOT NULL,
            content TEXT NOT NULL,
            tool_name TEXT,
            tool_args TEXT,
            call_id TEXT,
            link INTEGER,
            parent INTEGER,
            grp TEXT,
            timestamp TEXT,
            tokens_in INTEGER,
            tokens_out INTEGER,
            attributes TEXT,
            raw TEXT,
            PRIMARY KEY (trajectory_id, idx)
        )"""
    )
    db.execute(
        "CREATE VIRTUAL TABLE steps_fts USING fts5(content, content='steps', content_rowid='rowid')"
    )
    db.execute(
        """
        CREATE TABLE labels (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            schema_version INTEGER NOT NULL,
            trajectory_id TEXT NOT NULL REFERENCES trajectories(id) ON DELETE CASCADE,
            mode_id TEXT NOT NULL,
            annotator TEXT NOT NULL,
            verdict TEXT,
            onset_step INTEGER,
            evidence_steps TEXT NOT NULL DEFAULT '[]',
            quote TEXT,
            note TEXT,
            rationale TEXT,
            confidence REAL,
            provenance TEXT NOT NULL,
            run_id INTEGER,
            grounded INTEGER,
            taxonomy_hash TEXT,
            retracts INTEGER REFERENCES labels(id),
            extra TEXT NOT NULL DEFAULT '{}',
            created_at TEXT NOT NULL
        )"""
    )
    db.execute("CREATE INDEX idx_labels_key ON labels(trajectory_id, annotator, mode_id)")
    db.execute("CREATE INDEX idx_labels_annotator ON labels(annotator)")
    db.execute(
        """
        CREATE TABLE label_state (
            trajectory_id TEXT NOT NULL REFERENCES trajectories(id) ON DELETE CASCADE,
            annotator TEXT NOT NULL,
            mode_id TEXT NOT NULL,
            label_id INTEGER NOT NULL REFERENCES labels(id),
            PRIMARY KEY (trajectory_id, annotator, mode_id)
        )"""
    )
    db.execute("CREATE INDEX idx_label_state_annotator ON label_state(annotator)")
    db.execute(
        """
        CREATE TABLE review_state (
            trajectory_id TEXT NOT NULL REFERENCES trajectories(id) ON DELETE CASCADE,
            annotator TEXT NOT NULL,
            status TEXT NOT NULL,
            seconds_spent REAL NOT NULL DEFAULT 0,
            updated_at TEXT NOT NULL,
            PRIMARY KEY (trajectory_id, annotator)
        )"""
    )
    db.execute(
        """
        CREATE TABLE review_events (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            trajectory_id TEXT NOT NULL REFERENCES trajectories(id) ON DELETE CASCADE,
            annotator TEXT NOT NULL,
            status TEXT NOT NULL,
            created_at TEXT NOT NULL
        )"""
    )
    db.execute(
        """
        CREATE TABLE label_runs (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            schema_version INTEGER NOT NULL,
            kind TEXT NOT NULL,
            model TEXT,
            endpoint_host TEXT,
            prompt_name TEXT,
            prompt_hash TEXT,
            params TEXT NOT NULL DEFAULT '{}',
            taxonomy_hash TEXT,
            status TEXT NOT NULL,
            counts TEXT NOT NULL DEFAULT '{}',
            tokens_in INTEGER NOT NULL DEFAULT 0,
            tokens_out INTEGER NOT NULL DEFAULT 0,
            cost_usd REAL NOT NULL DEFAULT 0,
            started_at TEXT NOT NULL,
            finished_at TEXT
        )"""
    )
    db.execute(
        """
        CREATE TABLE attributions (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            trajectory_id TEXT NOT NULL REFERENCES trajectories(id) ON DELETE CASCADE,
            annotator TEXT NOT NULL,
            step INTEGER,
            step_as_given TEXT,
            agent TEXT,
            reason TEXT,
            warnings TEXT NOT NULL DEFAULT '[]',
            created_at TEXT NOT NULL,
            UNIQUE (trajectory_id, annotator)
        )"""
    )
    db.execute(
        """
        CREATE TABLE suggestion_decisions (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            label_id INTEGER NOT NULL REFERENCES labels(id),
            trajectory_id TEXT NOT NULL REFERENCES trajectories(id) ON DELETE CASCADE,
            mode_id TEXT NOT NULL,
            annotator TEXT NOT NULL,
            decision TEXT NOT NULL,
            created_at TEXT NOT NULL
        )"""
    )
    db.execute("CREATE INDEX idx_decisions ON suggestion_decisions(trajectory_id, annotator)")


@MIGRATIONS(name="002_prelabel")
def _m002_prelabel(db: Database) -> None:
    """Pre-labelling: the request cache and the per-trajectory record of each run.

    ``llm_requests`` keeps every judge response under a key of (model, endpoint, prompt hash,
    parameters, sample index), committed the moment it arrives, so that a re-run or a run
    resumed after Ctrl-C or ``kill -9`` sends no request twice. ``run_items`` records, per run
    and trajectory, whether its labels were stored (in the same transaction as the labels) or
    why it failed, which is what resuming skips and what a failure report lists.
    """
    db.execute(
        """
        CREATE TABLE llm_requests (
            key TEXT PRIMARY KEY,
            trajectory_id TEXT,
            model TEXT NOT NULL,
            endpoint_host TEXT,
            response TEXT NOT NULL,
            tokens_in INTEGER NOT NULL DEFAULT 0,
            tokens_out INTEGER NOT NULL DEFAULT 0,
            created_at TEXT NOT NULL
        )"""
    )
    db.execute(
        """
        CREATE TABLE run_items (
            run_id INTEGER NOT NULL REFERENCES label_runs(id),
            trajectory_id TEXT NOT NULL REFERENCES trajectories(id) ON DELETE CASCADE,
            status TEXT NOT NULL,
            error TEXT,
            updated_at TEXT NOT NULL,
            PRIMARY KEY (run_id, trajectory_id)
        )"""
    )


@MIGRATIONS(name="003_tui")
def _m003_tui(db: Database) -> None:
    """Step heads: each step's list line (agent, kind, tool, first 240 characters), its length,
    and for contents over 10,000 characters their first 10,000.

    SQLite reads a TEXT value whole even for ``substr`` or ``length``, so listing the steps of a
    trajectory with multi-megabyte tool outputs read megabytes per window of the step list, and
    showing the start of such a step read all of it. This table, kept in step with ``steps`` by
    triggers, lets the annotation app draw any window of a 10,000-step trajectory and open any
    step without touching long contents.
    """
    db.execute(
        """
        CREATE TABLE step_heads (
            trajectory_id TEXT NOT NULL,
            idx INTEGER NOT NULL,
            agent TEXT,
            kind TEXT NOT NULL,
            tool_name TEXT,
            preview TEXT NOT NULL,
            length INTEGER NOT NULL,
            head TEXT,
            PRIMARY KEY (trajectory_id, idx)
        ) WITHOUT ROWID"""
    )
    columns = "trajectory_id, idx, agent, kind, tool_name, preview, length, head"
    values = (
        "{p}trajectory_id, {p}idx, {p}agent, {p}kind, {p}tool_name, substr({p}content, 1, 240), length({p}content),"
        " CASE WHEN length({p}content) > 10000 THEN substr({p}content, 1, 10000) END"
    )
    copy = f"INSERT OR REPLACE INTO step_heads ({columns}) VALUES ({values.format(p='new.')});"
    db.execute(f"CREATE TRIGGER step_heads_insert AFTER INSERT ON steps BEGIN {copy} END")
    db.execute(
        "CREATE TRIGGER step_heads_update AFTER UPDATE ON steps BEGIN"
        " DELETE FROM step_heads WHERE trajectory_id = old.trajectory_id AND idx = old.idx;"
        f" {copy} END"
    )
    db.execute(
        "CREATE TRIGGER step_heads_delete AFTER DELETE ON steps BEGIN"
        " DELETE FROM step_heads WHERE trajectory_id = old.trajectory_id AND idx = old.idx; END"
    )
    db.execute(f"INSERT INTO step_heads ({columns}) SELECT {values.format(p='')} FROM steps")


@MIGRATIONS(name="004_report")
def _m004_report(db: Database) -> None:
    """Reports read every current label of a source in trajectory order.

    With only an index on ``annotator``, SQLite walks the whole of ``label_state`` by primary
    key (trajectory first) to group one source's labels; an index led by the annotator and
    ordered by trajectory, holding the label id, reads just that source's rows, already in
    order, without touching the table. It also serves every lookup the annotator-only index
    did, which is dropped.
    """
    db.execute(
        "CREATE INDEX idx_label_state_source ON label_state(annotator, trajectory_id, mode_id, label_id)"
    )
    db.execute("DROP INDEX idx_label_state_annotator")


@MIGRATIONS(name="005_short_imports")
def _m005_short_imports(db: Database) -> None:
    """Imports in short transactions, published at once.

    An import held the write lock for the whole of a file (38 s for 122 MB), and a tag made
    meanwhile waited until it gave up. Imports now write in batches of a fraction of a second
    into rows nobody reads: ``trajectories.pending`` names the import that has not published a
    row yet (every reader selects ``pending IS NULL``), ``pending_labels`` holds the file's
    labels until then, and ``imports`` records which process each import belongs to, so the
    rows of one killed mid-way can be found and discarded.
    """
    db.execute("ALTER TABLE trajectories ADD COLUMN pending TEXT")
    db.execute("CREATE INDEX idx_trajectories_pending ON trajectories(pending) WHERE pending IS NOT NULL")
    db.execute(
        """
        CREATE TABLE imports (
            token TEXT PRIMARY KEY,
            host TEXT NOT NULL,
            pid INTEGER NOT NULL,
            source TEXT,
            started_at TEXT NOT NULL
        )"""
    )
    db.execute(
        """
        CREATE TABLE pending_labels (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            token TEXT NOT NULL,
            schema_version INTEGER NOT NULL,
            trajectory_id TEXT NOT NULL,
            mode_id TEXT NOT NULL,
            annotator TEXT NOT NULL,
            verdict TEXT,
            onset_step INTEGER,
            evidence_steps TEXT NOT NULL DEFAULT '[]',
            quote TEXT,
            note TEXT,
            rationale TEXT,
            confidence REAL,
            provenance TEXT NOT NULL,
            run_id INTEGER,
            grounded INTEGER,
            taxonomy_hash TEXT,
            retracts INTEGER,
            extra TEXT NOT NULL DEFAULT '{}',
            created_at TEXT NOT NULL
        )"""
    )
    db.execute("CREATE INDEX idx_pending_labels_token ON pending_labels(token)")


@MIGRATIONS(name="006_assignments")
def _m006_assignments(db: Database) -> None:
    """Assignments: who is to label which trajectory (``mast assign``).

    A trajectory given to two people is an overlap item, labelled blind by both to measure
    agreement. Rows are only ever added: re-running ``mast assign`` after an import gives out
    the new trajectories and keeps every earlier assignment, so work already begun stays put.
    """
    db.execute(
        """
        CREATE TABLE assignments (
            trajectory_id TEXT NOT NULL REFERENCES trajectories(id) ON DELETE CASCADE,
            annotator TEXT NOT NULL,
            assigned_at TEXT NOT NULL,
            PRIMARY KEY (trajectory_id, annotator)
        )"""
    )
    db.execute("CREATE INDEX idx_assignments_annotator ON assignments(annotator, trajectory_id)")


@MIGRATIONS(name="007_audit_samples")
def _m007_audit_samples(db: Database) -> None:
    """Audit samples: which trajectories a judge labelled were chosen for people to check, how.

    A judge-corrected estimate is only as good as the sample behind it: the design (the label
    source it was drawn from, seed, stratification, each stratum's size and how many were drawn
    from it) and each chosen trajectory's stratum and inclusion probability are kept, so the
    report can weight a stratified sample (Horvitz–Thompson) and say how it was drawn. The
    sample's tag is its name: ``--tag`` selects its trajectories in every command, whatever
    a later re-import does to the trajectories' own metadata.
    """
    db.execute(
        """
        CREATE TABLE samples (
            tag TEXT PRIMARY KEY,
            source TEXT NOT NULL,
            stratify TEXT,
            seed INTEGER NOT NULL,
            size INTEGER NOT NULL,
            population INTEGER NOT NULL,
            strata TEXT NOT NULL DEFAULT '{}',
            filters TEXT NOT NULL DEFAULT '{}',
            created_at TEXT NOT NULL
        )"""
    )
    db.execute(
        """
        CREATE TABLE sample_items (
            tag TEXT NOT NULL REFERENCES samples(tag),
            trajectory_id TEXT NOT NULL REFERENCES trajectories(id) ON DELETE CASCADE,
            stratum TEXT NOT NULL,
            inclusion_probability REAL NOT NULL,
            PRIMARY KEY (tag, trajectory_id)
        )"""
    )
    db.execute("CREATE INDEX idx_sample_items_trajectory ON sample_items(trajectory_id)")


@MIGRATIONS(name="008_blind_reviews")
def _m008_blind_reviews(db: Database) -> None:
    """Whether a person worked blind: suggestions anchor people (automation bias).

    ``blind`` is 1 while every write to a review was made with suggestions, other people's
    labels and outcomes hidden, and 0 once any was made with them in view; NULL for reviews
    recorded before this was kept (unknown, never guessed). Agreement with a judge measured on
    blind reviews against reviews that saw its suggestions tells how much the suggestions
    moved people. Each review event records the mode of the session that wrote it.
    """
    db.execute("ALTER TABLE review_state ADD COLUMN blind INTEGER")
    db.execute("ALTER TABLE review_events ADD COLUMN blind INTEGER")


@MIGRATIONS(name="009_run_spend")
def _m009_run_spend(db: Database) -> None:
    """What a run spent, derived from what it stored; and the prompt frame's secret.

    A run's totals were counters kept in memory and written when a session ended, so a session
    killed with ``kill -9`` lost its spend and ``--max-cost`` started afresh on every
    ``--resume``. Every response now carries the run that paid for it, its cached input tokens
    and its cost, so a run's requests, tokens and spend are sums over its stored responses,
    whatever happened to the process. ``local_secrets`` holds one random key made when the
    database is created (never exported): the judge's untrusted-data frame is tagged with an
    HMAC under it, which no text in an imported file can compute.
    """
    db.execute("ALTER TABLE llm_requests ADD COLUMN run_id INTEGER")
    db.execute("ALTER TABLE llm_requests ADD COLUMN tokens_cached INTEGER NOT NULL DEFAULT 0")
    db.execute("ALTER TABLE llm_requests ADD COLUMN cost_usd REAL NOT NULL DEFAULT 0")
    db.execute("CREATE INDEX idx_llm_requests_run ON llm_requests(run_id)")
    db.execute("CREATE TABLE local_secrets (name TEXT PRIMARY KEY, value BLOB NOT NULL)")
    db.execute("INSERT INTO local_secrets (name, value) VALUES ('prompt_frame', randomblob(32))")


@MIGRATIONS(name="010_import_sources")
def _m010_import_sources(db: Database) -> None:
    """The files an import read whole, by content, with the trajectories they gave.

    Re-importing an unchanged file parsed, split and validated all of it to find that nothing
    changed. A file's sha256 and the (id, content hash) of every trajectory it gave, written
    when its import is published, let the next import of the same bytes with the same options
    answer "unchanged" after one hash of the file and one query, provided each trajectory is
    still stored with that content. ``options`` holds the import options that shape what is
    read from the file.
    """
    db.execute(
        """
        CREATE TABLE import_sources (
            path TEXT NOT NULL,
            importer TEXT NOT NULL,
            options TEXT NOT NULL,
            sha256 TEXT NOT NULL,
            trajectories TEXT NOT NULL,
            imported_at TEXT NOT NULL,
            PRIMARY KEY (path, importer, options)
        )"""
    )


@MIGRATIONS(name="011_request_spend")
def _m011_request_spend(db: Database) -> None:
    """Every response a run paid for, apart from the cache that keeps the first of them.

    ``llm_requests`` is the cache: one response per key, the first writer wins. Two processes
    that send the same request at once both pay for it, and the second one's tokens and cost
    were dropped with its response. ``llm_spend`` records each paid response on its own row,
    so a run's totals count every request it sent; the rows already stored are its first rows.
    """
    db.execute(
        """
        CREATE TABLE llm_spend (
            id INTEGER PRIMARY KEY,
            key TEXT NOT NULL,
            run_id INTEGER,
            model TEXT NOT NULL,
            tokens_in INTEGER NOT NULL,
            tokens_cached INTEGER NOT NULL,
            tokens_out INTEGER NOT NULL,
            cost_usd REAL NOT NULL,
            created_at TEXT NOT NULL
        )"""
    )
    db.execute(
        "INSERT INTO llm_spend (key, run_id, model, tokens_in, tokens_cached, tokens_out, cost_usd, created_at)"
        " SELECT key, run_id, model, tokens_in, tokens_cached, tokens_out, cost_usd, created_at FROM llm_requests"
        " ORDER BY created_at"
    )
    db.execute("CREATE INDEX idx_llm_spend_run ON llm_spend(run_id)")


@MIGRATIONS(name="012_verdict_summary")
def _m012_verdict_summary(db: Database) -> None:
    """Each source's current verdicts on a trajectory, folded into one row as they are written.

    A report folded 14 million cells of a source at a million trajectories (about 15 s of CPU
    each, SQLite's aggregates per cell); ``verdict_summary`` holds that fold per (annotator,
    trajectory), kept current by triggers that list what changed and by the label writes that
    fold it again (``store.verdict_summary``). Filled here from the labels already stored: one
    pass over them, paid once by a database upgraded to this release.
    """
    db.execute("CREATE TABLE mode_codes (code INTEGER PRIMARY KEY, mode_id TEXT NOT NULL UNIQUE)")
    db.execute(
        """
        CREATE TABLE verdict_summary (
            annotator TEXT NOT NULL,
            trajectory_id TEXT NOT NULL,
            labels INTEGER NOT NULL,
            verdicts INTEGER NOT NULL,
            absent INTEGER NOT NULL,
            cells TEXT,
            modes INTEGER NOT NULL,
            PRIMARY KEY (annotator, trajectory_id)
        ) WITHOUT ROWID"""
    )
    db.execute(
        "CREATE TABLE verdict_summary_stale (annotator TEXT NOT NULL, trajectory_id TEXT NOT NULL,"
        " PRIMARY KEY (annotator, trajectory_id)) WITHOUT ROWID"
    )
    mark = "INSERT OR IGNORE INTO verdict_summary_stale (annotator, trajectory_id) VALUES"
    db.execute(f"CREATE TRIGGER verdict_summary_delete AFTER DELETE ON label_state BEGIN"
               f" {mark} (old.annotator, old.trajectory_id); END")
    db.execute(f"CREATE TRIGGER verdict_summary_update AFTER UPDATE ON label_state BEGIN"
               f" {mark} (old.annotator, old.trajectory_id), (new.annotator, new.trajectory_id); END")
    db.execute(f"CREATE TRIGGER verdict_summary_label AFTER UPDATE OF trajectory_id, annotator, mode_id, verdict,"
               f" onset_step ON labels BEGIN {mark} (old.annotator, old.trajectory_id),"
               f" (new.annotator, new.trajectory_id); END")
    verdict_summary.rebuild(db)


@MIGRATIONS(name="013_reference_indexes")
def _m013_reference_indexes(db: Database) -> None:
    """An index on every column that references another row.

    SQLite checks a foreign key from the parent's side by looking for children: deleting a
    label looked for labels retracting it and for ``label_state`` and ``suggestion_decisions``
    rows pointing at it, deleting a trajectory for its review events and run items, each a scan
    of the whole table without an index. Deleting one trajectory's 42 labels from a store of
    4.2 million took 37 s; with these indexes a fraction of a millisecond.
    """
    db.execute("CREATE INDEX idx_labels_retracts ON labels(retracts) WHERE retracts IS NOT NULL")
    db.execute("CREATE INDEX idx_label_state_label ON label_state(label_id)")
    db.execute("CREATE INDEX idx_suggestion_decisions_label ON suggestion_decisions(label_id)")
    db.execute("CREATE INDEX idx_review_events_trajectory ON review_events(trajectory_id)")
    db.execute("CREATE INDEX idx_run_items_trajectory ON run_items(trajectory_id)")


@MIGRATIONS(name="014_activity_indexes")
def _m014_activity_indexes(db: Database) -> None:
    """When each source last wrote, and which sources there are, read from indexes.

    ``mast sources`` took the newest label of each annotator by reading all of them (2.5 s at
    4.2 million labels) and the names from every current label (0.9 s). The annotator index of
    ``labels`` gains the creation time (what looked labels up by annotator still can), review
    states get the same, and the names are read by skipping from one name to the next in
    ``label_state``'s source index.
    """
    db.execute("DROP INDEX idx_labels_annotator")
    db.execute("CREATE INDEX idx_labels_activity ON labels(annotator, created_at)")
    db.execute("CREATE INDEX idx_review_state_activity ON review_state(annotator, updated_at)")


@MIGRATIONS(name="015_label_activity")
def _m015_label_activity(db: Database) -> None:
    """When each source last wrote a label, one row a source, in place of the index that found it.

    The (annotator, created_at) index of ``labels`` answered ``mast sources`` with one search a
    name, but every label written paid for it: an import adds its labels at the end of each
    source's run of that index, not at the end of the index, so its pages split half full, and
    writing them cost a third of the insert of a label export's 566,272 labels (0.5–1 s).
    ``label_activity`` holds the newest ``created_at`` of each source's labels (retractions
    included), raised by the label writes as they make labels current (``labels.make_current``
    and ``retract``), so an import's labels count once it is published. Removing a trajectory
    leaves it: it says when a source last wrote, whatever became of what it wrote. Filled here
    from the labels of published trajectories, by the index, before the index goes.
    """
    db.execute("CREATE TABLE label_activity (annotator TEXT PRIMARY KEY, written_at TEXT NOT NULL) WITHOUT ROWID")
    for name in annotator_names(db, "labels"):
        db.execute(
            "INSERT INTO label_activity SELECT annotator, created_at FROM labels l WHERE annotator = ? AND NOT EXISTS"
            " (SELECT 1 FROM trajectories t WHERE t.id = l.trajectory_id AND t.pending IS NOT NULL)"
            " ORDER BY created_at DESC LIMIT 1", [name])
    db.execute("DROP INDEX idx_labels_activity")
