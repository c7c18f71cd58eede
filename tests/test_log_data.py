"""The real failure logs of tests/logs (issue 12, item 6) are well-formed data for the triage
engine's measurements: every ``<ID>.log`` has its ``<ID>.json`` with the documented keys, the
root line it names exists and says what the metadata quotes, and no log carries a credential or
a personal home directory. tests/logs/README.md describes the set and the metadata."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from sbatch_lsp.secrets import find_secrets

LOGS = Path(__file__).resolve().parent / "logs"
KEYS = {"id", "source", "summary", "cause", "category_hint", "root_cause", "first_failure",
        "notes"}
#: a log is trimmed to what matters: "at most a few hundred lines"
MAX_LINES = 400
#: home directories in quoted paths are renamed to this neutral user
NEUTRAL_USER = "user"
HOME = re.compile(r"/(?:home|Users|users)/([A-Za-z0-9._-]+)")
#: directories under /home that are not a person's name
NOT_A_USER = {NEUTRAL_USER, "ubuntu", "ec2-user", "runner", "jovyan", "ray", "admin"}


def _ids() -> list[str]:
    return sorted(p.stem for p in LOGS.glob("L*.json"))


def _meta(log_id: str) -> dict:
    return json.loads((LOGS / f"{log_id}.json").read_text(encoding="utf-8"))


def _lines(log_id: str) -> list[str]:
    return (LOGS / f"{log_id}.log").read_text(encoding="utf-8").splitlines()


def test_every_log_has_its_metadata_and_the_set_is_large_enough():
    logs = {p.stem for p in LOGS.glob("L*.log")}
    metas = set(_ids())
    assert logs == metas, (sorted(logs - metas), sorted(metas - logs))
    assert all(re.fullmatch(r"L\d{3}", i) for i in logs), sorted(logs)
    assert len(logs) >= 30  # issue 12, item 6


@pytest.mark.parametrize("log_id", _ids())
def test_metadata_shape(log_id):
    meta = _meta(log_id)
    assert set(meta) == KEYS, sorted(set(meta) ^ KEYS)
    assert meta["id"] == log_id
    assert re.fullmatch(r"https://\S+", meta["source"]), meta["source"]
    for key in ("summary", "cause", "category_hint", "notes"):
        assert isinstance(meta[key], str) and meta[key].strip(), key
    ff = meta["first_failure"]
    if ff is not None:
        assert set(ff) == {"rank", "node"}, ff
        assert ff["rank"] is None or (isinstance(ff["rank"], int) and ff["rank"] >= 0), ff
        assert ff["node"] is None or (isinstance(ff["node"], str) and ff["node"]), ff


@pytest.mark.parametrize("log_id", _ids())
def test_root_line_exists_and_says_the_quoted_text(log_id):
    root = _meta(log_id)["root_cause"]
    if root is None:
        return
    assert set(root) == {"line", "text"}, root
    lines = _lines(log_id)
    assert isinstance(root["line"], int) and 1 <= root["line"] <= len(lines), root
    assert root["text"].strip(), root
    assert root["text"] in lines[root["line"] - 1], (root, lines[root["line"] - 1])


@pytest.mark.parametrize("log_id", _ids())
def test_log_is_short_text_without_credentials_or_personal_homes(log_id):
    raw = (LOGS / f"{log_id}.log").read_bytes()
    text = raw.decode("utf-8")  # raises on anything but UTF-8
    assert text.strip(), "empty log"
    assert len(text.splitlines()) <= MAX_LINES
    assert find_secrets(text) == [], [s.kind for s in find_secrets(text)]
    users = {m.group(1) for m in HOME.finditer(text)} - NOT_A_USER
    assert not users, f"home directories not renamed to {NEUTRAL_USER!r}: {len(users)}"


def test_the_credential_check_can_fail():
    """The detector the set is checked with finds a Hugging Face token in log-shaped text."""
    fake = "[rank0]: + export HF_TOKEN=hf_" + "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3h"
    assert find_secrets(fake)
