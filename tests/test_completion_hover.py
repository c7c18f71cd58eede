"""The server reads the engine: every completion item, inserted with each snippet placeholder at
its default, is something the linter accepts under the same profile; hover reads the engine's
directive block (a ``#SBATCH`` line in a heredoc is data) and real suppression comments."""
from __future__ import annotations

import re

import pytest

from sbatch_lsp.config import Config, Profile
from sbatch_lsp.lint import lint
from sbatch_lsp.server.completion import complete
from sbatch_lsp.server.hover import hover_text
from sbatch_lsp.source import Source
from sbatch_lsp.values import EXAMPLES, check_value

#: the releases whose option tables differ, oldest supported first, and the newest
PROFILES = [Profile(slurm_version=v, pyxis=p) for v in ("22.05", "23.02", "24.05", "25.05",
                                                        "26.05") for p in (False, True)]
REJECTED = {"SB103", "SB105", "SB112"}


def _expand(snippet: str) -> str:
    """A snippet with each placeholder at its default: ``${1|a,b|}`` -> ``a``, ``${1:x}`` ->
    ``x``, escapes removed (LSP snippet grammar)."""
    out = re.sub(r"\$\{\d+\|((?:\\.|[^,|\\])*)[,|][^}]*\}", lambda m: m.group(1), snippet)
    out = re.sub(r"\$\{\d+:((?:\\.|[^}\\])*)\}", lambda m: m.group(1), out)
    return re.sub(r"\\(.)", r"\1", out)


def _rejections(text: str, config: Config) -> list[str]:
    res = lint(text, "job.sbatch", config)
    return [f"{d.code} {d.message}" for d in res.diagnostics if d.code in REJECTED]


def _items(line: str, config: Config):
    return complete(line, 0, lambda c: c, len(line), config, snippets=True)


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: f"{p.slurm_version}-pyxis{p.pyxis}")
def test_every_option_completion_is_accepted(profile):
    config = Config(profile=profile)
    items = _items("#SBATCH ", config)
    assert len(items) > 100
    lines = [_expand(i.text_edit.new_text) for i in items]
    assert not [ln for ln in lines if "${" in ln or ln.endswith("=")]
    # one script per item: a finding must name the line that holds it
    bad = {}
    for line in lines:
        found = _rejections(f"#!/bin/bash\n#SBATCH {line}\necho hi\n", config)
        if found:
            bad[line] = found
    assert bad == {}


@pytest.mark.parametrize("profile", PROFILES[::2], ids=lambda p: p.slurm_version)
def test_every_value_completion_is_accepted(profile):
    config = Config(profile=profile)
    options = {i.label for i in _items("#SBATCH ", config) if i.label.startswith("--")}
    offered = 0
    for option in sorted(options):
        for item in _items(f"#SBATCH {option}=", config):
            offered += 1
            line = f"{option}={item.text_edit.new_text}"
            assert _rejections(f"#!/bin/bash\n#SBATCH {line}\necho hi\n", config) == [], line
    assert offered > 50


def test_completion_follows_the_slurm_version():
    old = Config(profile=Profile(slurm_version="22.05"))
    new = Config(profile=Profile(slurm_version="24.05"))
    assert "topo" not in {i.label for i in _items("#SBATCH --exclusive=", old)}
    assert "topo" in {i.label for i in _items("#SBATCH --exclusive=", new)}
    sharing = "one-task-per-sharing"
    assert sharing not in {i.label for i in _items("#SBATCH --gres-flags=", old)}
    assert sharing in {i.label for i in _items("#SBATCH --gres-flags=", new)}


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_each_example_value_is_valid_on_every_release(name):
    for version in ("22.05", "23.02", "24.05", "26.05"):
        assert check_value(name, EXAMPLES[name], version) is None, (name, version)


# ------------------------------------------------------------------------------ hover

HEREDOC = """#!/bin/bash
#SBATCH --nodes=2
echo start
cat > inner.sbatch <<'EOF'
#!/bin/bash
#SBATCH --time=10
EOF
#SBATCH --mem=4G
"""


def _hover(text: str, line: int, col: int) -> str | None:
    src = Source(text)
    found = hover_text(src, src.line_starts[line] + col, Config())
    return found[0] if found else None


def test_hover_on_a_heredoc_directive_says_data_not_ignored():
    body = _hover(HEREDOC, 5, 10)
    assert body is not None and "**--time**" in body
    assert "here-document" in body and "never reads it" not in body


def test_hover_on_a_late_directive_says_it_is_ignored():
    body = _hover(HEREDOC, 7, 10)
    assert body is not None and "**--mem**" in body and "never reads it" in body


def test_hover_agrees_with_the_linter_about_the_heredoc_line():
    codes = [(d.code, Source(HEREDOC).line_of(d.start)) for d in lint(HEREDOC).diagnostics]
    assert ("SB101", 7) in codes and ("SB101", 5) not in codes


def test_hover_on_a_suppression_reads_real_comments_only():
    text = ("#!/bin/bash\n#SBATCH --nodes=1\n# sbatch-lint: disable=SB201,bogus-name\necho hi\n"
            "cat <<EOF\n# sbatch-lint: disable=SB201\nEOF\n")
    col = text.split("\n")[2].index("SB201")
    real = _hover(text, 2, col + 1)
    assert real is not None and "**SB201** `torchrun-per-task`" in real
    unknown = _hover(text, 2, text.split("\n")[2].index("bogus") + 1)
    assert unknown is not None and "`bogus-name` names no rule" in unknown
    assert _hover(text, 5, col + 1) is None  # a heredoc line: no suppression, no directive
