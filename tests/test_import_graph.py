"""No import cycle in the package, and the layers import in one direction (DESIGN.md "Shape":
text → readers → facts → rules → faces).

The graph is grimp's static one: every ``import`` in a module counts, at module level or inside
a function (a deferred import is still a dependency), except those under ``TYPE_CHECKING``.
Importing ``sbatch_lsp.rules`` imports every module of that package (the registry loads them
by name), so those edges are added; a module importing its own package's ``__init__`` (a rule
module importing ``rule`` from the registry) is how a package initialises, not a cycle."""
from __future__ import annotations

import importlib
import pkgutil

import grimp
import pytest

PACKAGE = "sbatch_lsp"


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    g = grimp.build_graph(PACKAGE, cache_dir=None, exclude_type_checking_imports=True)
    rules = importlib.import_module(f"{PACKAGE}.rules")
    for m in pkgutil.iter_modules(rules.__path__):
        g.add_import(importer=rules.__name__, imported=f"{rules.__name__}.{m.name}")
    for m in list(g.modules):
        for parent in g.find_modules_directly_imported_by(m):
            if m.startswith(parent + "."):
                g.remove_import(importer=m, imported=parent)
    return g


def cycles(g: grimp.ImportGraph) -> list[tuple[str, ...]]:
    """One cycle through each import that closes one (``a -> b -> … -> a``), deduplicated."""
    seen: set[frozenset[str]] = set()
    out = []
    for a in sorted(g.modules):
        for b in sorted(g.find_modules_directly_imported_by(a)):
            back = g.find_shortest_chain(importer=b, imported=a)
            if back and frozenset(back) not in seen:
                seen.add(frozenset(back))
                out.append((a, *back))
    return out


def test_no_import_cycle(graph):
    found = [" -> ".join(c) for c in cycles(graph)]
    assert not found, "import cycles:\n" + "\n".join(found)


def test_the_cycle_finder_finds_a_cycle(graph):
    graph.add_import(importer=f"{PACKAGE}.source", imported=f"{PACKAGE}.lint")
    try:
        assert any(c[0] == f"{PACKAGE}.lint" or f"{PACKAGE}.source" in c for c in cycles(graph))
    finally:
        graph.remove_import(importer=f"{PACKAGE}.source", imported=f"{PACKAGE}.lint")


#: the faces: what runs the engine (``facts.show`` is the ``sbatch-lint show`` face)
FACES = ("lint", "fixer", "convert", "cli", "server", "output", "cache", "triage", "facts.show",
         "catalogue", "gitlab")


def _under(g: grimp.ImportGraph, name: str) -> list[str]:
    """``sbatch_lsp.<name>`` and every module below it (``shell`` has no ``__init__``)."""
    full = f"{PACKAGE}.{name}"
    return sorted(m for m in g.modules if m == full or m.startswith(full + "."))


@pytest.mark.parametrize("lower", ["rules", "facts", "srun_native", "job", "launchers", "shell",
                                   "directives", "config", "suppressions", "secrets"])
def test_engine_layers_never_reach_a_face(graph, lower):
    """The engine below ``lint`` never imports the linter, the fixer, the converter or a face."""
    faces = [m for f in FACES for m in _under(graph, f)]
    for m in _under(graph, lower):
        if m in faces:
            continue
        for face in faces:
            chain = graph.find_shortest_chain(importer=m, imported=face)
            assert chain is None, f"{m} reaches the face {face}: {' -> '.join(chain)}"
