"""SB5xx: credentials in job scripts.

Slurm keeps a copy of every batch script (``scontrol write batch_script``, accounting), so a
literal token leaks to admins and accounting even from a private repository. Token formats come
from detect-secrets' plugins; Hugging Face and W&B keys, which it lacks, are added here.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from ..shell.model import DOUBLE, UNQUOTED
from . import Edit, Fix, Related, Severity, finding, rule

#: a credential word as a whole ``_``-separated part of a name (HF_TOKEN, DOCKER_PASSWD), not
#: inside another word (TOKENIZER, MAX_NEW_TOKENS)
CRED_NAME = re.compile(r"(?:^|_)(TOKEN|API_?KEY|SECRET|PASSWORD|PASSWD|PASS|ACCESS_KEY|"
                       r"PRIVATE_KEY|AUTH)(?:_|$)", re.IGNORECASE)
#: parts that make a credential-looking name a count or a setting (NUM_TOKENS, TOKEN_LEN)
QUANTITY = re.compile(r"(?:^|_)(MAX|MIN|NUM|LEN|LENGTH|COUNT|PER|SIZE|LIMIT|IDS?|TYPES?)(?:_|$)",
                      re.IGNORECASE)
OWN_FORMATS = [
    ("Hugging Face token", re.compile(r"\bhf_[A-Za-z0-9]{30,}\b")),
    ("W&B API key", re.compile(r"(?:WANDB_API_KEY\s*=\s*['\"]?|wandb\s+login\s+(?:--relogin\s+)?)"
                               r"([0-9a-f]{40}|[A-Za-z0-9_-]{40,86})\b")),
]
#: names that hold where a credential is, not the credential (``HF_TOKEN_FILE``, ``…_PATH``);
#: SB501's own fix reads ``${HF_TOKEN_FILE:-…}``, which must not raise SB502
NOT_CRED_NAME = re.compile(r"(_FILE|_PATH|_DIR|_HOME)$", re.IGNORECASE)
PLACEHOLDER = re.compile(r"^(<.*>|\$.*|.*your[_-]?(token|key|secret).*|.*_here|x{6,}|\*{3,}|"
                         r"changeme|dummy|example.*|.*\.\.\..*|none|null|)$", re.IGNORECASE)
PLUGINS = ("aws.AWSKeyDetector", "github_token.GitHubTokenDetector",
           "gitlab_token.GitLabTokenDetector", "openai.OpenAIDetector", "slack.SlackDetector",
           "stripe.StripeDetector", "private_key.PrivateKeyDetector",
           "pypi_token.PypiTokenDetector", "npm.NpmDetector", "sendgrid.SendGridDetector",
           "discord.DiscordBotTokenDetector", "telegram_token.TelegramBotTokenDetector",
           "twilio.TwilioKeyDetector", "jwt.JwtTokenDetector", "mailchimp.MailchimpDetector",
           "azure_storage_key.AzureStorageKeyDetector", "artifactory.ArtifactoryDetector")
#: a line can hold one of our own formats only if it says this
OWN_PREFILTER = re.compile(r"hf_|wandb", re.IGNORECASE)
#: a substring every detect-secrets format above needs (one alternative per denylist pattern;
#: tests/test_secrets.py checks it against strings generated from the plugins' own patterns).
#: Importing detect-secrets costs ~250 ms, so it is loaded only for lines that pass this.
PLUGIN_PREFILTER = re.compile(
    r"A3T|ABIA|ACCA|AKIA|ASIA|(?i:aws|xox|hooks\.slack)|gh[pousr]_|GR1348941|sk-|k_live_|"
    r"gl(?:pat|dt|ft|soat|rt|cbt|imt|ptt|agent|oas)-|"
    r"PRIVATE KEY|PuTTY|pypi-|_authToken|SG\.|\.[A-Za-z\d_-]{6}\.|\d{8,10}:|AC[a-z0-9]{32}|"
    r"SK[a-z0-9]{32}|eyJ|-us\d|AccountKey=|AKC|AP[\dA-F]")


@dataclass(frozen=True)
class Secret:
    """A detected credential: kind and the character span of its value (never printed)."""

    kind: str
    start: int
    end: int


@lru_cache(maxsize=1)
def _detectors() -> list[tuple[str, re.Pattern]]:
    """(kind, regex) pairs from detect-secrets' format plugins (imported lazily: start-up)."""
    import importlib

    out = []
    for spec in PLUGINS:
        mod, cls = spec.rsplit(".", 1)
        try:
            plugin = getattr(importlib.import_module(f"detect_secrets.plugins.{mod}"), cls)
        except (ImportError, AttributeError):
            continue
        for rx in getattr(plugin, "denylist", ()):
            out.append((plugin.secret_type, rx))
    return out


def find_secrets(text: str) -> list[Secret]:
    """Every credential value in ``text``: known token formats anywhere (comments included) and
    literal values assigned to credential-named variables. Spans are character offsets."""
    found: dict[tuple[int, int], Secret] = {}
    offset = 0
    for line in text.split("\n"):
        if OWN_PREFILTER.search(line):
            for kind, rx in OWN_FORMATS:
                for m in rx.finditer(line):
                    g = 1 if m.groups() else 0
                    s, e = m.span(g)
                    found[(offset + s, offset + e)] = Secret(kind, offset + s, offset + e)
        if PLUGIN_PREFILTER.search(line):
            for kind, rx in _detectors():
                for m in rx.finditer(line):
                    # a group of secret length is the value inside its context (AWS secret key);
                    # a short one is a prefix (``ghp`` of a GitHub token): keep the whole match
                    g = 1 if m.groups() and len(m.group(1) or "") >= 16 else 0
                    s, e = m.span(g)
                    if e - s >= 8 and not PLACEHOLDER.match(line[s:e]):
                        found[(offset + s, offset + e)] = Secret(kind, offset + s, offset + e)
        offset += len(line) + 1
    # drop spans inside other spans
    spans = sorted(found.values(), key=lambda x: (x.start, -x.end))
    out: list[Secret] = []
    for sec in spans:
        if out and sec.start < out[-1].end:
            continue
        out.append(sec)
    return out


def mask(value: str) -> str:
    """``hf_abc…`` -> ``hf_****``: keep a short known prefix, hide the rest."""
    m = re.match(r"(hf_|gh[pousr]_|github_pat_|glpat-|sk-|xox[abpr]-|AKIA|npm_|pypi-)", value)
    return (m.group(1) if m else "") + "****"


def _credential_name(name: str) -> bool:
    """``HF_TOKEN``, ``WANDB_API_KEY``, ``redis_password`` …, but not ``HF_TOKEN_FILE``,
    ``SECRETS_DIR``, ``TOKENIZER`` or ``MAX_NEW_TOKENS``."""
    return bool(CRED_NAME.search(name)) and not NOT_CRED_NAME.search(name) and \
        not QUANTITY.search(name)


def _random_literal(v: str) -> bool:
    """A literal that looks like a real key: not a placeholder, 16+ characters mixing letters and
    digits, 8+ distinct characters, no blanks, slashes or ``$``."""
    return not PLACEHOLDER.match(v) and len(v) >= 16 and bool(re.search(r"[0-9]", v)) and \
        bool(re.search(r"[A-Za-z]", v)) and len(set(v)) >= 8 and not re.search(r"[\s/$]", v)


def credential_values(job) -> list[Secret]:
    """Secrets in the job: format matches plus literal credential-named assignments (computed
    once per job)."""
    return job.derived(_credential_values)


def _credential_values(job) -> list[Secret]:
    secrets = list(find_secrets(job.source.text))
    for a in job.script.assignments:
        if a.value is None or a.value.value is None or not _credential_name(a.name):
            continue
        v = a.value.value
        if not _random_literal(v):
            continue
        s = a.value.start + (1 if a.value.text[:1] in "\"'" else 0)
        e = s + len(v)
        if not any(x.start < e and s < x.end for x in secrets):
            secrets.append(Secret(f"literal {a.name}", s, e))
    return sorted(secrets, key=lambda x: x.start)


@rule("SB501", "hardcoded-credential", Severity.ERROR,
      "a literal token in the script (git and Slurm's stored job script keep copies)")
def hardcoded_credential(job):
    for sec in credential_values(job):
        fixes = []
        a = next((a for a in job.script.assignments if a.value is not None and
                  a.value.start <= sec.start and sec.end <= a.value.end), None)
        if a is not None and a.value.value is not None and \
                sec.end - sec.start == len(a.value.value):
            name = a.name
            file = ("${HF_TOKEN_FILE:-$HOME/.cache/huggingface/token}" if name.startswith("HF")
                    else f"$HOME/.secrets/{name.lower()}")
            fixes.append(Fix(f"read {name} from a file at run time",
                             (Edit(a.value.start, a.value.end, f"\"$(cat \"{file}\")\""),),
                             safe=False))
        yield finding("SB501", sec.start, sec.end,
                      f"a {sec.kind} is written into the script: git history and Slurm's stored "
                      "copy of the job script keep it; revoke it now and read it at run time from "
                      "a 0600 file or the submitting environment", fixes=fixes)


XTRACE_SHEBANG = re.compile(r"#!\S*(?:\s+\S*)?\s+-[A-Za-z]*x")


def _xtrace_switch(args: list) -> bool | None:
    """True when ``set ARGS`` turns xtrace on (``-x``, ``-Eeuxo``, ``-o xtrace``), False when it
    turns it off (``+x``, ``+o xtrace``), None when it leaves it alone."""
    for k, a in enumerate(args):
        if not a:
            continue
        if a in ("-o", "+o") and k + 1 < len(args) and args[k + 1] == "xtrace":
            return a == "-o"
        if re.fullmatch(r"[-+][A-Za-z]*x[A-Za-z]*", a):
            return a[0] == "-"
    return None


@rule("SB502", "exposed-credential", Severity.WARNING,
      "a credential printed by `set -x`, passed on a command line, or expanded into `bash -c`")
def exposed_credential(job):
    assigned_by: dict[int, list] = {}
    for a in job.script.assignments:
        if a.command is not None and a.value is not None and _credential_name(a.name) and (
                a.value.value is None or _random_literal(a.value.value)):
            assigned_by.setdefault(id(a.command), []).append(a)
    # where xtrace was turned on: (start, end), or None while it is off
    first = job.source.line_text(0)
    xtrace = (0, len(first)) if XTRACE_SHEBANG.match(first) else None
    for cmd in sorted(job.script.commands, key=lambda c: c.start):
        argv = cmd.argv()
        if argv and argv[0] == "set":
            switch = _xtrace_switch(argv[1:])
            if switch is not None:
                xtrace = (cmd.start, cmd.end) if switch else None
        if xtrace is not None:
            # xtrace prints assignments with their expanded value (``+ export HF_TOKEN=hf_…``):
            # a token read at run time (``"$(< file)"``, ``$OTHER``) is printed into the job's
            # output file, and so is a literal one (SB501 reports the literal itself). The range
            # is the name, so SB501's fix (literal -> ``"$(cat …)"``) keeps the same finding
            # instead of creating a new one.
            for a in assigned_by.get(id(cmd), ()):
                yield finding("SB502", a.start, a.start + len(a.name),
                              f"`set -x` prints this assignment with the expanded value of "
                              f"{a.name} into the job's output file; turn xtrace off around it "
                              "(`set +x` … `set -x`)",
                              related=[Related(*xtrace, "xtrace is on from here")])
        if not cmd.words or argv[0] in ("export", "declare", "local", "readonly", "unset"):
            continue
        if argv[0] in ("[", "[[", "test") and xtrace is None:
            continue  # a builtin test: no process, nothing in `ps`
        for w in cmd.words[1:]:
            for e in w.expansions:
                if not e.name or not _credential_name(e.name) or e.quoting not in (UNQUOTED,
                                                                                    DOUBLE):
                    continue
                why = []
                related = []
                if xtrace is not None:
                    why.append("`set -x` prints the expanded value into the job's output file")
                    related.append(Related(*xtrace, "xtrace is on from here"))
                why.append("a command-line argument is visible to every user in `ps`")
                yield finding("SB502", e.start, e.end,
                              f"${e.name} is passed on the command line: " + "; ".join(why)
                              + "; let the tool read it from the environment or a file",
                              related=related)
