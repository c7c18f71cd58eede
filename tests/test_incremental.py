"""The incremental path gives exactly what a fresh lint gives.

The server lints every version of a document through the chunk cache (``shell.parse.read_chunk``),
the chunk fragments (``shell.parse.chunk_fragment``: a chunk's model placed at its offset), the
chunker's line memo (``shell.chunker._alone``), the secrets' line memo
(``secrets._line_secrets``), and the control facts' chunk trees and walks
(``facts.control.chunk_tree``, ``facts.control.chunk_events``): a chunk or line whose text an
edit left alone is not read again. Here random edit sequences (typed characters, deletions, pastes across
chunk boundaries, here-document openers and closers, ``#SBATCH`` lines, and lines that change
the job-level context later steps are read in: ``set -e``, exports, functions, traps) are
applied to every script the project holds, and at each step the lint through the warm memos is
compared with a lint that reads everything afresh: the findings (code, severity, message,
ranges, related notes, fixes), the secret spans, the control facts and the shell model (every object: words with
their expansions, assignments and the commands they belong to, here-documents, redirections,
nested scripts). The generated corpus
(tests/sbatch_corpus.py) is compared both ways too, and the real corpus when ``CORPUS_DIR``
names a folder of job scripts. The last test drives the real server over stdio with incremental
(range) changes and compares each version's published diagnostics with the engine's; the
last ones check that a started lint of a superseded version is abandoned (its waiters get the
newer result) and that the lint thread collects garbage only between lints.
"""
from __future__ import annotations

import asyncio
import gc
import itertools
import os
import random
import threading
import weakref
import zlib
from contextlib import contextmanager
from pathlib import Path

import pytest
import pytest_lsp
from hypothesis import given, settings
from hypothesis import strategies as st
from lsprotocol import types as t
from lsprotocol.converters import get_converter
from pygls.workspace.position_codec import PositionCodec
from pytest_lsp import LanguageClient

import sbatch_corpus
from lsp_support import CASES, config, initialize, open_doc, publish_for
from rule_pages import sample_scripts
from sbatch_lsp import secrets
from sbatch_lsp.facts import control
from sbatch_lsp.facts.control import job_control
from sbatch_lsp.lint import Superseded, lint
from sbatch_lsp.server import documents
from sbatch_lsp.server.diagnostics import lsp_diagnostics
from sbatch_lsp.server.positions import Positions
from sbatch_lsp.shell import chunker, parse
from sbatch_lsp.shell.model import Command, sort_commands
from test_simple import _key

EDITS_PER_SCRIPT = 6
JSON = get_converter()  # LSP objects as the JSON the wire carries (lists, not tuples)
SNIPPETS = ["x", " ", "$", '"', "'", "\\", "\n", "#", ";", "&", "|", "(", ")", "{", "}", "`",
            "$(", "do", "fi"]
LINE_INSERTS = ["cat <<EOF\n", "cat <<'EOF' > run.sh\n", "EOF\n", "#SBATCH --nodes=2\n",
                "#SBATCH --gpus-per-node=8\n", "#SBATCH --ntasks-per-node=8\n",
                "srun --ntasks-per-node=1 torchrun --nproc-per-node=8 train.py\n",
                "if true; then\n", "fi\n", "export MASTER_PORT=29500\n",
                # edits of the job-level context the facts read at every later step
                "#SBATCH --array=0-3\n", "#SBATCH --ntasks=4\n", "set -e\n", "set -o pipefail\n",
                "set +e\n", "export NCCL_DEBUG=INFO\n", "export -n MASTER_PORT\n", "unset MASTER_ADDR\n",
                "run() { srun --ntasks=2 python train.py; }\n", "run\n",
                "trap 'kill 0' USR1\n", "srun python train.py &\n", "wait\n",
                "source env.sh\n"]


@contextmanager
def fresh_reads():
    """Inside: every chunk and every line's secrets are read afresh (the chunk cache, the
    fragments, the chunker's line memo and the secrets' line memo are bypassed, not cleared, so
    the warm state the incremental lints built survives); the chunker scans every line as it
    did before its memo."""
    cached, lines, alone = parse.read_chunk, secrets._line_secrets, chunker._alone
    trees, events = control.chunk_tree, control.chunk_events
    parse.read_chunk = cached.__wrapped__  # type: ignore[assignment]
    secrets._line_secrets = lines.__wrapped__  # type: ignore[assignment]
    chunker._alone = lambda line: (False, None)  # type: ignore[assignment]
    control.chunk_tree = trees.__wrapped__  # type: ignore[assignment]
    control.chunk_events = lambda _text: None  # type: ignore[assignment]  # walked in place
    fragments = parse.use_fragments(False)
    try:
        yield
    finally:
        parse.read_chunk = cached  # type: ignore[assignment]
        secrets._line_secrets = lines  # type: ignore[assignment]
        chunker._alone = alone  # type: ignore[assignment]
        control.chunk_tree = trees  # type: ignore[assignment]
        control.chunk_events = events  # type: ignore[assignment]
        parse.use_fragments(fragments)


@pytest.fixture(autouse=True)
def fragments():
    """The server's setting: the fragment memo on (shell/fragments.py), as sbatch-lsp runs."""
    before = parse.use_fragments(True)
    yield
    parse.use_fragments(before)


def deep_key(script) -> tuple:
    """Every object of a shell model as comparable data, links between them as positions
    (an assignment's command as the index of that command, a command's script as its kind)."""
    index = {id(c): k for k, c in enumerate(script.walk())}

    def word(w):
        return (w.text, w.start, w.end, w.value, list(w.expansions), list(w.early))

    def assignment(a):
        return (a.name, a.start, a.end, a.exported, a.local, a.append,
                word(a.value) if a.value else None,
                index.get(id(a.command)) if a.command is not None else None)

    def model(s):
        return ([(c.start, c.end, [word(w) for w in c.words],
                  [assignment(a) for a in c.assignments], c.background, c.function,
                  c.in_substitution, c.heredocs, c.runs, c.calls, c.script is s,
                  [(r.op, r.fd, word(r.target), r.start, r.end) for r in c.redirects],
                  [model(n) for n in c.nested]) for c in s.commands],
                [assignment(a) for a in s.assignments], s.heredocs, s.data_spans,
                list(s.functions.items()), s.comments, s.internal_errors, s.bodies, s.kind,
                [(c.start_line, c.end_line, c.start, c.end, c.parser, c.error, c.conditional)
                 for c in s.chunks])
    return model(script)


def control_key(job) -> tuple:
    """The control facts of a Job (facts/control.py) as comparable data: each command's
    (by its index in the model's walk) and the batch shell's lists, commands as indices."""
    ctl = job_control(job)
    cmds = list(job.script.walk())
    index = {id(c): k for k, c in enumerate(cmds)}

    def cmd(c):
        return index.get(id(c)) if c is not None else None

    def pipe(p):
        return (p.start, p.end, p.pipefail, [cmd(c) for c in p.commands]) if p else None

    def wait(w):
        return (cmd(w.command), w.kind, w.pids, w.in_loop, w.start, w.end)

    return ([(ctl.tasks(c), ctl.at(c).background, pipe(ctl.at(c).pipeline), ctl.at(c).in_loop,
              ctl.at(c).in_subshell, ctl.at(c).in_condition, ctl.at(c).statement,
              ctl.at(c).after) for c in cmds],
            [(cmd(b.command), b.start, b.end, b.pid_var, b.in_loop, [wait(w) for w in b.waits])
             for b in ctl.backgrounds], [wait(w) for w in ctl.waits],
            [pipe(p) for p in ctl.pipelines],
            [(cmd(t.command), t.action, t.signals, t.start, t.end, t.batch) for t in ctl.traps],
            ctl.functions, {k: [cmd(c) for c in v] for k, v in ctl.calls.items()}, ctl.last,
            ctl.errexit, ctl.pipefail)


def random_edit(rng: random.Random, text: str) -> str:
    """One edit of the kinds an editor sends while a user types, deletes and pastes."""
    n = len(text)
    at = rng.randint(0, n)
    kind = rng.randrange(4)
    if kind == 0:  # a typed character (or a short token)
        return text[:at] + rng.choice(SNIPPETS) + text[at:]
    if kind == 1 and n:  # a deletion, possibly across lines and chunks
        end = min(n, at + rng.randint(1, 40))
        return text[:at] + text[end:]
    if kind == 2 and n:  # a paste of another part of the text, across chunk boundaries
        a = rng.randint(0, n - 1)
        piece = text[a:a + rng.randint(5, 200)]
        return text[:at] + piece + text[at:]
    starts = [0] + [k + 1 for k, c in enumerate(text) if c == "\n"]
    line = rng.choice(starts)  # a whole line: here-document opener/closer, directive, step
    return text[:line] + rng.choice(LINE_INSERTS) + text[line:]


def same_both_ways(text: str, path: str = "job.sbatch") -> None:
    """Lint ``text`` through the warm cache and afresh; the findings and models must agree."""
    warm = lint(text, path)
    warm_model = parse.parse_script(text)
    with fresh_reads():
        fresh = lint(text, path)
        fresh_model = parse.parse_script(text)
    assert warm.diagnostics == fresh.diagnostics
    assert warm.secrets == fresh.secrets
    if warm.job is not None:
        assert fresh.job is not None
        with fresh_reads():
            fresh_control = control_key(fresh.job)
        assert control_key(warm.job) == fresh_control
    assert _key(warm_model) == _key(fresh_model)
    assert deep_key(warm_model) == deep_key(fresh_model)
    assert [(c.start, c.end, c.parser, c.error) for c in warm_model.chunks] == \
        [(c.start, c.end, c.parser, c.error) for c in fresh_model.chunks]


def test_the_cache_is_hit_and_bypassed_as_the_comparison_assumes():
    # the wandb line passes the secrets prefilter, so its line memo is asked
    text = ("#!/bin/bash\n#SBATCH --nodes=2\nexport WANDB_MODE=offline  # wandb\n"
            "for i in 1 2; do\n  srun hostname\ndone\n")
    lint(text)
    read, placed = parse.read_chunk.cache_info(), parse.chunk_fragment.cache_info()
    lint(text)
    assert parse.read_chunk.cache_info() == read  # every chunk's model came from its fragment
    assert parse.chunk_fragment.cache_info().hits > placed.hits
    placed, lines = parse.chunk_fragment.cache_info(), secrets._line_secrets.cache_info()
    with fresh_reads():
        lint(text)
    assert parse.chunk_fragment.cache_info() == placed  # bypassed: read in place
    assert parse.read_chunk.cache_info() == read  # bypassed too: read afresh
    assert secrets._line_secrets.cache_info() == lines
    lint(text)
    assert secrets._line_secrets.cache_info().hits > lines.hits
    assert parse.chunk_fragment.cache_info().hits > placed.hits


def test_the_chunk_tree_memo_is_hit_and_keyed_by_the_chunks_text():
    """facts/control.py reads the tree of each top-level chunk it walks in place (here a guard
    on an alias of a task id, which the model's assignments resolve) through the chunk tree
    memo: a lint of an unchanged text parses nothing, and an edit inside the guard (the same
    chunk at the same place, another text) gives the control facts of a fresh read."""
    text = ("#!/bin/bash\n#SBATCH --nodes=2\nexport RANK=$SLURM_PROCID\n"
            'if [ "$RANK" -eq 0 ]; then\n  srun hostname\nfi\nsrun python x.py &\nwait\n')
    lint(text)
    trees = control.chunk_tree.cache_info()
    lint(text)
    assert control.chunk_tree.cache_info().misses == trees.misses
    assert control.chunk_tree.cache_info().hits > trees.hits
    for edited in (text.replace("-eq 0", "-eq 1"), text.replace("-eq 0", "-ne 0"),
                   text.replace("&\nwait", "\nwait"), text.replace("=$SLURM_PROCID", "=0")):
        same_both_ways(edited)


def test_a_placed_fragment_shares_no_mutable_object_with_the_memo():
    """Fragment.place copies commands and words field by field (shell/fragments.py): every
    list, dict or set a placed object holds is its own (the build and the facts mutate them),
    whatever fields the model's classes gain."""
    from sbatch_lsp.shell.fragments import Fragment
    from sbatch_lsp.shell.model import Script

    text = ('X=1 srun --export=ALL "$A" ${B:-x} > out.log 2>&1 <<EOF\nbody $C\nEOF\n')
    fragment = parse.chunk_fragment.__wrapped__(text)
    assert isinstance(fragment, Fragment)
    script = Script()
    fragment.place(script, weakref.ref(script), 10, 0)
    pairs = list(zip(fragment.commands, script.commands, strict=True))
    pairs += [(a, b) for c, d in pairs for a, b in zip(c.words, d.words, strict=True)]
    commands = pairs[:len(fragment.commands)]
    pairs += [(a.target, b.target) for c, d in commands
              for a, b in zip(c.redirects, d.redirects, strict=True)]
    assignments = [(a, b) for c, d in commands
                   for a, b in zip(c.assignments, d.assignments, strict=True)]
    assert assignments and all(b.command is d for c, d in commands for b in d.assignments)
    pairs += assignments + [(a.value, b.value) for a, b in assignments]
    assert len(pairs) > 5
    for old, new in pairs:
        assert old is not new
        for name, value in vars(new).items():
            if isinstance(value, (list, dict, set)):  # (``Command.inert``: the placed words)
                assert value is not vars(old).get(name), name
        assert new.start == old.start + 10


def test_the_chunk_events_memo_is_hit_and_keyed_by_the_chunks_text():
    """facts/control.py replays each top-level chunk's recorded walk (chunk_events) at the
    chunk's place: a lint of an unchanged text walks nothing, and edits that keep a chunk's
    place but change its text (a guard, a background job, a pipeline, a saved ``$!``, a
    ``set``) give the control facts of a walk in place."""
    text = ("#!/bin/bash\n#SBATCH --nodes=2\nset -o pipefail\n"
            'if [ "$SLURM_PROCID" -eq 0 ]; then\n  srun hostname | tee log\nfi\n'
            "srun python x.py &\npid=$!\nwait $pid\ntrap 'kill 0' USR1\n")
    lint(text)
    recorded = control.chunk_events.cache_info()
    lint(text)
    assert control.chunk_events.cache_info().misses == recorded.misses
    for edited in (text.replace("-eq 0", "-eq 1"), text.replace("| tee", "; tee"),
                   text.replace("&\npid", "\npid"), text.replace("pid=$!", "pid=$$"),
                   text.replace("-o pipefail", "+o pipefail"), text.replace("USR1", "TERM")):
        same_both_ways(edited)


def replayed_and_walked(text: str) -> tuple[tuple, tuple] | None:
    """The control facts (:func:`control_key`) of ``text``'s job with each chunk replayed
    from its recording, and with every chunk walked in place (chunk_events bypassed); None
    when the text makes no job."""
    job = lint(text, "job.sbatch").job
    if job is None:
        return None
    replayed = control_key(job)
    job._derived.pop(control._of_job)
    events = control.chunk_events
    control.chunk_events = lambda _text: None  # type: ignore[assignment]
    try:
        walked = control_key(job)
    finally:
        control.chunk_events = events  # type: ignore[assignment]
    return replayed, walked


def test_a_replayed_walk_is_the_walk_in_place_for_every_script():
    """The control facts of every script the project holds, each chunk replayed from its
    recording, equal those of every chunk walked in place (chunk_events bypassed)."""
    for param in sample_scripts():
        both = replayed_and_walked(param.values[0])
        assert both is None or both[0] == both[1], param.id


@pytest.mark.parametrize("run", ["srun bash run.sh", "exec bash run.sh", "bash run.sh",
                                 "source run.sh", "cat run.sh"])
@pytest.mark.parametrize("quote", ["'EOF'", "EOF"])
def test_here_document_chunks_are_recorded_and_replayed_as_walked(run, quote):
    """A chunk holding a here-document is recorded like any other (the body's span: whether
    the script runs the body, and where, the whole model says when the recording is
    replayed), and its replay gives the facts of the walk in place: the guards, background
    jobs, waits and last statement read in a body the script runs."""
    text = ("#!/bin/bash\n#SBATCH --nodes=2\nset -e\n"
            f"cat > run.sh <<{quote}\nif [ \"$SLURM_PROCID\" -eq 0 ]; then\n"
            "  srun hostname | tee log &\nfi\nwait\ntrap 'kill 0' TERM\nEOF\n"
            f"echo written\n{run}\n")
    chunks = [text[c.start:c.end] for c in parse.parse_script(text).chunks]
    assert all(control.chunk_events(c) is not None for c in chunks if "<<" in c)
    both = replayed_and_walked(text)
    assert both is not None and both[0] == both[1]


@pytest.mark.parametrize("text", sample_scripts())
def test_random_edits_give_the_findings_of_a_fresh_lint(text):
    rng = random.Random(zlib.crc32(text.encode()))
    same_both_ways(text)
    for _ in range(EDITS_PER_SCRIPT):
        text = random_edit(rng, text)
        same_both_ways(text)


def test_generated_corpus_both_ways():
    for name, data in sbatch_corpus.cases():
        same_both_ways(data.decode("utf-8", "replace"), f"{name}.sbatch")


def test_real_corpus_both_ways():
    """Off unless CORPUS_DIR names a folder of real job scripts (never committed)."""
    folder = os.environ.get("CORPUS_DIR")
    if not folder:
        return
    for path in sorted(Path(folder).iterdir()):
        if path.is_file() and not path.name.startswith((".", "_")):
            same_both_ways(path.read_bytes().decode("utf-8", "replace"), str(path))


# ---- the server, over stdio -------------------------------------------------------------

@pytest_lsp.fixture(config=config())
async def client(lsp_client: LanguageClient, tmp_path):
    lsp_client.root = tmp_path
    await initialize(lsp_client, "visual-studio-code", tmp_path)
    yield
    await lsp_client.shutdown_session()


def _position(text: str, offset: int) -> t.Position:
    """An LSP position (UTF-16 columns) of a code-point offset."""
    line = text.count("\n", 0, offset)
    start = text.rfind("\n", 0, offset) + 1
    return t.Position(line, len(text[start:offset].encode("utf-16-le")) // 2)


async def test_server_incremental_edits_publish_a_fresh_lints_diagnostics(client):
    text = (CASES / "F001.sbatch").read_text()
    path = client.root / "typed.sbatch"
    uri = path.as_uri()
    open_doc(client, uri, text)
    await publish_for(client, uri, 1)
    rng = random.Random(11)
    codec = PositionCodec(t.PositionEncodingKind.Utf16)
    for version in range(2, 26):
        edited = random_edit(rng, text)
        # the one range change that turns ``text`` into ``edited``
        a = 0
        while a < min(len(text), len(edited)) and text[a] == edited[a]:
            a += 1
        b = 0
        while b < min(len(text), len(edited)) - a and text[-1 - b] == edited[-1 - b]:
            b += 1
        change = t.TextDocumentContentChangePartial(
            range=t.Range(_position(text, a), _position(text, len(text) - b)),
            text=edited[a:len(edited) - b])
        client.text_document_did_change(t.DidChangeTextDocumentParams(
            text_document=t.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[change]))
        text = edited
        pub = await publish_for(client, uri, version)
        with fresh_reads():
            result = lint(text, str(path))
        engine = lsp_diagnostics(result, uri, Positions(result.source, codec))
        assert JSON.unstructure(list(pub.diagnostics)) == JSON.unstructure(engine)


# ---- cancellation: a started lint for a superseded version is abandoned --------------------

def test_lint_stops_when_superseded_and_is_unchanged_when_not():
    text = (CASES / "F001.sbatch").read_text()
    asked = []

    def after(k):  # superseded from the k-th question on
        return lambda: asked.append(1) or len(asked) >= k

    with pytest.raises(Superseded):
        lint(text, "job.sbatch", superseded=after(1))
    asked.clear()
    with pytest.raises(Superseded):
        lint(text, "job.sbatch", superseded=after(5))  # after some rules ran
    assert len(asked) == 5
    asked.clear()
    kept = lint(text, "job.sbatch", superseded=lambda: asked.append(1) or False)
    assert len(asked) > 40  # asked before each rule
    assert kept.diagnostics == lint(text, "job.sbatch").diagnostics


@pytest.fixture
def own_gc():
    """The server's lint thread turns automatic collection off and freezes what it finds
    alive (its own process); here it runs in the test's process: restore the defaults after."""
    before = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*before)


class _Doc:
    """What Documents reads of a pygls document."""

    def __init__(self, text: str, version: int):
        self.source, self.version, self.path = text, version, "/tmp/job.sbatch"
        self.position_codec = PositionCodec(t.PositionEncodingKind.Utf16)


class _Server:
    def __init__(self):
        self.docs: dict[str, _Doc] = {}
        self.workspace = self

    def get_text_document(self, uri: str) -> _Doc:
        return self.docs[uri]


async def test_a_started_lint_is_abandoned_and_its_waiters_get_the_newer_result(monkeypatch,
                                                                             own_gc):
    """Version 1's lint starts, version 2 arrives: the lint of 1 stops at its next check (it
    raises Superseded inside the thread, nothing is published for it) and whoever awaited 1
    receives 2's result, equal to a fresh lint of 2."""
    started, newer = threading.Event(), threading.Event()
    outcomes: list[tuple[str, int]] = []
    real = documents.lint

    def spy(text, path, config, superseded):
        first = not outcomes and not started.is_set()
        if first:
            started.set()
            assert newer.wait(30)  # version 2 was submitted while this lint runs
        try:
            result = real(text, path, config, superseded)
        except Superseded:
            outcomes.append(("superseded", 1 if first else 2))
            raise
        outcomes.append(("done", 1 if first else 2))
        return result

    monkeypatch.setattr(documents, "lint", spy)
    server, uri = _Server(), "file:///tmp/job.sbatch"
    docs = documents.Documents(server)
    one = (CASES / "F001.sbatch").read_text()
    two = one + "srun --ntasks-per-node=1 torchrun --nproc-per-node=8 train.py\n"
    server.docs[uri] = _Doc(one, 1)
    first = docs.current(uri)
    assert await asyncio.to_thread(started.wait, 30)
    server.docs[uri] = _Doc(two, 2)
    second = docs.current(uri)
    newer.set()
    got_first, got_second = await asyncio.wait_for(asyncio.gather(first, second), 60)
    assert outcomes == [("superseded", 1), ("done", 2)]
    assert got_first is got_second and got_second.version == 2
    assert got_second.result.diagnostics == lint(two, "/tmp/job.sbatch").diagnostics


async def test_a_closed_documents_pending_lint_is_cancelled(own_gc):
    server, uri = _Server(), "file:///tmp/job.sbatch"
    server.docs[uri] = _Doc((CASES / "F001.sbatch").read_text(), 1)
    docs = documents.Documents(server)
    pending = docs.current(uri)
    docs.forget(uri)
    with pytest.raises(asyncio.CancelledError):
        await pending


class _Collections:
    """The collections the worker's thread runs (their generations), while in a ``with``."""

    def __init__(self, worker: documents.Worker):
        self.worker, self.generations = worker, []

    def _seen(self, phase, info) -> None:
        if phase == "stop" and threading.current_thread() is self.worker.thread:
            self.generations.append(info["generation"])

    def __enter__(self):
        gc.callbacks.append(self._seen)
        return self

    def __exit__(self, *exc) -> None:
        gc.callbacks.remove(self._seen)


def _counting_sweeps(worker: documents.Worker) -> list[int]:
    """A list that grows by one at each of ``worker``'s sweeps."""
    sweeps: list[int] = []
    sweep = worker._sweep

    def counted(idle: bool = False) -> None:
        sweep(idle)
        sweeps.append(1)

    worker._sweep = counted  # type: ignore[method-assign]
    return sweeps


async def _idle(sweeps: list[int]) -> None:
    """Until the worker, idle, has swept once more (at most 30 s: a loaded machine)."""
    before = len(sweeps)
    for _ in range(300):
        await asyncio.sleep(documents.IDLE_COLLECT / 2)
        if len(sweeps) > before:
            return
    raise AssertionError("the idle worker never swept")


async def test_the_lint_thread_collects_only_when_the_objects_grew_never_inside_a_job(own_gc):
    """The server's lint thread (own_gc) turns automatic collection off and sweeps itself: once
    idle it freezes what the jobs made (no collection walks it), and runs a full collection only
    when the tracked objects grew by a quarter of what the last full collection kept
    (server/documents.py's docstring)."""
    worker = documents.Worker(asyncio.get_running_loop(), own_gc=True)
    sweeps = _counting_sweeps(worker)
    with _Collections(worker) as seen:
        kept = await worker.submit(lambda: [[] for _ in range(1000)]).future
        assert await worker.submit(gc.get_threshold).future == (documents.NEVER,) * 3
        await _idle(sweeps)
        assert seen.generations == []  # nothing collected: frozen
        assert gc.get_freeze_count() >= len(kept)
        worker.made = documents.COLLECT_FLOOR + 1  # as if documents had been opened
        await worker.submit(lambda: [[] for _ in range(1000)]).future
        await _idle(sweeps)
        assert seen.generations == [2]  # a full collection, at the pause
        assert worker.made == 0 and worker.survivors > 0


async def test_a_due_full_collection_waits_for_a_pause(own_gc):
    """A full collection that is due never runs in the sweep after a publish (the next
    keystroke's lint would wait behind it): the thread runs it once idle."""
    worker = documents.Worker(asyncio.get_running_loop(), own_gc=True)
    sweeps = _counting_sweeps(worker)
    with _Collections(worker) as seen:
        await worker.submit(lambda: [[] for _ in range(1000)]).future
        worker.made = documents.COLLECT_FLOOR + 1  # as if a long script had been opened
        worker.sweep_soon()  # after its publish
        await worker.submit(lambda: None).future  # the next keystroke's lint
        assert len(sweeps) == 1 and seen.generations == []
        await _idle(sweeps)
        assert seen.generations == [2] and worker.made == 0


async def test_the_lint_thread_ends_once_the_loop_is_closed():
    """A job that finishes after the event loop closed (the server shut down) ends the thread
    quietly instead of raising "Event loop is closed" in it."""
    loop = asyncio.new_event_loop()
    worker = documents.Worker(loop)
    release = threading.Event()
    worker.submit(release.wait, 30)
    loop.close()
    errors: list = []
    hook, threading.excepthook = threading.excepthook, errors.append
    try:
        release.set()
        await asyncio.to_thread(worker.thread.join, 30)
    finally:
        threading.excepthook = hook
    assert not worker.thread.is_alive() and errors == []


async def test_typing_in_a_long_script_makes_no_full_collection(own_gc):
    """Each version's lint makes as many objects as the one it replaces frees: the server
    retires the old lint and, after its publish, asks for a sweep (Documents.sent) — over many
    edits the growth stays flat and no full collection runs (freeing the replaced lint after
    the count was read counted every lint whole: a full collection after nearly every edit)."""
    worker = documents.Worker(asyncio.get_running_loop(), own_gc=True)
    big = documents.COLLECT_FLOOR // 2

    def a_lint() -> list:
        return [[] for _ in range(big)]

    with _Collections(worker) as seen:
        last = await worker.submit(a_lint).future
        for _ in range(12):
            new = await worker.submit(a_lint).future
            worker.retire(last)  # Documents._keep
            last = new
            del new
            worker.sweep_soon()  # after the publish
        await worker.submit(lambda: None).future
        assert seen.generations == []
        assert worker.made < big * 1.1  # the first lint's objects, alive: growth of one lint


async def test_the_replaced_lint_is_freed_after_the_newer_one_is_published(own_gc):
    """The lint a newer version replaces outlives the newer one's waiters (the publish runs
    first), and is freed on the lint thread once the server says it has sent the newer one."""
    server, uri = _Server(), "file:///tmp/job.sbatch"
    docs = documents.Documents(server)
    text = (CASES / "F001.sbatch").read_text()
    server.docs[uri] = _Doc(text, 1)
    old = weakref.ref(await docs.current(uri))
    server.docs[uri] = _Doc(text + "echo\n", 2)
    new = await docs.current(uri)
    assert new.version == 2 and old() is not None  # not freed before the publish
    docs.sent()
    await docs._lint_thread().submit(lambda: None).future
    assert old() is None
    last = weakref.ref(new)
    del new
    docs.forget(uri)  # closed: its last lint is freed too
    for _ in range(300):
        if last() is None:
            break
        await asyncio.sleep(0.1)
    assert last() is None


def test_a_fragment_placed_again_at_its_offset_shares_only_what_nothing_changes():
    """Placed twice at one offset (the chunks before an edit), a fragment's words, redirections
    and here-documents are the first placement's objects, and its commands and assignments
    new (the build and the facts change them: nested scripts, a call's words, the script);
    placed at another offset (a chunk an edit moved) every object is new."""
    from sbatch_lsp.shell.model import Script

    text = 'X=1 srun --export=ALL "$A" ${B:-x} > out.log 2>&1 <<EOF\nbody $C\nEOF\n'
    fragment = parse.chunk_fragment.__wrapped__(text)
    assert fragment is not None
    placed = []
    for base in (10, 10, 11):
        script = Script()
        fragment.place(script, weakref.ref(script), base, 0)
        placed.append(script)
    first, again, moved = (s.commands[0] for s in placed)
    assert again is not first and again.assignments[0] is not first.assignments[0]
    assert again.assignments[0].command is again and again.script is placed[1]
    assert again.nested is not first.nested
    assert again.words is first.words and again.words[1] is first.words[1]
    assert again.redirects is first.redirects and again.heredocs[0] is first.heredocs[0]
    assert placed[1].heredocs[0] is again.heredocs[0]
    for old, new in zip(first.words + [first.assignments[0].value],
                        moved.words + [moved.assignments[0].value], strict=True):
        assert new is not old and new.start == old.start + 1
        assert [e.start for e in new.expansions] == [e.start + 1 for e in old.expansions]
    assert moved.heredocs[0].start == first.heredocs[0].start + 1
    assert moved.redirects[0].target.start == first.redirects[0].target.start + 1
    # the chunk too: the first placement's at one offset and line, else a new one
    assert placed[1].chunks[0] is placed[0].chunks[0]
    assert [(c.start, c.end, c.start_line, c.end_line) for s in placed for c in s.chunks] == \
        [(10, 10 + len(text), 0, 3), (10, 10 + len(text), 0, 3), (11, 11 + len(text), 0, 3)]
    script = Script()
    fragment.place(script, weakref.ref(script), 11, 5)  # one offset, another line
    assert (script.chunks[0].start, script.chunks[0].start_line, script.chunks[0].end_line) == \
        (11, 5, 8)
    assert script.commands[0].words[0] is not moved.words[0]


@pytest.mark.parametrize("edit", [
    ('CMD="srun python a.py"', 'CMD="srun --nodes=1 python b.py"'),  # a value a later chunk reads
    ("#SBATCH --nodes=2\n", "#SBATCH --nodes=2\n\n\n"),  # later chunks move down two lines
    ("run() {", "run2() {"),  # the function the later call names is gone
    ("export NCCL", "NCCL"),  # no longer exported to the child shell
    ("x", ""),  # a character less before the last chunks
])
def test_edits_that_change_what_unchanged_chunks_read_or_where_they_sit(edit):
    """Chunks an edit leaves alone are placed from the memo with the previous version's words
    where they did not move; what they read from the rest of the script (a value split into a
    step, a function's body, an export a child shell inherits) and where they sit must still
    be this version's: each edit and its undo give the findings and model of a fresh read."""
    text = ("#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=1\nx=1\n"
            'CMD="srun python a.py"\nexport NCCL_DEBUG=INFO\n'
            'run() { srun --ntasks=2 python train.py "$@"; }\n'
            "$CMD --epochs 3\nrun --lr 1\nrun --lr 2\n"
            "srun bash -c 'echo $NCCL_DEBUG; torchrun --nnodes=2 train.py' > out.log\n")
    same_both_ways(text)
    old, new = edit
    assert old in text
    edited = text.replace(old, new, 1)
    same_both_ways(edited)
    same_both_ways(text)
    same_both_ways(edited)


def _chunks(scanned) -> tuple:
    chunks, comments = scanned
    return [(c.start, c.end, c.text, c.unterminated) for c in chunks], comments


def test_a_rescan_gives_the_scan_and_keeps_the_chunks_outside_the_edit():
    """chunker.rescan re-scans from the chunk an edit touches to where the chunking meets the
    previous text's again: each version's chunks and comments are those of a scan afresh, with
    the chunks before the edit the previous call's objects. The edits open and close a
    here-document and a compound command (the chunks after them change), add and remove lines
    (the chunks after them move), and leave a here-document open at the end of the text (an
    unterminated chunk that lines added after it close). The chunks after an edit that added
    or removed no line are the previous call's too (none moved)."""
    head = "#!/bin/bash\n#SBATCH --nodes=2\n# setup\nexport A=1  # a\n"
    tail = "srun hostname\nfor i in 1 2; do\n  echo $i  # loop\ndone\necho end\n"
    versions = [head + "x=1\n" + tail,
                head + "x=12\n" + tail,  # a character typed
                head + "cat <<EOF\nx=12\n" + tail,  # a here-document opened: all of it a body
                head + "cat <<EOF\nx=12\nEOF\n" + tail,  # and closed
                head + "if true; then\nx=12\n" + tail,  # a compound command left open
                head + "if true; then\nx=12\nfi\n\n\n" + tail,  # closed, blank lines added
                head + tail,  # lines removed
                head + tail + "cat <<EOF\nbody",  # a here-document open at the end
                head + tail + "cat <<EOF\nbody\nEOF\necho after\n",  # closed by lines added
                "# comment\n" + head + tail]  # a line added before everything
    chunker.rescan(versions[0])
    for before, text in itertools.pairwise(versions):
        previous = chunker.rescan(before)[0]
        got = chunker.rescan(text)
        assert _chunks(got) == _chunks(chunker.scan(text)), text
        shared = [c for c in got[0] if any(c is p for p in previous)]
        line = text.count("\n", 0, len(os.path.commonprefix([before, text])))
        kept = len([c for c in got[0] if c.end <= line and not c.unterminated])
        assert shared[:kept] == got[0][:kept]
        after = shared[kept:]  # and those after the edit when it added or removed no line
        assert after == (got[0][len(got[0]) - len(after):] if after else [])
        if text.count("\n") != before.count("\n"):
            assert not after
        elif text == versions[1]:  # (a typed character: the chunks after it are kept too)
            assert after


def test_a_rescan_after_a_typed_character_reads_only_its_line(monkeypatch):
    """A character typed in a one-line chunk: the rescan reads that line and stops at the next,
    the rest are the previous text's chunks, moved by no line."""
    text = "#!/bin/bash\n" + "".join(f"echo {k}\nsrun step {k}\n" for k in range(50))
    chunker.rescan(text)
    read = []
    alone = chunker._alone
    monkeypatch.setattr(chunker, "_alone", lambda line: read.append(line) or alone(line))
    edited = text.replace("echo 25\n", "echo 25x\n")
    assert _chunks(chunker.rescan(edited)) == _chunks(chunker.scan(edited))
    assert read[:1] == ["echo 25x"] and len(read) == 1 + 100  # (then the scan afresh: all)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 3)), max_size=12),
       st.booleans())
def test_sort_commands_is_the_key_sort_of_the_spans(spans, presorted):
    """model.sort_commands (a check of the starts, then the key sort only when out of order)
    orders commands as the reference key sort does: by start, the longer first at one start,
    equal spans in the order given (compared by identity)."""
    if presorted:  # (the common case: already in order, the sort skipped)
        spans = sorted(spans, key=lambda s: (s[0], -s[1]))
    commands = [Command([], [], s, s + n) for s, n in spans]
    reference = sorted(commands, key=lambda c: (c.start, -c.end))
    sort_commands(commands)
    assert [id(c) for c in commands] == [id(c) for c in reference]


def test_the_masker_memo_masks_as_a_fresh_test_along_edits(monkeypatch):
    """secrets.carries_format (the masker's token-format test, memoised by the text) along
    random edits: the findings as shown (masked) equal those of a lint that tests every text
    afresh with find_secrets (end to end; tests/test_step_fastpaths.py compares the memo with
    find_secrets on texts made to carry token formats)."""
    gh = "ghp_" + "a1B2" * 9
    own = (f"#!/bin/bash\n#SBATCH -N 2\nexport GH_TOKEN={gh}\nset -x\nsrun tool --token {gh} "
           "$GH_TOKEN\n")
    texts = [p.values[0] for p in sample_scripts()[::40]] + [own]
    rng = random.Random(5)
    for text in texts:
        for _ in range(4):
            text = random_edit(rng, text)
            warm = lint(text, "job.sbatch")
            with monkeypatch.context() as m:
                m.setattr(secrets, "carries_format", lambda s: bool(secrets.find_secrets(s)))
                fresh = lint(text, "job.sbatch")
            assert warm.diagnostics == fresh.diagnostics


@pytest.mark.parametrize("text", [p for p in sample_scripts() if "srun" in p.values[0]])
def test_random_edits_give_the_steps_and_findings_of_a_lint_without_the_step_shapes_memo(text):
    """The step shapes memo (``job._SHAPES``: an srun command's options and layout, kept by its
    words' texts and the job's counts) along random edits: the lint with it gives the steps
    and findings of a lint with it off (tests/test_step_shapes.py compares the steps alone)."""
    from test_step_shapes import step_key

    rng = random.Random(zlib.crc32(text.encode()))
    for _ in range(EDITS_PER_SCRIPT):
        warm = lint(text, "job.sbatch")
        parse.use_fragments(False)  # (the memo follows it; the fixture turns it on again)
        fresh = lint(text, "job.sbatch")
        parse.use_fragments(True)
        assert warm.diagnostics == fresh.diagnostics
        if warm.job is not None:
            assert fresh.job is not None
            assert [step_key(s) for s in warm.job.steps] == [step_key(s) for s in fresh.job.steps]
        text = random_edit(rng, text)
