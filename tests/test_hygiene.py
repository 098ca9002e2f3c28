"""The floors of the house stay apart: textual only in the TUI, openai only in labelling/llm.py,
the TUI reaches the store only through the annotation core, the plain views and the text guard
sit below the store, reports do not import importers, and modules are named by what they hold."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted((ROOT / "annotator").rglob("*.py"))


def _imported_names(path: Path) -> set[str]:
    """Every absolute module imported, and ``module.name`` for each name taken from a module."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def _imports(path: Path) -> set[str]:
    """The top-level packages a module imports."""
    return {name.split(".")[0] for name in _imported_names(path)}


def test_sources_found():
    assert len(SOURCES) > 10


def test_textual_only_in_tui():
    offenders = [
        str(p.relative_to(ROOT))
        for p in SOURCES
        if "textual" in _imports(p) and "tui" not in p.relative_to(ROOT).parts
    ]
    assert offenders == []


def test_openai_only_in_llm_module():
    allowed = ROOT / "annotator" / "labelling" / "llm.py"
    offenders = [str(p.relative_to(ROOT)) for p in SOURCES if "openai" in _imports(p) and p != allowed]
    assert offenders == []


def test_tui_only_opens_and_watches_the_store():
    """The TUI reads and writes through ``annotator.annotating``; of the store it may only open the
    database and watch its data version."""
    allowed = {"annotator.store.open_db", "annotator.store.data_version"}
    offenders = {
        f"{p.relative_to(ROOT)}: {name}"
        for p in SOURCES
        if p.relative_to(ROOT).parts[:2] == ("annotator", "tui")
        for name in _imported_names(p)
        if (name == "annotator.store" or name.startswith("annotator.store.")) and name not in allowed
    }
    assert sorted(offenders) == []


def test_views_and_text_guard_sit_below_the_store():
    """The plain read models and the guard that makes text inert import nothing of the store, so
    every front end (and the store itself) can use them."""
    modules = [ROOT / "annotator" / "views.py", ROOT / "annotator" / "text.py"]
    offenders = {
        f"{p.relative_to(ROOT)}: {name}"
        for p in modules
        for name in _imported_names(p)
        if name == "annotator.store" or name.startswith("annotator.store.")
    }
    assert all(p.is_file() for p in modules) and sorted(offenders) == []


def test_only_annotator_is_a_package():
    """The wheel installs one top-level package: the codebook's model ships inside ``annotator``,
    and the repository's ``taxonomy/`` folder holds only the codebook's data."""
    assert not list((ROOT / "taxonomy").glob("*.py"))
    assert (ROOT / "annotator" / "taxonomy" / "__init__.py").is_file()


#: Module names that say how or for whom rather than what a module holds.
VAGUE_MODULE_NAMES = {"service", "bulk", "utils", "util", "helpers", "misc", "common"}


def test_modules_are_named_by_what_they_hold():
    offenders = [str(p.relative_to(ROOT)) for p in SOURCES if p.stem in VAGUE_MODULE_NAMES]
    assert offenders == []


def test_core_never_imports_front_ends():
    """Nothing below the front ends imports the CLI or the TUI (data flows one way)."""
    offenders = []
    for p in SOURCES:
        rel = p.relative_to(ROOT)
        if rel.parts[:2] in (("annotator", "tui"),) or rel.name == "cli.py":
            continue
        text = p.read_text(encoding="utf-8")
        if "annotator.cli" in text or "annotator.tui" in text:
            offenders.append(str(rel))
    assert offenders == []


def test_cli_help_does_not_import_heavy_modules():
    import subprocess
    import sys

    code = (
        "import sys; from click.testing import CliRunner; from annotator.cli import main;"
        "r = CliRunner().invoke(main, ['--help']); assert r.exit_code == 0, r.output;"
        "heavy = [m for m in ('openai', 'textual', 'scipy', 'statsmodels', 'sklearn') if m in sys.modules];"
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_the_annotation_app_starts_without_the_statistics_or_pandas():
    """The app's start imports no scikit-learn (agreement is computed when someone has
    assignments) and no pandas (sqlite-utils would load it for nothing), a second or more of
    every ``mast annotate``."""
    import subprocess
    import sys

    code = ("import sys, annotator.tui.app, annotator.cli;"
            "print(','.join(m for m in ('sklearn', 'scipy', 'statsmodels', 'pandas') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_report_does_not_import_importers():
    """Reports read the store; what an importer knows that a report needs lives below both."""
    offenders = [
        str(p.relative_to(ROOT))
        for p in sorted((ROOT / "annotator" / "report").rglob("*.py"))
        if any(m == "annotator.importers" or m.startswith("annotator.importers.") for m in _imported_names(p))
    ]
    assert offenders == []


def test_source_names_are_spelled_in_one_module():
    """The ``run:`` grammar of label source names lives in annotator/label_sources.py alone."""
    home = ROOT / "annotator" / "label_sources.py"
    offenders = [str(p.relative_to(ROOT)) for p in SOURCES if p != home and '"run:' in p.read_text(encoding="utf-8")]
    assert offenders == []


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _runtime_imports(tree: ast.AST, modules: set[str]) -> set[str]:
    """The project modules a module imports at run time, wherever the import statement sits
    (a function's lazy import closes a cycle as surely as a top-level one); imports under
    ``if TYPE_CHECKING:`` never run and are left out."""
    type_only = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING")
        for stmt in node.body
        for inner in ast.walk(stmt)
    }
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in type_only:
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, "relative imports hide the graph: write the module's full name"
            for alias in node.names:
                name = f"{node.module}.{alias.name}"
                found.add(name if name in modules else node.module)
    return found & modules


def import_graph() -> dict[str, set[str]]:
    """Module → the project modules it imports, from the AST of every source file. The importer
    registry imports its formats by name (``module:Class`` strings): those count as edges too."""
    from annotator.importers.registry import IMPORTERS

    modules = {_module_name(p): p for p in SOURCES}
    graph = {
        name: _runtime_imports(ast.parse(path.read_text(encoding="utf-8")), set(modules)) - {name}
        for name, path in modules.items()
    }
    graph["annotator.importers.registry"] |= {f"annotator.importers.{e.split(':')[0]}" for e in IMPORTERS}
    return graph


def test_import_graph_is_read():
    graph = import_graph()
    assert "annotator.importers.base" in graph["annotator.importers.chat"]
    assert "annotator.importers.chat" in graph["annotator.importers.registry"]


def test_no_import_cycle():
    """No module imports itself through others: every package's imports run one way."""
    import graphlib

    try:
        tuple(graphlib.TopologicalSorter(import_graph()).static_order())
    except graphlib.CycleError as exc:
        raise AssertionError("import cycle: " + " -> ".join(exc.args[1])) from None


def test_readme_layout_names_every_room():
    """The README's layout paragraph names every top-level module and package of ``annotator``,
    and every public module of the rooms it lists in full (store, annotating, labelling)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    layout = readme[readme.index("The layout, one room per job") : readme.index("holds the house to these rules")]
    package = ROOT / "annotator"
    names = [p.name for p in package.iterdir() if p.suffix == ".py" and p.name != "__init__.py"]
    names += [f"{p.name}/" for p in package.iterdir() if p.is_dir() and any(p.glob("*.py"))]
    for room in ("store", "annotating", "labelling"):
        names += [p.name for p in (package / room).glob("*.py") if not p.name.startswith("_")]
    missing = sorted(n for n in names if f"`{n}`" not in layout)
    assert missing == []


#: What reads the process environment: os.environ / os.getenv, click's ``envvar=``, and the
#: standard helpers that consult variables of their own (USER, TMPDIR).
_ENVIRONMENT_READS = {"environ", "getenv", "environb", "getuser", "gettempdir"}


def _reads_environment(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in _ENVIRONMENT_READS:
            found.append(f"{ast.unparse(node)} (line {node.lineno})")
        elif isinstance(node, ast.ImportFrom) and node.module in ("os", "getpass", "tempfile"):
            found += [f"import {a.name} (line {node.lineno})" for a in node.names if a.name in _ENVIRONMENT_READS]
        elif isinstance(node, ast.keyword) and node.arg in ("envvar", "auto_envvar_prefix"):
            found.append(f"{node.arg}= (line {node.value.lineno})")
    return found


def test_only_the_settings_read_the_environment():
    """The environment is read once, by annotator/settings.py, at the edge; the CLI and the TUI's
    factory build a Settings and pass plain values down, so nothing else looks at it."""
    home = ROOT / "annotator" / "settings.py"
    assert _reads_environment(home), "the check no longer sees how settings.py reads the environment"
    offenders = {str(p.relative_to(ROOT)): found for p in SOURCES if p != home and (found := _reads_environment(p))}
    assert offenders == {}
