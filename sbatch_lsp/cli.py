"""``sbatch-lint``: the command-line face of the engine (never imports pygls).

Exit codes (DESIGN.md): 0 nothing at or above ``fail-on`` (``--fail-on LEVEL`` on the command
line, else the configuration's, else warning) or ``--exit-zero``; 1 something is; 2 usage,
configuration or I/O error.
"""
from __future__ import annotations

import os
import sys

from . import __version__

# ``--version`` and ``--help`` import nothing else of the package (nor pathlib), a run over
# cached files only the cache: the rest is imported where it is used
# (tests/test_startup_imports.py). typing.TYPE_CHECKING without importing typing:
TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from pathlib import Path

    from .cache import Cache
    from .config import Config
    from .convert import Converted

EXIT_CODES = """exit codes:
  0  no finding at or above --fail-on (default: the configuration's fail-on, else warning),
     or --exit-zero
  1  a finding at or above it
  2  a usage, configuration or I/O error, or a folder given that holds no job script"""
PARALLEL_MIN_FILES = 24


#: The subcommands (DESIGN.md "Interfaces": ``sbatch-lint show|triage|profile …``): name ->
#: (module, one-line summary). The module is imported only when its subcommand runs, and has
#: ``main(argv: list[str]) -> int`` (argv: the words after the name; its own ``--help``). To plug
#: a subcommand in, add its line here; one not built yet is simply absent, and its name is then
#: an ordinary path. A file named like a subcommand is linted as ``./show``.
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "show": ("sbatch_lsp.facts.show", ("the job as Slurm will run it: layout, placement, "
                                       "launchers, the variables reaching each step")),
    "triage": ("sbatch_lsp.triage.cli",
               "a failed job's log: the first failing rank, the root line, the script finding"),
    "profile": ("sbatch_lsp.profile.cli", "import saved Slurm output as a site profile (SB7xx)"),
}


class UsageError(Exception):
    pass


class FileReport:
    """What linting one file produced, ready to print (so it crosses process boundaries):
    ``FileReport(path, field=value, …)``, the fields below with their defaults.

    A plain class, not a dataclass: ``--version`` and ``--help`` then never import dataclasses
    (with inspect, about a quarter of their start-up); nothing compares or prints reports."""

    text_out: str = ""
    items: list | None = None  # JSON objects or SARIF results (--format json/sarif)
    worst: int = 0
    error: str | None = None
    diff: str = ""
    fixed_script: bytes | None = None  # `--fix -`: the fixed script, for standard output
    fixed: int = 0
    remaining: int = 0
    job_script: bool = True  # False: read, but not a job script, so no rule applies
    excluded: bool = False  # the configuration's exclude names it: not read
    #: what the lint read besides the file (sbatch_lsp/cache.dependencies), for the cache
    #: (None when the run stores nothing: ``RunOptions.cache`` false)
    elsewhere: dict | None = None

    def __init__(self, path: str, **fields) -> None:
        self.path = path
        for name, value in fields.items():
            if name.startswith("_") or not hasattr(FileReport, name):
                raise TypeError(f"FileReport has no field {name!r}")
            setattr(self, name, value)


class RunOptions:
    """What :func:`process` needs of the command line, the same for every file of a run (a
    plain class, as :class:`FileReport`: it crosses to the worker processes). ``format`` is
    ``--format``; ``root``: the repository root (``--format gitlab`` only); ``cache``: the
    run stores entries, so a report records what the lint read besides the file."""

    __slots__ = ("fix", "diff", "unsafe", "add_noqa", "live", "format", "color", "root",
                 "cache")

    def __init__(self, fix: bool = False, diff: bool = False, unsafe: bool = False,
                 add_noqa: bool = False, live: bool = False, format: str = "text",
                 color: bool = False, root: str | None = None, cache: bool = True) -> None:
        self.fix, self.diff, self.unsafe, self.add_noqa, self.live = \
            fix, diff, unsafe, add_noqa, live
        self.format, self.color, self.root, self.cache = format, color, root, cache


def _positive(value: str) -> int:
    """``--jobs``: a whole number of at least 1."""
    import argparse

    try:
        n = int(value)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {value!r}")
    return n


#: the options of a lint, as ``ArgumentParser.add_argument`` takes them (:func:`_parser`);
#: :func:`_quick_args` reads the same table
OPTIONS: tuple[tuple[str, dict], ...] = (
    ("--format", {"choices": ("text", "concise", "json", "github", "sarif", "gitlab",
                              "markdown"),
                  "default": "text", "help": "gitlab: a GitLab Code Quality report (JSON); "
                                             "markdown: with --list-rules only (the README's "
                                             "rule table)"}),
    ("--output-file", {"metavar": "PATH", "help": "write the report here"}),
    ("--fix", {"action": "store_true", "help": "apply safe fixes in place"}),
    ("--unsafe-fixes", {"action": "store_true", "help": "also apply unsafe fixes"}),
    ("--diff", {"action": "store_true", "help": "print the fixes as a diff; change nothing"}),
    ("--add-noqa", {"action": "store_true",
                    "help": "write a `# sbatch-lint: disable=...` comment for every current "
                            "finding"}),
    ("--convert", {"choices": ("srun-native",), "metavar": "SHAPE",
                   "help": "rewrite the launch: 'srun-native' turns torchrun under srun into "
                           "one Slurm task per GPU; prints a diff (see --write)"}),
    ("--write", {"action": "store_true",
                 "help": "with --convert: apply the conversion to the file"}),
    ("--select", {"action": "append",
                  "help": "codes or prefixes to run, replacing the configured selection "
                          "(comma-separated or repeated, e.g. SB2,SB301)"}),
    ("--extend-select", {"action": "append", "help": "codes to add to the selection"}),
    ("--ignore", {"action": "append", "help": "codes or prefixes to skip"}),
    ("--fail-on", {"choices": ("error", "warning", "info", "hint"), "metavar": "LEVEL",
                   "help": "exit 1 when a finding is at or above LEVEL (error, warning, info, "
                           "hint; default: the configuration's fail-on, else warning)"}),
    ("--exit-zero", {"action": "store_true",
                     "help": "exit 0 even when findings are reported (2 still means a usage, "
                             "configuration or I/O error)"}),
    ("--config", {"metavar": "PATH", "help": "use this configuration file"}),
    ("--live", {"action": "store_true",
                "help": "also ask the cluster's controller (sbatch --test-only, nothing is "
                        "submitted; only the #! line and the #SBATCH block are sent) whether "
                        "the job would start: finding SB790"}),
    ("--stdin-filename", {"metavar": "PATH", "help": "name to report for '-'"}),
    ("--explain", {"metavar": "CODE", "help": "print the page of a rule (code or name)"}),
    ("--list-rules", {"action": "store_true",
                      "help": "list every rule (--format text, json or markdown)"}),
    ("--schema", {"metavar": "NAME",
                  "help": "print the JSON Schema of a JSON output (lint, gitlab, ...) and "
                          "exit"}),
    ("--no-color", {"action": "store_true"}),
    ("--no-cache", {"action": "store_true",
                    "help": "lint every file afresh; neither read nor write the cache "
                            "(--fix, --diff, --convert and standard input never use it)"}),
    ("--cache-dir", {"metavar": "DIR",
                     "help": "keep the cache here (default: .sbatch-lint-cache beside the "
                             "configuration file found, else in the current directory)"}),
    ("--jobs", {"type": _positive, "metavar": "N", "default": None,
                "help": "lint in N processes when there are many files (default: the CPUs "
                        "available)"}),
)
#: the options a run answered through quick keys may have (:func:`_quick_args`): those that
#: only choose the view, the configuration, the cache folder or the exit code
QUICK_OPTIONS = frozenset({"--format", "--select", "--extend-select", "--ignore", "--fail-on",
                           "--exit-zero", "--config", "--no-color", "--cache-dir"})


def _parser() -> argparse.ArgumentParser:
    import argparse

    listed = "".join(f"\n  sbatch-lint {name} …  {summary}"
                     for name, (_, summary) in sorted(SUBCOMMANDS.items()))
    epilog = EXIT_CODES
    if SUBCOMMANDS:
        epilog = (f"subcommands (each has --help):{listed}\n(a file named like one is "
                  f"written with its folder: ./{min(SUBCOMMANDS)})\n\n{epilog}")
    p = argparse.ArgumentParser(
        prog="sbatch-lint", usage="%(prog)s [options] [PATH ...]" + (
            f"\n       %(prog)s {{{','.join(sorted(SUBCOMMANDS))}}} ..." if SUBCOMMANDS else ""),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Lint Slurm batch scripts for the launch mistakes sbatch accepts silently.",
        epilog=epilog)
    p.add_argument("paths", nargs="*", help="files or directories ('-' reads standard input)")
    for flag, spec in OPTIONS:
        p.add_argument(flag, **spec)
    p.add_argument("--version", action="version", version=f"sbatch-lint {__version__}")
    return p


def _quick_args(argv: list[str]):
    """The namespace :func:`_parser` would give ``argv`` when it has the common shape of a
    pre-commit run: options of :data:`QUICK_OPTIONS` only (exact names, ``--name VALUE`` or
    ``--name=VALUE``, choices respected), then at least one path, none starting with ``-``;
    None for any other shape (the parser then reads it)."""
    from types import SimpleNamespace

    specs = dict(OPTIONS)
    values: dict = {_dest(flag): spec.get("default", False if spec.get("action") == "store_true"
                                          else None) for flag, spec in OPTIONS}
    values["paths"] = paths = []
    words = iter(argv)
    for word in words:
        if not word.startswith("-"):
            paths.append(word)
            continue
        flag, eq, value = word.partition("=")
        if paths or flag not in QUICK_OPTIONS:
            return None
        spec, dest = specs[flag], _dest(flag)
        if spec.get("action") == "store_true":
            if eq:
                return None
            values[dest] = True
            continue
        if not eq:
            value = next(words, "-")
            if value.startswith("-"):  # (the parser takes it for an option: an error)
                return None
        if value not in spec.get("choices", (value,)):
            return None
        values[dest] = (values[dest] or []) + [value] if spec.get("action") == "append" \
            else value
    return SimpleNamespace(**values) if paths else None


def _dest(flag: str) -> str:
    """The attribute an option is stored as: ``--fail-on`` -> ``fail_on``."""
    return flag[2:].replace("-", "_")


def cpus() -> int:
    """The CPUs this process may run on (its affinity mask where the system has one)."""
    count = getattr(os, "process_cpu_count", None)
    if count is not None:
        return count() or 1
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _cli_codes(values: list[str] | None, flag: str) -> frozenset[str]:
    """Codes from a repeatable, comma-separated option; each must name at least one rule
    (:func:`parse_codes` checks it, as it does for configuration files)."""
    items = [c for v in values or [] for c in v.split(",") if c.strip()]
    if values is not None and not items:
        raise UsageError(f"{flag}: give at least one code or prefix (see --list-rules)")
    from .config import parse_codes

    return parse_codes(items, flag)


def _override(cfg: Config, args) -> Config:
    from dataclasses import replace

    from .config import ConfigError
    from .severity import Severity

    try:
        if args.select is not None:
            cfg = replace(cfg, select=_cli_codes(args.select, "--select"))
        if args.extend_select is not None:
            cfg = replace(cfg, extend_select=cfg.extend_select
                          | _cli_codes(args.extend_select, "--extend-select"))
        if args.ignore is not None:
            cfg = replace(cfg, ignore=cfg.ignore | _cli_codes(args.ignore, "--ignore"))
        if args.fail_on is not None:
            cfg = replace(cfg, fail_on=Severity.parse(args.fail_on))
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    return cfg


def _config_for(path: Path, args, cache: dict) -> Config:
    """The Config for a file or folder: ``--config``'s, or the nearest configuration file's,
    with the command line's overrides; ``cache`` keeps what one run has found (per folder)."""
    from pathlib import Path

    from .config import Config, find_config, load_file

    if args.config:
        found: Path | None = Path(args.config)
    else:
        folder = path if path.is_dir() else path.parent
        if ("folder", folder) not in cache:
            cache[("folder", folder)] = find_config(folder)
        found = cache[("folder", folder)]
    if ("config", found) not in cache:
        cache[("config", found)] = _override(load_file(found) if found else Config(), args)
    return cache[("config", found)]


#: words people type as a subcommand that are options here: the hint a missing "file" gets
SUBCOMMAND_LOOKALIKES = {"explain": "explain a rule, use `sbatch-lint --explain CODE`",
                         "rules": "list the rules, use `sbatch-lint --list-rules`",
                         "fix": "fix the files, use `sbatch-lint --fix FILE`"}


def process(path: str, display: str, cfg: Config, opts: RunOptions, stdin_data: bytes | None
            ) -> FileReport:
    """Lint (and maybe fix) one file; never raises."""
    rep = FileReport(display)
    if (path != "-" or display != "-") and cfg.excluded(display if path == "-" else path):
        # named on the command line (pre-commit names every staged file) but excluded
        rep.items, rep.excluded = [], True
        if path == "-" and opts.fix:
            rep.fixed_script = stdin_data or b""
        return rep
    from .files import read_file, write_atomic
    from .source import BinaryInputError, is_job_script

    try:
        text, encoding = read_file(path, stdin_data)
    except BinaryInputError as exc:
        rep.error = f"{display}: not linted: {exc}"
        return rep
    except OSError as exc:
        rep.error = f"{display}: cannot read: {exc}"
        if path in SUBCOMMAND_LOOKALIKES and not os.path.exists(path):
            rep.error += f" (to {SUBCOMMAND_LOOKALIKES[path]})"
        return rep
    if not is_job_script(text, display):
        # nothing to report or fix (lint() agrees); skip loading the engine (pre-commit
        # passes every shell script, and importing the parsers is most of a run's time)
        rep.items = []
        rep.job_script = False
        if path == "-" and (opts.fix or opts.add_noqa):
            rep.fixed_script = text.encode(encoding)
        return rep
    _collect_less()  # (once per process, and only when a job script is linted)
    from . import output
    from .cache import dependencies
    from .fixer import fix_text
    from .lint import lint

    try:
        if opts.diff:
            # nothing changes: report (and exit on) the file as it is, and show the fixes
            outcome = fix_text(text, display, cfg, unsafe=opts.unsafe)
            result = outcome.before
            import difflib

            d = "".join(difflib.unified_diff(text.splitlines(True), outcome.text.splitlines(True),
                                             display, display))
            rep.diff = result.mask(outcome.result.mask(d))
        elif opts.fix:
            outcome = fix_text(text, display, cfg, unsafe=opts.unsafe)
            result = outcome.result
            rep.fixed = outcome.applied
            if path == "-":
                rep.fixed_script = outcome.text.encode(encoding)
            elif outcome.text != text:
                write_atomic(path, outcome.text, encoding)
        elif opts.add_noqa:
            from .fixer import add_noqa_text
            new_text, rep.fixed, result = add_noqa_text(text, display, cfg)
            if path == "-":
                rep.fixed_script = new_text.encode(encoding)
            elif new_text != text:
                write_atomic(path, new_text, encoding)
        else:
            result = lint(text, display, cfg)
        live_text = outcome.text if opts.fix else text  # the job as it is left
        if opts.live:
            from .live import LiveError, with_live
            try:
                result = with_live(result, live_text, path if path != "-" else display, cfg)
            except LiveError as exc:
                rep.error = f"{display}: live check: {exc}"
                return rep
    except Exception as exc:  # noqa: BLE001  # pragma: no cover - lint() catches rule errors
        from .secrets import Masker, find_secrets

        rep.error = Masker.of(text, find_secrets(text)).text(
            f"{display}: internal error: {type(exc).__name__}: {exc}")
        return rep
    rep.remaining = len(result.diagnostics)
    if opts.cache:  # (the cache's record alone reads it)
        rep.elsewhere = dependencies(result.elsewhere, display)
    rep.worst = max((int(d.severity) for d in result.diagnostics), default=0)
    fmt = opts.format
    if fmt == "json":
        rep.items = output.to_json_obj(result, display)
    elif fmt == "sarif":
        rep.items = output.to_sarif_results(result, display)
    elif fmt == "gitlab":
        from pathlib import Path

        from .gitlab import repository_root, to_gitlab_issues
        root = Path(opts.root) if opts.root is not None else repository_root()
        rep.items = to_gitlab_issues(result, display, root)
    elif fmt == "github":
        rep.text_out = output.format_github(result, display)
    elif fmt == "concise":
        rep.text_out = output.format_concise(result, display)
    else:
        rep.text_out = output.format_text(result, display, opts.color)
    return rep


def rule_page(typed: str) -> str:
    """The Markdown page of the rule ``typed`` names (a code such as ``SB201`` or a name such as
    ``torchrun-per-task``), as ``--explain`` prints it; KeyError (with a message for people)
    when it names no rule. The page is the installed one, or the rule's summary when the
    install lacks it."""
    from .rules import RULES, code_of, page_path

    code = code_of(typed.strip())
    if code not in RULES:
        raise KeyError(f"unknown rule {typed.strip()!r}; see --list-rules")
    try:
        return page_path(code).read_text("utf-8")
    except OSError:
        r = RULES[code]
        return f"# {code} {r.name}\n\n{r.summary}\n"


def _explain(code: str) -> int:
    try:
        print(rule_page(code))
    except KeyError as exc:
        print(f"sbatch-lint: {exc.args[0]}", file=sys.stderr)
        return 2
    return 0


def _print_schema(name: str) -> int:
    """``--schema NAME``: print a shipped JSON Schema (exit 0), or say which exist (exit 2)."""
    from .schemas import names, schema_text

    try:
        print(schema_text(name.strip()), end="")
    except KeyError:
        raise UsageError(f"--schema: unknown schema {name!r} (known: {', '.join(names())})"
                         ) from None
    return 0


def _list_rules(fmt: str) -> int:
    """``--list-rules``: every rule from the registry, as text, JSON or the README's Markdown
    table (:mod:`sbatch_lsp.catalogue`); another ``--format`` is a usage error."""
    from . import catalogue

    listings = {"text": catalogue.text_listing, "json": catalogue.json_listing,
                "markdown": catalogue.markdown_table}
    if fmt not in listings:
        raise UsageError(f"--list-rules prints text, json or markdown, not {fmt}")
    sys.stdout.write(listings[fmt]())
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``sbatch-lint`` and ``python -m sbatch_lsp``; returns the exit code.

    ``argv`` (default: ``sys.argv[1:]``) whose first word names a subcommand of
    :data:`SUBCOMMANDS` runs that subcommand's ``main`` with the rest; anything else lints."""
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        if argv and argv[0] in SUBCOMMANDS:
            return _subcommand(argv[0], argv[1:])
        return _main(argv)
    except UsageError as exc:
        print(f"sbatch-lint: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 1
    except ValueError as exc:
        from .config import ConfigError  # (loaded already when one was raised)

        if not isinstance(exc, ConfigError):
            raise
        print(f"sbatch-lint: configuration error: {exc}", file=sys.stderr)
        return 2


def _subcommand(name: str, argv: list[str]) -> int:
    """Run subcommand ``name`` (its module imported now) with ``argv``."""
    from importlib import import_module

    module, _ = SUBCOMMANDS[name]
    return int(import_module(module).main(argv))


def _main(argv: list[str]) -> int:
    # a run of named files whose entries quick keys find ends here (pre-commit over unchanged
    # files); else ``linked`` carries their quick keys, for the entries this run finds or makes
    quick = _quick_args(argv)
    linked = None
    if quick is not None:
        code, linked = _quick_run(quick)
        if code is not None:
            return code
    args = _parser().parse_args(argv)
    from pathlib import Path

    from .files import discover

    if args.explain:
        return _explain(args.explain)
    if args.list_rules:
        return _list_rules(args.format)
    if args.format == "markdown":
        raise UsageError("--format markdown lists the rules: use it with --list-rules")
    if args.schema:
        return _print_schema(args.schema)
    if not args.paths:
        raise UsageError("no files given (use '-' for standard input)")
    if args.fix and args.diff:
        raise UsageError("--fix and --diff exclude each other")
    if args.add_noqa and (args.fix or args.diff or args.unsafe_fixes or args.convert):
        raise UsageError("--add-noqa writes suppressions, not fixes: do not combine it with "
                         "--fix, --unsafe-fixes, --diff or --convert")
    if args.live and (args.convert or args.add_noqa):
        raise UsageError("--live asks the controller about the job as written: do not combine "
                         "it with --convert or --add-noqa")
    if args.write and not args.convert:
        raise UsageError("--write applies a conversion: use it with --convert")
    if args.convert and (args.fix or args.diff or args.unsafe_fixes):
        raise UsageError("--convert prints its own diff: do not combine it with --fix, "
                         "--unsafe-fixes or --diff")
    stdin_data = sys.stdin.buffer.read() if "-" in args.paths else None
    cache: dict = {}
    def excluded(p: Path, is_dir: bool) -> bool:
        return _config_for(p, args, cache).excluded(p, is_dir)

    files = discover(args.paths, excluded)
    jobs = []
    # the folder whose configuration a file gets (None: no such file, the current one's),
    # real as find_config resolves it (``link/../job.sbatch`` is in the target's parent)
    per_folder: dict[str | None, Config] = {}
    for f in files:
        display = args.stdin_filename if f == "-" and args.stdin_filename else f
        named = (args.stdin_filename or ".") if f == "-" else f
        where = os.path.realpath(named) if os.path.isdir(named) else \
            os.path.realpath(os.path.dirname(named) or os.curdir) if os.path.exists(named) \
            else None
        cfg = per_folder.get(where)
        if cfg is None:
            cfg = per_folder[where] = _config_for(Path(named if where else "."), args, cache)
        jobs.append((f, display, cfg))
    if args.convert:
        return _convert_all(jobs, args, stdin_data)
    color = _color(args)
    opts = RunOptions(args.fix, args.diff, args.unsafe_fixes, args.add_noqa, args.live,
                      args.format, color)
    if args.format == "gitlab":
        from .gitlab import repository_root
        opts.root = str(repository_root())
    from .cache import FIELDS

    store = None if args.no_cache or args.fix or args.diff or args.add_noqa or args.live else \
        linked if linked is not None and vars(args) == vars(quick) else \
        _cache(args, color, opts.root)
    opts.cache = store is not None
    found = [store.get(f, d, c) if store else None for f, d, c in jobs]
    todo = [job for job, hit in zip(jobs, found, strict=True) if hit is None]
    done = iter(_process_all(todo, opts, stdin_data, args.jobs or cpus()))
    reports = [FileReport(job[1], **hit) if hit is not None else next(done)
               for job, hit in zip(jobs, found, strict=True)]
    if store:
        for (f, d, c), hit, rep in zip(jobs, found, reports, strict=True):
            if hit is None and (rep.error is not None or rep.excluded):
                continue  # (no entry)
            if hit is None:
                store.put(f, d, c, {k: getattr(rep, k) for k in FIELDS},
                          rep.elsewhere or {"files": [], "listings": []})
            store.link(f, d, c)
    folders = [Path(p) for p in args.paths if p != "-" and os.path.isdir(p)]
    return _report(reports, jobs, args,
                   folders_excluded=bool(folders) and all(excluded(p, True) for p in folders))


def _color(args) -> bool:
    """Whether the report is coloured: standard output is a terminal, and neither
    ``--no-color``, ``--output-file`` nor the NO_COLOR environment variable says otherwise."""
    return sys.stdout.isatty() and not args.no_color and not args.output_file and \
        "NO_COLOR" not in os.environ


def _cache(args, color: bool, root: str | None) -> Cache:
    """The cache of a run with ``args`` shown in ``color`` (``root``: --format gitlab's
    repository root): its view, folder and the options quick keys hold."""
    from .cache import Cache

    return Cache(f"{args.format}:{color}:{root}", args.cache_dir,
                 repr((args.select, args.extend_select, args.ignore, args.fail_on)),
                 args.config)


def _quick_run(args) -> tuple[int | None, Cache | None]:
    """Answer a run of named files (``args`` from :func:`_quick_args`) from the cache through
    quick keys, before the argument parser, the configuration and the engine are loaded:
    (exit code, None) when every file is answered; else (None, the cache with each file's
    quick key, for the full run to link), or (None, None) for a run quick keys do not serve
    (a folder named, --format gitlab or markdown)."""
    if args.format in ("gitlab", "markdown") or any(os.path.isdir(p) for p in args.paths):
        return None, None
    store = _cache(args, _color(args), None)
    hits = [store.quick(p, p) for p in args.paths]  # (every key, before any configuration)
    answered = [hit for hit in hits if hit is not None]
    if len(answered) < len(hits):
        return None, store
    from types import SimpleNamespace

    reports, jobs = [], []
    for path, (fields, fail_on) in zip(args.paths, answered, strict=True):
        reports.append(FileReport(path, **fields))
        jobs.append((path, path, SimpleNamespace(fail_on=fail_on)))
    return _report(reports, jobs, args), None


def _process_all(jobs: list[tuple[str, str, Config]], opts: RunOptions, stdin_data: bytes | None,
                 n: int) -> list[FileReport]:
    """:func:`process` over ``jobs`` (path, shown path, configuration), in ``n`` processes
    when there are at least :data:`PARALLEL_MIN_FILES`; the reports in the order of ``jobs``
    (none to lint, as on a warm cache run: the engine is not even imported)."""
    if not jobs:
        return []
    if n > 1 and len(jobs) >= PARALLEL_MIN_FILES:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        if multiprocessing.get_start_method() == "fork":
            from . import lint  # noqa: F401  (forked workers inherit the engine: one import)
            from .secrets import preload

            preload()  # and the secret token formats, compiled once for every worker

        with ProcessPoolExecutor(max_workers=n) as ex:
            return list(ex.map(process, *zip(*[(f, d, c, opts, stdin_data)
                                                for f, d, c in jobs], strict=True),
                               chunksize=max(1, min(8, len(jobs) // (4 * n)))))
    return [process(f, d, c, opts, stdin_data) for f, d, c in jobs]


#: allocations between the collector's young collections while linting (Python's default is
#: 700): a lint makes many short-lived objects and no cycles worth finding that early
YOUNG_BUDGET = 20_000
#: whether :func:`_collect_less` has run in this process
_collecting_less = False


def _collect_less() -> None:
    """Before the first job script a process lints: the engine's import-time objects move
    out of the collector's sight (gc.freeze: a full collection no longer walks them) and
    young collections come less often. A 40,000-line script spent a quarter of its lint in
    the collector, a share that grows with the script; the results do not depend on it.
    Only the first call does anything (a run of non-job files never imports the engine)."""
    global _collecting_less
    if _collecting_less:
        return
    _collecting_less = True
    import gc

    from . import lint  # noqa: F401  (the engine: imported before its objects are frozen)

    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_BUDGET, middle, old)


def conversion(text: str, display: str, cfg: Config) -> Converted:
    """Convert ``text`` (shown as ``display``) to an srun-native launch (``--convert
    srun-native``, the MCP ``convert`` tool)."""
    from .convert import Converted, convert_srun_native
    from .secrets import Masker, find_secrets
    from .source import Source

    import difflib

    conv = convert_srun_native(text, cfg, display)
    src = Source(text, display)
    # the diff, refusals and notes are shown masked: the secrets both lints found, and formats
    shown = Masker.of(text, find_secrets(text), [v for r in conv.linted for v in r.masker.values])
    refusals = []
    for r in conv.refusals:
        line, col = src.position(r.start)
        refusals.append((line + 1, col + 1, shown.text(r.message)))
    new = conv.new_text
    diff = "" if conv.status != "converted" else shown.text("".join(difflib.unified_diff(
        text.splitlines(True), new.splitlines(True), display, display)))
    return Converted(conv.status, new, diff, refusals, [shown.text(n) for n in conv.notes])


def convert_file(path: str, display: str, cfg: Config, write: bool,
                 stdin_data: bytes | None) -> tuple[int, str, list[str]]:
    """Convert one file to an srun-native launch (``--convert srun-native``).

    Returns (status, diff, messages): status 0 converted or nothing to convert, 1 refused,
    2 unreadable; the unified diff (secrets masked); messages for standard error, each
    ``path:line:column: …``. With ``write`` the file is replaced atomically in its own encoding
    (the write path of ``--fix``); standard input is never written."""
    from .files import read_file, write_atomic
    from .source import BinaryInputError

    try:
        text, encoding = read_file(path, stdin_data)
    except BinaryInputError as exc:
        return 2, "", [f"{display}: not converted: {exc}"]
    except OSError as exc:
        return 2, "", [f"{display}: cannot read: {exc}"]
    conv = conversion(text, display, cfg)
    msgs = [f"{display}:{line}:{col}: cannot convert: {reason}"
            for line, col, reason in conv.refusals]
    if conv.status == "refused":
        return 1, "", msgs
    if conv.status == "unchanged":
        return 0, "", [f"{display}: {note}" for note in conv.notes]
    msgs += [f"{display}: note: {note}" for note in conv.notes]
    if write and path != "-":
        try:
            write_atomic(path, conv.text, encoding)
        except OSError as exc:
            return 2, conv.diff, msgs + [f"{display}: cannot write: {exc}"]
    return 0, conv.diff, msgs


def _convert_all(jobs, args, stdin_data) -> int:
    """``--convert``: the diffs on standard output, refusals and notes on standard error;
    exit 0 when every file converted (or had nothing to convert), 1 when one was refused, 2 on
    an I/O error."""
    worst = 0
    for f, display, cfg in jobs:
        if f != "-" and cfg.excluded(f):
            print(f"{display}: not converted: excluded by the configuration", file=sys.stderr)
            continue
        status, diff, msgs = convert_file(f, display, cfg, args.write, stdin_data)
        worst = max(worst, status)
        for m in msgs:
            print(m, file=sys.stderr)
        if diff and not (args.write and f != "-"):
            sys.stdout.write(diff.rstrip("\n") + "\n")
        elif diff:
            print(f"{display}: converted to an srun-native launch", file=sys.stderr)
    sys.stdout.flush()
    return worst


def _report(reports: list[FileReport], jobs, args, folders_excluded: bool = False) -> int:
    """Print the reports and return the exit code.

    Standard output carries the report, except with ``--diff`` (the diffs, so they can be
    piped) and with ``--fix -`` (the fixed script); the report then goes to standard error.
    """
    lines: list[str] = []
    payload: list[bytes] = []  # diffs or the fixed script, as bytes
    items: list = []
    errors: list[str] = []
    fail = False
    total = fixed = linted = excluded = 0
    for rep, (_, _, cfg) in zip(reports, jobs, strict=True):
        if rep.excluded:
            excluded += 1
            if rep.fixed_script is not None:
                payload.append(rep.fixed_script)
            continue
        if rep.error:
            print(f"sbatch-lint: {rep.error}", file=sys.stderr)
            errors.append(rep.error)
            continue
        linted += 1
        if rep.worst and rep.worst >= int(cfg.fail_on):
            fail = True
        total += rep.remaining
        fixed += rep.fixed
        if args.format in ("json", "sarif", "gitlab"):
            items.extend(rep.items or [])
        elif rep.text_out:
            lines.append(rep.text_out)
        if rep.diff:
            payload.append((rep.diff.rstrip("\n") + "\n").encode("utf-8", "surrogateescape"))
        if rep.fixed_script is not None:
            payload.append(rep.fixed_script)
    if args.format in ("json", "gitlab"):
        from .output import format_json
        body = format_json(items)
    elif args.format == "sarif":
        from .output import format_sarif  # loads the rule table (not needed otherwise)
        body = format_sarif(items, errors, __version__)
    else:
        body = "\n".join(lines)
        if args.format == "text":
            others = sum(not r.job_script for r in reports)
            summary = f"Linted {linted} file(s): {total} finding(s)" + (
                f"; {others} file(s) not job scripts (no `#SBATCH` line, not *.sbatch/*.slurm), "
                "so no rule applied" if others else "") + (
                f"; {excluded} named file(s) excluded by the configuration" if excluded
                else "") + "."
            if args.fix:
                summary += f" Fixed {fixed}."
            if args.add_noqa:
                summary += f" Added suppressions for {fixed}."
            body = (body + "\n" + summary) if body else summary
    side = args.diff or any(r.fixed_script is not None for r in reports)
    if args.output_file:
        try:
            with open(args.output_file, "w", encoding="utf-8") as out:
                out.write(body + "\n")
        except OSError as exc:
            print(f"sbatch-lint: cannot write {args.output_file}: {exc.strerror}", file=sys.stderr)
            return 2
    elif body:
        print(body, file=sys.stderr if side else sys.stdout)
    if payload:
        sys.stdout.flush()
        sys.stdout.buffer.write(b"".join(payload))
        sys.stdout.buffer.flush()
    if errors:
        return 2
    if not any(r.job_script for r in reports):
        return _no_job_script(args.paths, len(reports), folders_excluded)
    return 1 if fail and not args.exit_zero else 0


def _no_job_script(paths: list[str], read: int, folders_excluded: bool) -> int:
    """Say on standard error that nothing was linted, and return the exit code: 2 when a
    directory was named (a CI job pointed at the wrong folder must fail), 0 when only files were
    (pre-commit passes every candidate file, and a commit of helper scripts is fine) or when every
    named directory is one the configuration's ``exclude`` leaves out (as a named excluded file)."""
    folders = [p for p in paths if p != "-" and os.path.isdir(p)]
    if folders_excluded:
        print(f"sbatch-lint: nothing linted: {', '.join(folders)} excluded by the configuration",
              file=sys.stderr)
        return 0
    what = f"{read} file(s) read, none a job script" if read else "no file to read"
    where = f" in {', '.join(folders)}" if folders else ""
    print(f"sbatch-lint: no job script found{where}: {what} (a job script has an `#SBATCH` "
          "line or a .sbatch/.slurm name)", file=sys.stderr)
    return 2 if folders else 0
