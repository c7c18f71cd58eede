"""Code actions from the server's own lint of the current version (never from the client's
possibly partial ``context.diagnostics``): each fix as a quick fix (safe ones preferred),
"disable SBxxx for this line / for this file", ``source.fixAll.sbatch-lint`` (safe fixes
only, as ``sbatch-lint --fix``) and the srun-native conversion as ``refactor.rewrite``."""
from __future__ import annotations

import difflib
import re

from lsprotocol import types as t

from .. import suppressions as suppress
from ..convert import convert_srun_native
from ..diagnostics import Diagnostic, Edit
from ..fixer import fix_text
from .documents import Linted

FIX_ALL = "source.fixAll.sbatch-lint"
KINDS = [t.CodeActionKind.QuickFix, FIX_ALL, t.CodeActionKind.RefactorRewrite]


def wanted(kind: str, only: list[str] | None) -> bool:
    """Whether the client asked for actions of ``kind`` (``only`` lists kinds or their parents)."""
    return only is None or any(kind == o or kind.startswith(o + ".") for o in only)


def workspace_edit(linted: Linted, edits: list[Edit], versioned: bool) -> t.WorkspaceEdit:
    """Edits (offsets into the linted text) as a WorkspaceEdit; ``versioned`` ties them to the
    linted version so a client drops them once the document moved on."""
    pos = linted.positions
    text_edits = [t.TextEdit(range=pos.range(e.start, e.end), new_text=e.new_text) for e in edits]
    if versioned and linted.version is not None:
        return t.WorkspaceEdit(document_changes=[t.TextDocumentEdit(
            text_document=t.OptionalVersionedTextDocumentIdentifier(uri=linted.uri,
                                                                    version=linted.version),
            edits=text_edits)])
    return t.WorkspaceEdit(changes={linted.uri: text_edits})


def quick_fixes(linted: Linted, start: int, end: int, versioned: bool) -> list[t.CodeAction]:
    """Quick fixes and suppressions for the findings whose range touches [start, end]."""
    out = []
    for d, lsp in zip(linted.result.diagnostics, linted.diagnostics, strict=True):
        if d.end < start or d.start > end:
            continue
        preferred = True
        for fix in d.fixes:
            title = fix.message if fix.safe else f"{fix.message} (unsafe fix)"
            out.append(t.CodeAction(
                title=title, kind=t.CodeActionKind.QuickFix, diagnostics=[lsp],
                is_preferred=fix.safe and preferred or None,
                edit=workspace_edit(linted, list(fix.edits), versioned)))
            preferred = preferred and not fix.safe
        for title, edit in suppressions(linted, d):
            out.append(t.CodeAction(title=title, kind=t.CodeActionKind.QuickFix, diagnostics=[lsp],
                                    edit=workspace_edit(linted, [edit], versioned)))
    return out


def suppressions(linted: Linted, d: Diagnostic) -> list[tuple[str, Edit]]:
    """("Disable SBxxx for this line", edit) and the same for the file, as
    :mod:`sbatch_lsp.suppressions` writes them (above the top-level command that holds the
    finding, or merged into a suppression comment already there)."""
    src = linted.result.source
    script = linted.result.job.script if linted.result.job is not None else None
    out = []
    line = suppress.add_line_edit(src, script, src.line_of(d.start), [d.code])
    if line is not None:
        out.append((f"Disable {d.code} for this line", line))
    whole = suppress.add_file_edit(src, script, [d.code])
    if whole is not None:
        out.append((f"Disable {d.code} for this file", whole))
    return out


def fix_all(linted: Linted, versioned: bool) -> t.CodeAction | None:
    """``source.fixAll.sbatch-lint``: what ``sbatch-lint --fix`` would write, as line-level edits
    (unchanged lines are never re-sent, so no secret on them travels back); None when no safe
    fix applies."""
    if not any(f.safe for d in linted.result.diagnostics for f in d.fixes):
        return None
    outcome = fix_text(linted.text, linted.result.source.path, linted.config)
    if outcome.text == linted.text:
        return None
    src = linted.result.source
    old, new = _lines(linted.text), _lines(outcome.text)
    edits = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        start = src.line_starts[i1] if i1 < len(old) else len(linted.text)
        end = src.line_starts[i2] if i2 < len(old) else len(linted.text)
        edits.append(Edit(start, end, "".join(new[j1:j2])))
    shown = linted.result.masker.edits(linted.text, edits)
    if shown is None:
        return None  # a secret would travel in the edit (`sbatch-lint --fix` still applies it)
    return t.CodeAction(title=f"Fix all safe sbatch-lint findings ({outcome.applied})",
                        kind=FIX_ALL, edit=workspace_edit(linted, shown, versioned))


def srun_native(linted: Linted, versioned: bool) -> t.CodeAction | None:
    """The srun-native conversion (``sbatch-lint --convert srun-native``) as a refactoring of
    the whole script; None when there is no torchrun launch to convert or it refuses."""
    if linted.result.job is None or not linted.result.job.launches:
        return None
    conv = convert_srun_native(linted.text, linted.config, linted.result.source.path)
    if conv.status != "converted":
        return None
    edits = linted.result.masker.edits(linted.text, list(conv.edits))
    if edits is None:
        return None  # a secret would travel in the edit (`--convert srun-native` still shows it masked)
    return t.CodeAction(title="Convert torchrun launches to srun-native (one Slurm task per GPU)",
                        kind=t.CodeActionKind.RefactorRewrite,
                        edit=workspace_edit(linted, edits, versioned))


def _lines(text: str) -> list[str]:
    """Lines with their ``\\n``, split as the engine splits them (only on ``\\n``)."""
    return re.findall(r"[^\n]*\n|[^\n]+$", text)
