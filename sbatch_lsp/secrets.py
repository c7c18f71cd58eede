"""Secret detection and masking: infrastructure, not a rule (SB501/SB502 read it).

Detection finds credential values in a script's text: token formats anywhere, inside longer words
too (``extrahf_…``, ``key=hf_…``), comments and directive values included, and literal values
assigned to credential-named variables. Token formats come from detect-secrets' plugins (their
patterns copied into data/secret_formats.json, which the tests check against the installed
package); Hugging Face and W&B keys, which it lacks, are added here.

Masking happens once, at the result boundary: :func:`sbatch_lsp.lint.lint` hands every face a
result whose messages, related notes and fixes hold no detected value (:class:`Masker`), so no
output of any kind (CLI formats, ``--diff``, LSP, logs) carries one. Only ``--fix`` and the fixer
see the unmasked fixes, because they must write the script's own text back.
"""
from __future__ import annotations

import difflib
import re
from itertools import accumulate
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import TYPE_CHECKING, NamedTuple

from .diagnostics import Diagnostic, Edit, Fix, Related
from .shell import parse as _parse
from .shell.chunker import changed_lines

if TYPE_CHECKING:
    from .job import Job

#: a credential word as a whole ``_``-separated part of a name (HF_TOKEN, DOCKER_PASSWD), not
#: inside another word (TOKENIZER, MAX_NEW_TOKENS)
CRED_NAME = re.compile(r"(?:^|_)(TOKEN|API_?KEY|SECRET|PASSWORD|PASSWD|PASS|ACCESS_KEY|"
                       r"PRIVATE_KEY|AUTH)(?:_|$)", re.IGNORECASE)
#: parts that make a credential-looking name a count or a setting (NUM_TOKENS, TOKEN_LEN)
QUANTITY = re.compile(r"(?:^|_)(MAX|MIN|NUM|LEN|LENGTH|COUNT|PER|SIZE|LIMIT|IDS?|TYPES?)(?:_|$)",
                      re.IGNORECASE)
#: formats detect-secrets lacks; no leading word boundary, so a token glued to another word
#: (``extrahf_…``, ``--comment=xhf_…``) is found too
OWN_FORMATS = [
    ("Hugging Face token", re.compile(r"hf_[A-Za-z0-9]{30,}")),
    ("W&B API key", re.compile(r"(?:WANDB_API_KEY\s*=\s*['\"]?|wandb\s+login\s+(?:--relogin\s+)?)"
                               r"([0-9a-f]{40}|[A-Za-z0-9_-]{40,86})\b")),
    # a key handed to a trainer's W&B option (OpenRLHF's ``--use_wandb <key>``): only the
    # 40-hex shape, so a long run or project name after ``--wandb-…`` is not taken for a key
    ("W&B API key", re.compile(r"--[\w-]*wandb[\w-]*(?:\s*=\s*|\s+)['\"]?"
                               r"([0-9a-f]{40})(?![\w-])", re.IGNORECASE)),
    # the password of a URL's user information (RFC 3986 §3.2.1 ``user:password@host``, which
    # the RFC deprecates for this reason): ``docker://alice:…@registry/img``, ``postgres://…``
    ("password in a URL", re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s:/@'\"]+:"
                                     r"([^\s/@'\"$]{3,})@[A-Za-z0-9.-]")),
]
#: names that hold where a credential is, not the credential (``HF_TOKEN_FILE``, ``…_PATH``);
#: SB501's own fix reads ``${HF_TOKEN_FILE:-…}``, which must not raise SB502
NOT_CRED_NAME = re.compile(r"(_FILE|_PATH|_DIR|_HOME)$", re.IGNORECASE)
PLACEHOLDER = re.compile(r"^(<.*>|\$.*|.*your[_-]?(token|key|secret).*|.*_here|x{6,}|\*{3,}|"
                         r"changeme|dummy|example.*|.*\.\.\..*|none|null|)$", re.IGNORECASE)
#: the detect-secrets plugins whose formats sbatch_lsp/data/secret_formats.json holds
PLUGINS = ("aws.AWSKeyDetector", "github_token.GitHubTokenDetector",
           "gitlab_token.GitLabTokenDetector", "openai.OpenAIDetector", "slack.SlackDetector",
           "stripe.StripeDetector", "private_key.PrivateKeyDetector",
           "pypi_token.PypiTokenDetector", "npm.NpmDetector", "sendgrid.SendGridDetector",
           "discord.DiscordBotTokenDetector", "telegram_token.TelegramBotTokenDetector",
           "twilio.TwilioKeyDetector", "jwt.JwtTokenDetector", "mailchimp.MailchimpDetector",
           "azure_storage_key.AzureStorageKeyDetector", "artifactory.ArtifactoryDetector")
#: a line can hold one of our own formats only if it says this
OWN_PREFILTER = re.compile(r"hf_|wandb|://", re.IGNORECASE)
#: a substring every detect-secrets format above needs (one alternative per denylist pattern;
#: tests/test_secrets.py checks it against strings generated from the plugins' own patterns).
#: The formats are compiled only for lines that pass this.
PLUGIN_PREFILTER = re.compile(
    r"A3T|ABIA|ACCA|AKIA|ASIA|(?i:aws|xox|hooks\.slack)|gh[pousr]_|GR1348941|sk-|k_live_|"
    r"gl(?:pat|dt|ft|soat|rt|cbt|imt|ptt|agent|oas)-|"
    r"PRIVATE KEY|PuTTY|pypi-|_authToken|SG\.|\.[A-Za-z\d_-]{6}\.|\d{8,10}:|AC[a-z0-9]{32}|"
    r"SK[a-z0-9]{32}|eyJ|-us\d|AccountKey=|AKC|AP[\dA-F]")
#: PLUGIN_PREFILTER in parts that each search fast (the one alternation has no literal prefix
#: and costs some 300 ns a character): the alternatives that start with a plain character, the
#: ``\d{8,10}:`` one as a ``:`` with 8 digits before it, and the case-insensitive ones tried
#: only when the case-folded line holds their text (every character ``(?i)`` matches to a
#: letter of them folds to that letter); :func:`prefiltered` is the two prefilters' verdict
_PLUGIN_FOLDED = re.compile(r"(?i:aws|xox|hooks\.slack)")
_PLUGIN_DIGITS = re.compile(r":(?<=\d{8}:)")


def _by_first_character(alternatives: list[str]) -> str:
    """``alternatives`` (regular expressions, each starting with a literal character, plain or
    escaped) as one alternation with those that start alike grouped (``A(?:3T|BIA|…)``): the
    same matches, but at each character the search tries one group, not every alternative."""
    groups: dict[str, list[str]] = {}
    for alt in alternatives:
        head = alt[:2] if alt.startswith("\\") else alt[:1]
        groups.setdefault(head, []).append(alt[len(head):])
    return "|".join(head + (f"(?:{'|'.join(tails)})" if len(tails) > 1 else tails[0])
                    for head, tails in groups.items())


_PLUGIN_PLAIN = re.compile(_by_first_character([
    alt for alt in re.split(r"\|(?![^()]*\))", PLUGIN_PREFILTER.pattern)
    if alt not in (_PLUGIN_FOLDED.pattern, r"\d{8,10}:")]))
#: the text each :data:`_PLUGIN_PLAIN` alternative but the ``\\.…\\.`` one starts with
#: (tests/test_secrets.py checks that one of them starts every match): a ``str.find`` pass for
#: each, every hit checked with ``_PLUGIN_PLAIN.match``, costs less than one search of the
#: alternation, which is tried at every ``e``, ``s``, ``p``, ``g``, ``k``, ``.`` and ``-``
_PLAIN_NEEDLES = ("A3T", "ABIA", "AC", "AKIA", "AKC", "ASIA", "AP", "AccountKey=", "gh", "gl",
                  "GR1348941", "sk-", "k_live_", "PRIVATE KEY", "PuTTY", "pypi-", "_authToken",
                  "SG.", "SK", "eyJ", "-us")
#: the one alternative with no literal start but its ``.`` (searched on its own)
_PLUGIN_DOTTED = re.compile(r"\.[A-Za-z\d_-]{6}\.")
#: the length (characters) from which :func:`candidate_lines` searches by the needles: below
#: it (a message the masker checks, an edited line) their 21 calls cost more than the search
NEEDLES_FROM = 1000
#: prefixes a mask keeps, so a reader still sees which kind of token it was
KEPT_PREFIX = re.compile(r"(hf_|gh[pousr]_|github_pat_|glpat-|sk-|xox[abpr]-|AKIA|npm_|pypi-)")


@dataclass(frozen=True)
class Secret:
    """A detected credential: kind and the character span ``[start, end)`` of its value in the
    text it was found in (the value itself is never printed)."""

    kind: str
    start: int
    end: int


def preload() -> None:
    """Compile the token formats now: a process about to fork workers calls this so that each
    inherits them instead of compiling them again."""
    _detectors()


@lru_cache(maxsize=1)
def _detectors() -> list[tuple[str, re.Pattern]]:
    """(kind, regex) pairs of detect-secrets' format plugins, as sbatch_lsp/data/
    secret_formats.json holds them (read on the first line that passes the plugin prefilter;
    importing detect-secrets itself costs ~0.12 s, and tests/test_secrets.py checks the file
    against it: :func:`plugin_formats`)."""
    from importlib import resources
    import json

    data = resources.files("sbatch_lsp").joinpath("data", "secret_formats.json")
    return [(kind, re.compile(pattern, flags))
            for kind, pattern, flags in json.loads(data.read_text("utf-8"))["formats"]]


def plugin_formats() -> list[tuple[str, str, int]]:
    """(kind, pattern, flags) of each format in the ``denylist`` of detect-secrets'
    :data:`PLUGINS` as installed (those it lacks are left out): what
    sbatch_lsp/data/secret_formats.json must hold. Imports detect-secrets (tests only)."""
    import importlib

    out = []
    for spec in PLUGINS:
        mod, cls = spec.rsplit(".", 1)
        try:
            plugin = getattr(importlib.import_module(f"detect_secrets.plugins.{mod}"), cls)
        except (ImportError, AttributeError):
            continue
        for rx in getattr(plugin, "denylist", ()):
            out.append((plugin.secret_type, rx.pattern, rx.flags))
    return out


def prefiltered(line: str) -> tuple[bool, bool]:
    """Whether ``line`` passes OWN_PREFILTER and PLUGIN_PREFILTER (the same answers as their
    ``search``, found faster: tests/test_secrets.py compares them)."""
    folded = line.casefold()
    own = ("hf_" in folded or "wandb" in folded or "://" in folded) and \
        OWN_PREFILTER.search(line) is not None
    plugin = _PLUGIN_PLAIN.search(line) is not None or \
        _PLUGIN_DIGITS.search(line) is not None or \
        ("aws" in folded or "xox" in folded or "hooks.slack" in folded) and \
        _PLUGIN_FOLDED.search(line) is not None
    return own, plugin


def find_secrets(text: str) -> list[Secret]:
    """Every token-format credential in ``text`` (comments, directive values and the inside of
    longer words included), as non-overlapping spans in character offsets, sorted. Each line
    that may pass a prefilter (:func:`candidate_lines`) is read on its own
    (:func:`_line_secrets`, memoised by the line's text: a server lint after an edit reads only
    the lines it changed)."""
    candidates = candidate_lines(text)
    if not candidates:
        return []  # (most texts: the messages the masker checks, half the scripts)
    return _secrets_in(text.split("\n"), candidates)


def _secrets_in(lines: list[str], candidates: list[int]) -> list[Secret]:
    """:func:`find_secrets` of the text whose lines (split at ``\\n``) are ``lines``, given
    its :func:`candidate_lines`."""
    found: dict[tuple[int, int], Secret] = {}
    ends = list(accumulate(map(len, lines)))  # (line n starts at ends[n - 1] + n)
    for n in candidates:
        offset = ends[n - 1] + n if n else 0
        for kind, s, e in _line_secrets(lines[n]):
            found[(offset + s, offset + e)] = Secret(kind, offset + s, offset + e)
    # drop spans inside (or overlapping) earlier ones
    out: list[Secret] = []
    for sec in sorted(found.values(), key=lambda x: (x.start, -x.end)):
        if out and sec.start < out[-1].end:
            continue
        out.append(sec)
    return out


#: what a line passing a prefilter holds: :data:`_PLUGIN_PLAIN` or :data:`_PLUGIN_DIGITS`, or
#: once case-folded one of these (the case-insensitive parts of both prefilters)
_FOLDED_NEEDLES = ("hf_", "wandb", "://", "aws", "xox", "hooks.slack")


def candidate_lines(text: str) -> list[int]:
    """The 0-based indices, sorted, of the lines of ``text`` (split at ``\\n``) that may pass
    :func:`prefiltered`: every line that does, found by a few searches of the whole text
    instead of one look at each line (no prefilter matches across a newline, and case-folding
    keeps the newlines in place)."""
    if len(text) >= NEEDLES_FROM:
        # (every match of _PLUGIN_PLAIN starts with a needle or is a _PLUGIN_DOTTED one)
        starts = _needle_starts(text, _PLAIN_NEEDLES, _PLUGIN_PLAIN.match)
        starts += [m.start() for m in _PLUGIN_DOTTED.finditer(text)]
    else:
        starts = [m.start() for m in _PLUGIN_PLAIN.finditer(text)]
    starts += [m.start() for m in _PLUGIN_DIGITS.finditer(text)]
    folded = text.casefold()
    folded_starts = _needle_starts(folded, _FOLDED_NEEDLES)
    if not starts and not folded_starts:
        return []
    return sorted(set(_lines_of(text, starts)) | set(_lines_of(folded, folded_starts)))


class _Scanned(NamedTuple):
    """A script text :func:`script_secrets` read: its lines and its :func:`candidate_lines`."""

    lines: list[str]
    candidates: list[int]


#: the last script text :func:`script_secrets` read with the fragment memo on (one text, not
#: one per document: the server lints a document's versions one after another)
_last: list[_Scanned | None] = [None]


def script_secrets(text: str) -> list[Secret]:
    """:func:`find_secrets` of a script's ``text`` (the same list). With the fragment memo on
    (shell/parse.py ``use_fragments``: the language server, which lints every version of a
    document) only the lines that differ from the last text read are searched for candidate
    lines (no prefilter matches across a newline: a line's verdict is its own): an edit costs
    the search of the lines it changed, not of the whole text. Off (the CLI: every text is
    new) it is :func:`find_secrets`."""
    if not _parse.USE_FRAGMENTS:
        return find_secrets(text)
    lines = text.split("\n")
    last = _last[0]
    if last is None:
        candidates = candidate_lines(text)
    else:
        a, b = changed_lines(lines, last.lines)
        n, m = len(lines), len(last.lines)
        candidates = [k for k in last.candidates if k < a] + \
            [a + k for k in candidate_lines("\n".join(lines[a:n - b]))] + \
            [k + n - m for k in last.candidates if k >= m - b]
    _last[0] = _Scanned(lines, candidates)
    return _secrets_in(lines, candidates) if candidates else []


def _needle_starts(text: str, needles: Sequence[str],
                   check: Callable[[str, int], object] | None = None) -> list[int]:
    """The offsets (unsorted) in ``text`` of every occurrence of each of ``needles`` (at which
    ``check(text, offset)`` holds, when given: a pattern's ``match``)."""
    out = []
    for needle in needles:
        at = text.find(needle)
        while at >= 0:
            if check is None or check(text, at):
                out.append(at)
            at = text.find(needle, at + 1)
    return out


def _lines_of(text: str, offsets: list[int]) -> list[int]:
    """The 0-based line of each of ``offsets`` in ``text``, in ascending order of offset (one
    pass over the text however many there are)."""
    out = []
    line = last = 0
    for at in sorted(offsets):
        line += text.count("\n", last, at)
        last = at
        out.append(line)
    return out


#: lines whose secrets :func:`_line_secrets` keeps: those of some 50 open documents
LINE_CACHE_SIZE = 32768
#: texts whose :func:`carries_format` answer is kept: the texts of the findings of a few
#: documents (each a message, a note or a fix's text of a few hundred characters)
TEXTS_KEPT = 1024


@lru_cache(maxsize=TEXTS_KEPT)
def carries_format(text: str) -> bool:
    """Whether :func:`find_secrets` finds a token format in ``text``. Memoised by the text (a
    pure function of it): the masker asks it of every text of every finding, with a few
    searches of the whole text each, and the server's lint after an edit shows mostly the
    findings, word for word, that the one before showed."""
    return bool(find_secrets(text))


@lru_cache(maxsize=LINE_CACHE_SIZE)
def _line_secrets(line: str) -> tuple[tuple[str, int, int], ...]:
    """(kind, start, end) of the credentials in one line (no newline), offsets in the line; a
    later format's match of the same span replaces an earlier one's."""
    found: dict[tuple[int, int], str] = {}
    own, plugin = prefiltered(line)
    if own:
        for kind, rx in OWN_FORMATS:
            for m in rx.finditer(line):
                g = 1 if m.groups() else 0
                if not PLACEHOLDER.match(m.group(g)):
                    found[m.span(g)] = kind
    if plugin:
        for kind, rx in _detectors():
            for m in rx.finditer(line):
                # a group of secret length is the value inside its context (AWS secret key);
                # a short one is a prefix (``ghp`` of a GitHub token): keep the whole match
                g = 1 if m.groups() and len(m.group(1) or "") >= 16 else 0
                s, e = m.span(g)
                if e - s >= 8 and not PLACEHOLDER.match(line[s:e]):
                    found[(s, e)] = kind
    return tuple((kind, s, e) for (s, e), kind in found.items())


def mask(value: str) -> str:
    """``hf_abc…`` -> ``hf_****``: keep a short known prefix, hide the rest."""
    m = KEPT_PREFIX.match(value)
    return (m.group(1) if m else "") + "****"


@lru_cache(maxsize=4096)  # (asked for every expansion a rule follows: names repeat)
def credential_name(name: str) -> bool:
    """``HF_TOKEN``, ``WANDB_API_KEY``, ``redis_password`` …, but not ``HF_TOKEN_FILE``,
    ``SECRETS_DIR``, ``TOKENIZER`` or ``MAX_NEW_TOKENS``."""
    return bool(CRED_NAME.search(name)) and not NOT_CRED_NAME.search(name) and \
        not QUANTITY.search(name)


def random_literal(v: str) -> bool:
    """A literal that looks like a real key: not a placeholder, 16+ characters mixing letters and
    digits, 8+ distinct characters, no blanks, slashes or ``$``."""
    return not PLACEHOLDER.match(v) and len(v) >= 16 and bool(re.search(r"[0-9]", v)) and \
        bool(re.search(r"[A-Za-z]", v)) and len(set(v)) >= 8 and not re.search(r"[\s/$]", v)


def credential_values(job: Job) -> list[Secret]:
    """Secrets in the job: format matches plus literal values of credential-named assignments
    (computed once per job), sorted by offset."""
    return job.derived(_credential_values)


def _credential_values(job: Job) -> list[Secret]:
    secrets = script_secrets(job.source.text)
    for a in job.script.assignments:
        if a.value is None or a.value.value is None or not credential_name(a.name) or \
                a.origin is not None:  # a sourced file's: not in this text (imported_secrets)
            continue
        v = a.value.value
        if not random_literal(v):
            continue
        s = a.value.start + (1 if a.value.text[:1] in "\"'" else 0)
        e = s + len(v)
        if not any(x.start < e and s < x.end for x in secrets):
            secrets.append(Secret(f"literal {a.name}", s, e))
    return sorted(secrets, key=lambda x: x.start)


def imported_secrets(job: Job) -> set[str]:
    """The secret values of the files the script sources (shell/sourced.py): token formats in
    their text and random literals of credential-named assignments. They are not in the
    script's text, but a message or ``show`` may carry them: the masker masks them too."""
    out: set[str] = set()
    texts = {id(a.origin.text): a.origin.text for a in job.script.assignments if a.origin}
    for text in texts.values():
        out.update(text[s.start:s.end] for s in find_secrets(text))
    for a in job.script.assignments:
        if a.origin is not None and a.value is not None and a.value.value is not None and \
                credential_name(a.name) and random_literal(a.value.value):
            out.add(a.value.value)
    return out


@dataclass(unsafe_hash=True)  # not frozen (its __init__ costs ~3x; built per lint), never mutated once built
class Masker:
    """Masks the detected values of one text wherever they reappear, plus any token format.

    ``values`` are the secret values (longest first, so a value inside another is masked as
    part of the longer one).
    """

    values: tuple[str, ...] = ()

    @classmethod
    def of(cls, text: str, secrets: Iterable[Secret], extra: Iterable[str] = ()) -> Masker:
        """The masker for ``text`` given the secrets detected in it (:func:`credential_values`
        or :func:`find_secrets`), plus ``extra`` values known from elsewhere (an earlier
        lint)."""
        values = {text[s.start:s.end] for s in secrets} | set(extra)
        return cls(tuple(sorted((v for v in values if v), key=lambda v: (-len(v), v))))

    def text(self, s: str) -> str:
        """``s`` with every known value and every token format in it masked (``hf_****``)."""
        for v in self.values:
            if v in s:
                s = s.replace(v, mask(v))
        for sec in reversed(find_secrets(s)):
            s = s[:sec.start] + mask(s[sec.start:sec.end]) + s[sec.end:]
        return s

    def carries(self, s: str) -> bool:
        """Whether ``s`` holds a known value or a token format."""
        return any(v in s for v in self.values) or carries_format(s)

    def edits(self, text: str, edits: Sequence[Edit]) -> list[Edit] | None:
        """``edits`` (offsets into ``text``) as they may be shown and sent to an editor: an edit
        whose new text carries a secret is split into the character-level changes it makes
        (a token it only copies stays out of the edit); None when a secret would still travel
        in the new text (the fix then cannot be shown without it)."""
        out: list[Edit] = []
        for e in edits:
            if not self.carries(e.new_text):
                out.append(e)
                continue
            old = text[e.start:e.end]
            sm = difflib.SequenceMatcher(None, old, e.new_text, autojunk=False)
            for tag, i1, i2, j1, j2 in sm.get_opcodes():
                if tag == "equal":
                    continue
                part = Edit(e.start + i1, e.start + i2, e.new_text[j1:j2])
                if self.carries(part.new_text):
                    return None
                out.append(part)
        return out

    def diagnostic(self, d: Diagnostic, text: str) -> Diagnostic:
        """``d`` as every face may show it: message, related notes and fix titles masked; each
        fix's edits as :meth:`edits` gives them, and a fix that cannot be shown without a secret
        left out (``--fix`` still applies it from the unmasked result)."""
        if not self.values and not any(self.carries(s) for s in _strings(d)):
            return d
        fixes = []
        for f in d.fixes:
            edits = self.edits(text, f.edits)
            if edits is not None:
                fixes.append(Fix(self.text(f.message), tuple(edits), f.safe))
        return replace(d, message=self.text(d.message),
                       related=[Related(r.start, r.end, self.text(r.message)) for r in d.related],
                       fixes=fixes)


def _strings(d: Diagnostic) -> list[str]:
    """Every text a finding carries (message, notes, fix titles and inserted texts)."""
    return [d.message, *(r.message for r in d.related),
            *(s for f in d.fixes for s in (f.message, *(e.new_text for e in f.edits)))]
