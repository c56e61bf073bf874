"""The engine's public face (issue 21): every name of ``nlmeans_studio.engine.__all__`` exists,
and every public function and class has the numpydoc sections its signature calls for.

A function with parameters (``self`` aside) has a Parameters section naming each of them; one
whose return annotation is not None has Returns (or Yields). A class has Parameters or
Attributes, and between them they name every parameter of its constructor where Python can
read its signature (exceptions take a message: a section, no names). Docstrings are parsed
simply: a section is its title, a line of dashes as long, and the lines up to the next section;
its entries are the lines that are not indented, ``name : type`` or ``a, b : type`` or ``a, b``.

That the window imports nothing of the engine but ``nlmeans_studio.engine`` is import-linter's
contract, checked in tests/test_project.py.
"""

from __future__ import annotations

import inspect
import re

import pytest

import nlmeans_studio.engine as engine

SECTION = re.compile(r"^(?P<title>[A-Z][A-Za-z ]*)\n(?P<rule>-+)\n", re.MULTILINE)


def _documented() -> list[str]:
    """The names of ``__all__`` that are functions or classes (the constants are left out)."""
    return [
        name
        for name in engine.__all__
        if hasattr(engine, name)
        and (inspect.isclass(getattr(engine, name)) or inspect.isroutine(inspect.unwrap(getattr(engine, name))))
    ]


def _sections(obj: object) -> dict[str, str]:
    """Section title -> its text, from ``obj``'s own docstring (not one inherited from a base class)."""
    doc = inspect.cleandoc(obj.__doc__ or "")
    found = [match for match in SECTION.finditer(doc) if len(match["rule"]) == len(match["title"])]
    ends = [match.start() for match in found[1:]] + [len(doc)] * bool(found)
    return {match["title"]: doc[match.end() : end] for match, end in zip(found, ends, strict=True)}


def _entries(section: str) -> set[str]:
    """The names a Parameters or Attributes section documents."""
    names = set()
    for line in section.splitlines():
        if line.strip() and not line[0].isspace():
            names.update(name.strip().lstrip("*") for name in line.split(" : ")[0].split(","))
    return names


def _signature(obj: object) -> inspect.Signature | None:
    try:
        return inspect.signature(obj)
    except (TypeError, ValueError):  # a class whose constructor is a builtin's (an exception)
        return None


def _parameters(signature: inspect.Signature) -> list[str]:
    return [name for name in signature.parameters if name not in ("self", "cls")]


def test_every_public_name_exists() -> None:
    missing = [name for name in engine.__all__ if not hasattr(engine, name)]
    assert not missing, f"__all__ names what nlmeans_studio.engine does not define: {missing}"
    assert len(set(engine.__all__)) == len(engine.__all__), "__all__ names something twice"


@pytest.mark.parametrize("name", _documented())
def test_public_docstrings_have_the_sections_their_signature_calls_for(name: str) -> None:
    obj = getattr(engine, name)
    assert (obj.__doc__ or "").strip(), f"{name} has no docstring"
    sections = _sections(obj)
    summary = inspect.cleandoc(obj.__doc__).split("\n\n", 1)[0]
    assert summary and not SECTION.match(summary + "\n"), f"{name}: the docstring starts with a summary"
    if inspect.isclass(obj):
        assert {"Parameters", "Attributes"} & set(sections), f"{name}: a class documents Parameters or Attributes"
        signature = _signature(obj)
        if signature is not None:
            named = _entries(sections.get("Parameters", "")) | _entries(sections.get("Attributes", ""))
            undocumented = [p for p in _parameters(signature) if p not in named]
            assert not undocumented, f"{name}: the constructor's {undocumented} are not documented"
        return
    signature = inspect.signature(inspect.unwrap(obj))
    parameters = _parameters(signature)
    if parameters:
        assert "Parameters" in sections, f"{name}: a function with parameters has a Parameters section"
        undocumented = [p for p in parameters if p not in _entries(sections["Parameters"])]
        assert not undocumented, f"{name}: the parameters {undocumented} are not in its Parameters section"
    if signature.return_annotation not in (None, "None"):
        assert {"Returns", "Yields"} & set(sections), f"{name}: returns a value, so it has Returns or Yields"
