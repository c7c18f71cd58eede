"""The README's configuration snippets load as the README says."""
import re
from pathlib import Path

from sbatch_lsp.config import load_file
from sbatch_lsp.diagnostics import Severity

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()
BLOCKS = re.findall(r"```toml\n(.*?)```", README, re.S)


def test_pyproject_snippet(tmp_path):
    block = next(b for b in BLOCKS if b.startswith("# pyproject.toml"))
    (tmp_path / "pyproject.toml").write_text(block)
    cfg = load_file(tmp_path / "pyproject.toml")
    assert cfg.profile.slurm_version == "22.05" and cfg.severity["SB204"] is Severity.ERROR
    assert not cfg.enabled("SB402") and cfg.enabled("SB201")


def test_sbatch_lint_toml_snippet_extends_a_site_profile(tmp_path):
    block = next(b for b in BLOCKS if b.startswith("# .sbatch-lint.toml"))
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sbatch-lint.toml").write_text(
        'ignore = ["SB203"]\n[profile]\nslurm-version = "23.02"\nshared-prefixes = ["/gpfs"]\n')
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / ".sbatch-lint.toml").write_text(block)
    cfg = load_file(repo / ".sbatch-lint.toml")
    assert not cfg.enabled("SB203") and not cfg.enabled("SB402")  # ignore lists add up
    assert cfg.profile.shared_prefixes == ("/lustre",)  # profile keys replace
    assert cfg.profile.slurm_version == "23.02"  # the rest comes from the base


def test_repository_snippet_excludes_ignores_and_pins_the_version(tmp_path):
    import re as _re

    from sbatch_lsp import __version__
    from sbatch_lsp.config import ConfigError

    block = next(b for b in BLOCKS if b.startswith("# pyproject.toml at the repository root"))
    spec = _re.search(r'required-version = "([^"]+)"', block).group(1)
    (tmp_path / "pyproject.toml").write_text(block)
    cfg = load_file(tmp_path / "pyproject.toml")  # this release satisfies the README's pin
    assert cfg.required_version == ",".join(sorted(spec.split(",")))
    assert cfg.excluded(tmp_path / "third_party" / "kit" / "a.sbatch")
    assert cfg.excluded(tmp_path / "jobs" / "generated" / "sweep.sbatch")
    assert not cfg.excluded(tmp_path / "jobs" / "generated" / "keep.sbatch")
    assert not cfg.excluded(tmp_path / "jobs" / "train.sbatch")
    assert not cfg.for_path(tmp_path / "legacy" / "2023" / "a.sbatch").enabled("SB201")
    assert cfg.for_path(tmp_path / "jobs" / "a.sbatch").enabled("SB201")
    # a release outside the pin is refused, naming both versions
    (tmp_path / "pyproject.toml").write_text(block.replace(spec, f"!={__version__}"))
    try:
        load_file(tmp_path / "pyproject.toml")
        raise AssertionError("a mismatched required-version loaded")
    except ConfigError as exc:
        assert __version__ in str(exc) and "required-version" in str(exc)
