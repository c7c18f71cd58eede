"""The shell model as comparable data, for tests that check two readers give the same model."""
import os
from collections.abc import Iterator
from pathlib import Path

from sbatch_lsp.shell.model import Script
from sbatch_lsp.source import BinaryInputError, decode


def real_corpus() -> Iterator[tuple[str, str]]:
    """(file name, text) of each job script in the folder ``CORPUS_DIR`` names (a real corpus,
    never committed), in name order; nothing when it is unset."""
    folder = os.environ.get("CORPUS_DIR")
    if not folder:
        return
    for path in sorted(Path(folder).iterdir()):
        if not path.is_file() or path.name.startswith(("_", ".")):
            continue
        try:
            yield path.name, decode(path.read_bytes())
        except BinaryInputError:
            continue


def model_key(script: Script) -> tuple:
    """Everything the parser records about commands (redirections and here-documents
    included), assignments, data spans and functions, in order, as comparable tuples (words by span and literal value)."""
    def word(w):
        return (w.start, w.end, w.value)

    def assignment(a):
        return (a.name, a.start, a.end, a.exported, a.local, a.append,
                word(a.value) if a.value else None)

    def heredoc(h):
        return (h.start, h.end, h.quoted, h.text)

    commands = [(c.start, c.end, [word(w) for w in c.words],
                 [assignment(a) for a in c.assignments], c.background, c.function,
                 c.in_substitution, [heredoc(h) for h in c.heredocs],
                 [(r.op, r.fd, word(r.target), r.start, r.end) for r in c.redirects])
                for c in script.commands]
    return (commands, [assignment(a) for a in script.assignments], script.data_spans,
            sorted(script.functions.items()), [heredoc(h) for h in script.heredocs])
