"""The opt-in live check (``sbatch-lint --live``, the editor's ``sbatch-lsp.liveCheck``): ask the
real controller whether the job would start, without submitting it and without sending the body.

Only the ``#!`` line and the directive block, exactly the lines sbatch reads as directives (the
engine's directive reader: :func:`sbatch_lsp.lint.directives_of`), go to ``sbatch --test-only``
on standard input; the body and anything it holds never leave the machine. ``--test-only``
validates the job like a submission (the site's ``job_submit`` plugins included) and asks the
controller when it would start, and nothing is queued (sbatch(1), ``--test-only``; Slurm
src/sbatch/sbatch.c). Its answer is one line on standard error:

* accepted: ``sbatch: Job N to start at TIME using N processors on nodes LIST in partition P``;
* refused: ``sbatch: error: …`` lines (a site filter's own message first, when it gives one), the
  last ``sbatch: error: Batch job submission failed: <reason>`` (``allocation failure:
  <reason>`` for ``--test-only``) with the reason from Slurm's error table
  (src/common/slurm_errno.c).

Where the site does not enforce partition limits at submission (``EnforcePartLimits=NO``, the
default; slurm.conf(5)), a job above the partition's ``MaxTime`` is accepted, and
``--test-only`` says when it would start, though it stays pending (``PartitionTimeLimit``): an
accepted answer is the controller's word on the request, not a promise that it starts.

The answer becomes one SB790 finding on the file: at the directive it names (by the option the
error-table reason is about, an option name the message quotes, or a directive value it quotes),
else on line 1. Every answer is masked before it is shown.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass

from .config import Config
from .diagnostics import Diagnostic, Severity
from .directives import DirectiveBlock
from .lint import LintResult, directives_of, outline
from .source import Source

CODE = "SB790"
#: seconds to wait for the controller (sbatch's own retries on a dead controller take longer)
TIMEOUT = 30.0
ACCEPTED = re.compile(r"^sbatch: Job \d+ to start at .*$", re.M)
ERROR = re.compile(r"^(?:sbatch: )?(?:error|fatal): (.*)$", re.M)
#: how sbatch introduces the controller's refusal: a submission's, and --test-only's (22.05's
#: src/sbatch/sbatch.c prints "allocation failure: <reason>" when slurm_job_will_run fails)
FAILED = re.compile(r"^(?:sbatch: )?(?:error: )?(?:Batch job submission failed|allocation failure)"
                    r": (.*)$", re.M)
#: sbatch could not reach a controller at all (no slurm.conf, no DNS SRV record, the controller
#: down): its own messages (src/common/read_config.c "Could not establish a configuration
#: source", src/api/ "Unable to contact slurm controller (connect failure)", "Zero Bytes were
#: transmitted or received", "Socket timed out on send/recv operation"). Not an answer about the
#: job: the check stops with a LiveError.
UNREACHED = re.compile(r"Could not establish a configuration source|Unable to contact slurm "
                       r"controller|Zero Bytes were transmitted or received|Socket timed out on "
                       r"send/recv|fetch_config: DNS SRV lookup failed|Connection refused")

#: Slurm's error-table reasons (src/common/slurm_errno.c, 22.05-25.05) -> the options they are
#: about, in the order to look for a directive that sets one
REASONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Invalid partition name specified", ("partition",)),
    ("Required partition not available", ("partition",)),
    ("Partition in DOWN state", ("partition",)),
    ("User's group not permitted to use this partition", ("partition",)),
    ("Requested time limit is invalid", ("time",)),
    ("Invalid time specified", ("time", "begin", "deadline")),
    ("Invalid time-min specification", ("time-min",)),
    ("Invalid account or account/partition combination", ("account", "partition")),
    ("Invalid qos specification", ("qos",)),
    ("Invalid wckey specification", ("wckey",)),
    ("Invalid license specification", ("licenses",)),
    ("Invalid feature specification", ("constraint",)),
    ("Invalid generic resource (gres) specification",
     ("gres", "gpus", "gpus-per-node", "gpus-per-task")),
    ("Invalid GRES specification", ("gres", "gpus", "gpus-per-node", "gpus-per-task")),
    ("Invalid Trackable RESource (TRES) specification",
     ("gres", "gpus", "gpus-per-node", "gpus-per-task", "tres-per-task")),
    ("Node count specification invalid", ("nodes",)),
    ("Task count specification invalid", ("ntasks", "ntasks-per-node")),
    ("CPU count specification invalid", ("cpus-per-task",)),
    ("More processors requested than permitted", ("ntasks", "cpus-per-task", "nodes")),
    ("Memory required by task is not available", ("mem", "mem-per-cpu", "mem-per-gpu")),
    ("Requested nodes not in this partition", ("nodelist", "partition")),
    ("Invalid node name specified", ("nodelist", "exclude")),
    ("Requested reservation is invalid", ("reservation",)),
    ("Access denied to requested reservation", ("reservation",)),
    ("Invalid job array specification", ("array",)),
    ("Job dependency problem", ("dependency",)),
    ("Invalid --nice value", ("nice",)),
)


class LiveError(Exception):
    """The live check could not ask the controller (no sbatch, a timeout); the message says why
    in words for people."""


@dataclass(frozen=True)
class Answer:
    """What ``sbatch --test-only`` said: ``accepted``, the masked ``message`` (the relevant
    line), and ``reason`` (the error-table reason or the site's message; None when accepted)."""

    accepted: bool
    message: str
    reason: str | None = None


def header(text: str, block: DirectiveBlock) -> str:
    """What the controller is shown: the ``#!`` line (when line 1 is one) and the directive lines
    sbatch reads, in file order, each ending in a newline. Nothing else of ``text`` is kept."""
    source = Source(text)
    lines = [0] if source.line_count and source.line_text(0).startswith("#!") else []
    lines += [d.line for d in block.lines if d.line not in lines]
    return "".join(source.line_text(n) + "\n" for n in sorted(lines))


#: an environment variable naming the sbatch to run instead of the one on PATH (a site's
#: wrapper, or an editor whose PATH is not the login shell's)
SBATCH_VARIABLE = "SBATCH_LINT_SBATCH"


def sbatch_path() -> str | None:
    """The sbatch to run: :data:`SBATCH_VARIABLE`'s value when set (None when it names no
    executable), else the ``sbatch`` on PATH, or None."""
    named = os.environ.get(SBATCH_VARIABLE, "").strip()
    if named:
        return shutil.which(named)
    return shutil.which("sbatch")


def ask(head: str, timeout: float = TIMEOUT, cwd: str | None = None) -> tuple[int, str]:
    """Run ``sbatch --test-only`` with ``head`` on standard input, in ``cwd`` (the job's working
    directory: the script's folder); return (exit status, standard output + standard error).
    Raises :class:`LiveError` when sbatch is missing, cannot run, or takes longer than
    ``timeout`` seconds."""
    exe = sbatch_path()
    if exe is None and os.environ.get(SBATCH_VARIABLE, "").strip():
        raise LiveError(f"{SBATCH_VARIABLE} is {os.environ[SBATCH_VARIABLE].strip()!r}, which "
                        "is not an executable")
    if exe is None:
        raise LiveError("sbatch is not on PATH: the live check asks the cluster's controller "
                        "through sbatch --test-only (run it on a login node)")
    try:
        run = subprocess.run([exe, "--test-only"], input=head, capture_output=True, text=True,
                             timeout=timeout, cwd=cwd or None, errors="replace")
    except subprocess.TimeoutExpired:
        raise LiveError(f"sbatch --test-only gave no answer within {timeout:g} s (is the "
                        "controller reachable?)") from None
    except OSError as exc:
        raise LiveError(f"sbatch --test-only could not run: {exc.strerror or exc}") from None
    return run.returncode, (run.stdout or "") + (run.stderr or "")


def read_answer(status: int, output: str) -> Answer:
    """The :class:`Answer` in sbatch's output (unmasked: the caller masks). Accepted when the
    start line is there; otherwise the reason is the site's own message when one came before
    sbatch's ``Batch job submission failed: …`` line, else that line's reason, else the last
    error line, else the whole output's last line. Raises :class:`LiveError` when sbatch
    reached no controller (:data:`UNREACHED`), so no answer about the job exists."""
    start = ACCEPTED.search(output)
    if start and status == 0:
        return Answer(True, start.group(0).removeprefix("sbatch: "))
    failed = [m.group(1).strip() for m in FAILED.finditer(output)]
    if not failed and UNREACHED.search(output):
        lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
        raise LiveError("sbatch --test-only reached no controller (nothing was asked about this "
                        f"job): {lines[-1] if lines else 'no output'}")
    errors = [m.group(1).strip() for m in ERROR.finditer(output)
              if m.group(1).strip() and not FAILED.match(m.group(0))]
    site = [e for e in errors if e not in failed]
    if failed:
        reason = failed[-1]
        message = "; ".join([*site, reason]) if site else reason
    elif errors:
        reason = message = "; ".join(errors)
    else:
        lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
        reason = message = lines[-1] if lines else f"sbatch exited {status} and printed nothing"
    return Answer(False, message, reason)


def anchor(answer: Answer, block: DirectiveBlock, source: Source) -> tuple[int, int]:
    """The character range the answer is about: the directive of the option the error-table
    reason names, or whose ``--name`` or value the message quotes (the last use: the one that
    wins); else line 1."""
    uses = [o for o in block.options if o.ok and o.name]
    if not answer.accepted:
        text = answer.message
        for reason, names in REASONS:
            if reason.lower() in text.lower():
                for name in names:
                    hit = [o for o in uses if o.name == name]
                    if hit:
                        return hit[-1].start, hit[-1].end
        for o in reversed(uses):
            if re.search(rf"(?<![\w-])--{re.escape(o.name or '')}(?![\w-])", text):
                return o.start, o.end
        for o in reversed(uses):
            if o.value and len(o.value) >= 2 and re.search(
                    rf"(?<![\w.-]){re.escape(o.value)}(?![\w.-])", text):
                return o.start, o.end
    return 0, source.line_end(0) if source.line_count else 0


def check(text: str, path: str, config: Config | None = None, result: LintResult | None = None,
          timeout: float = TIMEOUT) -> Diagnostic:
    """Ask the controller about the script ``text`` (shown as ``path``; its folder is the job's
    working directory when it exists) and return the SB790 finding: info when the job would be
    accepted, error when refused. ``result`` (the lint of the same text) masks the answer with
    the secrets the rules found; token formats are masked in any case. Raises
    :class:`LiveError`."""
    from .rules import finding
    from .secrets import Masker, find_secrets

    config = config or Config()
    source = Source(text, path)
    block = directives_of(source, outline(source), config)
    folder = os.path.dirname(os.path.abspath(path)) if path not in ("-", "<stdin>") else None
    status, output = ask(header(text, block), timeout, folder if folder and
                         os.path.isdir(folder) else None)
    masker = result.masker if result is not None else Masker.of(text, find_secrets(text))
    try:
        raw = read_answer(status, output)
    except LiveError as exc:  # it quotes sbatch's output, which may echo a directive's value
        raise LiveError(masker.text(str(exc))) from None
    answer = Answer(raw.accepted, masker.text(raw.message),
                    None if raw.reason is None else masker.text(raw.reason))
    start, end = anchor(raw, block, source)
    if answer.accepted:
        return finding(CODE, start, end, f"the controller would accept this job (sbatch "
                       f"--test-only, nothing submitted): {answer.message}", Severity.INFO)
    return finding(CODE, start, end, f"the controller refuses this job (sbatch --test-only, "
                   f"nothing submitted): {answer.message}", Severity.ERROR)


def with_live(result: LintResult, text: str, path: str, config: Config | None = None,
              timeout: float = TIMEOUT) -> LintResult:
    """``result`` with the live finding added in position order (a job script only: a text
    that is not one is left alone). Raises :class:`LiveError`."""
    if result.job is None:
        return result
    diag = check(text, path, config, result, timeout)
    result.diagnostics = sorted([*result.diagnostics, diag], key=Diagnostic.sort_key)
    return result
