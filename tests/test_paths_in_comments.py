"""Paths that comments, docstrings and docs name are paths of the repository (CONVENTIONS.md:
"Comments name only paths that exist")."""

import ast
import io
import itertools
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCANNED = ("engine", "gui", "scripts", "tests", "docs", "installers", "README.md", "pyproject.toml")
# Text read whole; Python is read for its comments and docstrings only (a test's strings may
# name paths that must not exist). The raw logs under docs/bench (.txt, .log) are records of
# what ran then, not prose to keep true, and are not read.
TEXT_SUFFIXES = {".md", ".toml", ".sh", ".cu", ".cuh", ".h", ".spec", ".iss", ".cfg"}
# A path from the repository's root: a top folder, then names; not inside a longer path
# (nlmeans_studio/engine/..., ../shared/docs/...). Braces ({a,b}) and * are expanded.
PATH = re.compile(r"(?<![\w./-])((?:engine|gui|scripts|tests|docs|resources|installers)/[\w./{},*-]*[\w}*])")


def _python_prose(text: str) -> str:
    """The comments and docstrings of a Python source, one per line."""
    pieces = [
        token.string for token in tokenize.generate_tokens(io.StringIO(text).readline) if token.type == tokenize.COMMENT
    ]
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            docstring = ast.get_docstring(node, clean=False)
            if docstring:
                pieces.append(docstring)
    return "\n".join(pieces)


def _expanded(path: str) -> list[str]:
    """``a/{b,c}.txt`` as ``a/b.txt`` and ``a/c.txt``."""
    parts = re.split(r"\{([^{}]*)\}", path)
    choices = [[part] if index % 2 == 0 else part.split(",") for index, part in enumerate(parts)]
    return ["".join(choice) for choice in itertools.product(*choices)]


def missing_paths(text: str, root: Path = ROOT) -> list[str]:
    """The repository paths ``text`` names that do not exist under ``root``."""
    missing = []
    for named in PATH.findall(text):
        for path in _expanded(named):
            if not (any(root.glob(path)) if "*" in path else (root / path).exists()):
                missing.append(named)
    return missing


def _scanned_files() -> list[Path]:
    files = []
    for name in SCANNED:
        top = ROOT / name
        candidates = [top] if top.is_file() else sorted(top.rglob("*"))
        files += [
            path
            for path in candidates
            if path.is_file()
            and (path.suffix == ".py" or path.suffix in TEXT_SUFFIXES)
            and "__pycache__" not in path.parts
        ]
    return files


def test_every_path_named_in_comments_docstrings_and_docs_exists() -> None:
    stale = []
    for path in _scanned_files():
        text = path.read_text(encoding="utf-8")
        prose = _python_prose(text) if path.suffix == ".py" else text
        stale += [f"{path.relative_to(ROOT)}: {named}" for named in missing_paths(prose)]
    assert stale == [], "paths that do not exist (renamed or moved? name where they are now):\n" + "\n".join(stale)


def test_the_scan_finds_paths_in_prose_and_reports_the_wrong_ones() -> None:
    prose = (
        "see docs/performance.md, engine/kernels/*.cu and docs/bench/{README,2026-11-26-defaults-study}.md; "
        "not nlmeans_studio/engine/volume_io.py nor ../shared/tools/x; "
        "but engine/volume_io.py, docs/bench/{README,nothing}.md and scripts/nothing_*.py are wrong."
    )
    assert missing_paths(prose) == ["engine/volume_io.py", "docs/bench/{README,nothing}.md", "scripts/nothing_*.py"]
    source = '"""Reads engine/no_such.py."""\n# and docs/no_such.md\nPATH = "tests/not_prose.py"\n'
    assert sorted(missing_paths(_python_prose(source))) == ["docs/no_such.md", "engine/no_such.py"]
