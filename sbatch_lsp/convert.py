"""The srun-native conversion as the faces use it (``sbatch-lint --convert srun-native``, the
editor's refactoring): :func:`convert_srun_native` lints the script, takes the planner's
conversion (:mod:`sbatch_lsp.srun_native`, which SB201 offers as its fix) and lints the
converted text before returning it, refusing rather than half converting.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from .config import Config
from .lint import lint
from .srun_native import Conversion, Refusal, plan


@dataclass
class Converted:
    """One script's srun-native conversion as every face shows it (``sbatch_lsp.cli.conversion``:
    ``--convert srun-native``, the MCP ``convert`` tool): ``status`` (``converted``,
    ``refused`` or ``unchanged``), ``text`` the script as it is left (converted, else as it
    was; unmasked, as ``--fix -`` prints it), ``diff`` the unified diff and ``refusals``
    (1-based line, 1-based column, reason) and ``notes``, all three with secrets masked."""

    status: str
    text: str
    diff: str
    refusals: list[tuple[int, int, str]]
    notes: list[str]


def convert_srun_native(text: str, config: Config | None = None,
                        path: str = "<stdin>") -> Conversion:
    """Convert a job script's torchrun launches to srun-native ones.

    ``text`` is the script, ``config`` its configuration (the profile's ``gpus-per-node`` resolves
    ``--nproc-per-node=auto|gpu``), ``path`` only names it. Never raises for any text: input that
    is not a job script, or that the conversion cannot handle, comes back refused with reasons;
    a script with no torchrun launch comes back unchanged (so converting twice is converting
    once). The converted text is linted before it is returned: if it would still start torchrun
    under srun, or lose a parsed chunk, the conversion is refused rather than half done.
    """
    before = lint(text, path, config)
    if before.job is None:
        return Conversion(text, refusals=[Refusal("not a job script (no #SBATCH line)", 0, 0)])
    conv = before.job.derived(plan)
    if conv.status != "converted":
        return conv
    try:
        new = conv.new_text
    except ValueError:  # pragma: no cover - plan() keeps its edits apart
        return Conversion(text, refusals=[Refusal("internal error: overlapping edits", 0, 0)])
    after = lint(new, path, config)
    left = [d for d in after.diagnostics if d.code in ("SB201", "SB003")]
    unparsed = sum(d.code == "SB002" for d in after.diagnostics)
    if left or unparsed > sum(d.code == "SB002" for d in before.diagnostics):
        why = left[0].message if left else "a part of the converted script no longer parses"
        return Conversion(text, refusals=[Refusal(
            f"internal error: the converted script would be wrong ({why}); please report it",
            0, 0)], notes=conv.notes)
    return replace(conv, linted=(before, after))


__all__ = ["Conversion", "Refusal", "convert_srun_native"]
