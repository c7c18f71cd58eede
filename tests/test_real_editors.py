"""Real editors against the real server: headless Neovim (Debian's 0.7) and Emacs 28 with eglot
open case files from ../shared/cases, show the server's diagnostics, and apply a quick fix
through the editor's own workspace-edit code (tests/editors/)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import require_tool
from lsp_support import CASES, ROOT
from sbatch_lsp.fixer import apply_edits
from sbatch_lsp.lint import lint

# each editor run has its own 300 s bound; the default per-test timeout would cut it short
pytestmark = pytest.mark.timeout(900)

EDITORS = ROOT / "tests" / "editors"
def _cases_with_a_fix():
    """Case files with a finding that has a fix: (case, code, its first fix). The finding is
    the first whose code no other finding of the file has: the editor scripts find it by code,
    and editors order findings of one code as they like (eglot lists line 9 before line 8)."""
    out = []
    for name in ("F001.sbatch", "F013.sbatch", *sorted(p.name for p in CASES.glob("F*.sbatch"))):
        if len(out) == 2:
            break
        if any(c == name for c, _, _ in out):
            continue
        text = (CASES / name).read_text()
        diags = lint(text, name).diagnostics
        codes = [d.code for d in diags]
        for d in diags:
            if d.fixes and codes.count(d.code) == 1:
                out.append((name, d.code, d.fixes[0]))
                break
    return out


def run_editor(argv, tmp_path, case: str, code: str, fix) -> tuple[str, str, str]:
    """Run the editor on a copy of ``case``; (stdout, diagnostics part, fixed text)."""
    work = tmp_path / "work"
    work.mkdir()
    (work / case).write_text((CASES / case).read_text())  # writable, as a user's file
    title = fix.message if fix.safe else f"{fix.message} (unsafe fix)"
    env = dict(os.environ, SBATCH_LSP_PYTHON=sys.executable, SBATCH_CODE=code,
               SBATCH_ACTION=title, XDG_CACHE_HOME=str(tmp_path), XDG_DATA_HOME=str(tmp_path),
               XDG_STATE_HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path), HOME=str(tmp_path))
    r = subprocess.run(argv + [str(work / case)], cwd=work, capture_output=True, text=True,
                       timeout=300, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout
    assert "TEXT-BEGIN\n" in out, out
    text = out.split("TEXT-BEGIN\n", 1)[1].rsplit("TEXT-END", 1)[0]
    # the file on disk is untouched: the fix lives in the editor's buffer
    assert (work / case).read_text() == (CASES / case).read_text()
    return out, out.split("ACTION", 1)[0], text


CASES_WITH_FIX = _cases_with_a_fix()


@pytest.mark.parametrize("case,code,fix", CASES_WITH_FIX, ids=[c[0] for c in CASES_WITH_FIX])
def test_neovim_shows_findings_and_applies_a_quick_fix(tmp_path, case, code, fix):
    nvim = require_tool("nvim")
    out, diags, text = run_editor([nvim, "--headless", "--clean", "-n", "-u",
                                   str(EDITORS / "init.lua")], tmp_path, case, code, fix)
    original = (CASES / case).read_text()
    engine = lint(original, case).diagnostics
    shown = [line.split()[2] for line in diags.splitlines() if line.startswith("DIAG ")]
    assert sorted(shown) == sorted(d.code for d in engine)
    assert f"ACTION Disable {code} for this line" in out
    # Neovim's buffer lines lose the final newline
    assert text.rstrip("\n") == apply_edits(original, list(fix.edits)).rstrip("\n")
    after = [line.split()[2] for line in out.splitlines() if line.startswith("AFTER ")]
    assert after.count(code) == shown.count(code) - 1


@pytest.mark.parametrize("case,code,fix", CASES_WITH_FIX, ids=[c[0] for c in CASES_WITH_FIX])
def test_emacs_eglot_shows_findings_and_applies_a_quick_fix(tmp_path, case, code, fix):
    emacs = require_tool("emacs")
    elpa = Path(os.environ.get("ELPA_DIR", "/usr/share/emacs/site-lisp/elpa"))
    if not list(elpa.glob("eglot*")):
        require_tool("eglot (elpa-eglot)")  # not a program: skips locally, fails under CI
    out, diags, text = run_editor([emacs, "--batch", "-Q", "-l", str(EDITORS / "eglot-check.el")],
                                  tmp_path, case, code, fix)
    original = (CASES / case).read_text()
    engine = lint(original, case).diagnostics
    shown = [line.split()[2] for line in diags.splitlines() if line.startswith("DIAG ")]
    assert sorted(shown) == sorted(d.code for d in engine)
    assert text == apply_edits(original, list(fix.edits))
    after = [line.split()[2] for line in out.splitlines() if line.startswith("AFTER ")]
    assert after.count(code) == shown.count(code) - 1


# ---- the README's editor snippets, run as a user would put them in their configuration --------

README = (ROOT / "README.md").read_text()


def _snippet(lang: str, marker: str) -> str:
    import re

    return next(b for b in re.findall(rf"```{lang}\n(.*?)```", README, re.S) if marker in b)


def _user_env(tmp_path) -> dict:
    """PATH starts with this interpreter's folder, where `sbatch-lsp` is installed."""
    bindir = str(Path(sys.executable).parent)
    return dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""),
                XDG_CACHE_HOME=str(tmp_path), XDG_DATA_HOME=str(tmp_path),
                XDG_STATE_HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path), HOME=str(tmp_path))


def _user_file(tmp_path) -> Path:
    """F001 with an HF cache (SB402 material is not needed: `ignore` must simply hold)."""
    path = tmp_path / "job.sbatch"
    path.write_text((CASES / "F001.sbatch").read_text())
    return path


def test_readme_neovim_snippet(tmp_path):
    nvim = require_tool("nvim")
    init = tmp_path / "init.lua"
    init.write_text(_snippet("lua", "sbatch-lsp"))
    harness = ("lua local ok = vim.wait(60000, function() return #vim.diagnostic.get(0) > 0 end, 50);"
               " for _, d in ipairs(vim.diagnostic.get(0)) do io.stdout:write('DIAG ', "
               "tostring(d.code or (d.user_data and d.user_data.lsp and d.user_data.lsp.code)), "
               "'\\n') end; io.stdout:flush(); vim.lsp.stop_client(vim.lsp.get_active_clients());"
               " vim.wait(3000, function() return #vim.lsp.get_active_clients() == 0 end, 50);"
               " vim.cmd(ok and 'qa!' or 'cq 2')")
    path = _user_file(tmp_path)
    r = subprocess.run([nvim, "--headless", "--clean", "-n", "-u", str(init), "-c", harness,
                        str(path)], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                       env=_user_env(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    shown = sorted(x.split()[1] for x in r.stdout.splitlines() if x.startswith("DIAG "))
    assert shown == sorted(d.code for d in lint(path.read_text(), "job.sbatch").diagnostics)


def test_readme_emacs_snippet(tmp_path):
    emacs = require_tool("emacs")
    elpa = Path(os.environ.get("ELPA_DIR", "/usr/share/emacs/site-lisp/elpa"))
    if not list(elpa.glob("eglot*")):
        require_tool("eglot (elpa-eglot)")
    init = tmp_path / "init.el"
    init.write_text(f'(dolist (d (file-expand-wildcards "{elpa}/*")) (add-to-list (quote load-path) d))\n'
                    + _snippet("elisp", "sbatch-lsp"))
    path = _user_file(tmp_path)
    # as a user would: visit the file (sh-mode-hook runs eglot-ensure), then let commands run
    harness = ('(progn (find-file "%s") (run-hooks (quote post-command-hook)) (require (quote flymake))'
               ' (let ((n 0)) (while (and (< n 1200) (null (flymake-diagnostics)))'
               ' (accept-process-output nil 0.05) (flymake-start) (setq n (1+ n))))'
               ' (dolist (d (flymake-diagnostics)) (princ (format "DIAG %%s\\n"'
               ' (plist-get (cdr (assoc (quote eglot-lsp-diag) (flymake-diagnostic-data d))) :code))))'
               ' (let ((ok (flymake-diagnostics))) (eglot-shutdown (eglot-current-server))'
               ' (kill-emacs (if ok 0 2))))') % path
    r = subprocess.run([emacs, "--batch", "-Q", "-l", str(init), "--eval", harness], cwd=tmp_path,
                       capture_output=True, text=True, timeout=300, env=_user_env(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    shown = sorted(x.split()[1] for x in r.stdout.splitlines() if x.startswith("DIAG "))
    assert shown == sorted(d.code for d in lint(path.read_text(), "job.sbatch").diagnostics)


def test_readme_helix_snippet_is_valid_toml():
    import tomllib

    conf = tomllib.loads(_snippet("toml", "language-server.sbatch-lsp"))
    assert conf["language-server"]["sbatch-lsp"]["command"] == "sbatch-lsp"
    assert "sbatch-lsp" in conf["language"][0]["language-servers"]
