import os
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))


def require_tool(name: str) -> str:
    """Return the path of the external program *name* (e.g. ``"sbatch"``, ``"nvim"``).

    Locally a missing tool skips the test; under CI (``CI=true``) it fails, because ``.ci/run``
    installs every tool a test needs and a skip there would hide a tier that never ran.
    """
    path = shutil.which(name)
    if path is None:
        message = f"{name} is not installed (.ci/setup.d installs it)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    return path


def check_builtin_schema(schema: str, path: Path) -> None:
    """Validate ``path`` with check-jsonschema's vendored ``schema`` (``vendor.github-actions``,
    ``vendor.github-workflows``, ``vendor.gitlab-ci``, …); fail with its report."""
    import subprocess

    r = subprocess.run([str(Path(sys.executable).with_name("check-jsonschema")),
                        "--builtin-schema", schema, str(path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
