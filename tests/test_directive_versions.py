"""Directive rules that follow the profile's slurm-version (the differential test covers 22.05
only; these read the Slurm source of later releases, slurm-facts.md §3)."""
import pytest

from sbatch_lsp.config import Config, Profile
from sbatch_lsp.lint import lint


def codes(text: str, version: str, pyxis=None) -> dict[str, str]:
    cfg = Config(profile=Profile(slurm_version=version, pyxis=pyxis))
    script = "#!/bin/bash\n" + text + "\nsrun hostname\n"
    return {d.code: d.severity.label for d in lint(script, "job.sbatch", cfg).diagnostics}


@pytest.mark.parametrize("line,version,code", [
    ("#SBATCH --tres-per-task=cpu=4", "22.05", "SB112"),  # added in 23.02
    ("#SBATCH --oom-kill-step", "24.05", "SB112"),  # added in 24.11
    ("#SBATCH --power=level", "24.05", "SB112"),  # removed in 24.05
    ("#SBATCH --exclusive=topo", "23.11", "SB105"),  # topo from 24.05
    ("#SBATCH --gres-flags=one-task-per-sharing", "23.02", "SB105"),  # from 24.05
    ("#SBATCH --nodes=1,5,9", "22.05", "SB105"),  # size lists from 23.02
    ("#SBATCH --requeue=expedite", "25.05", "SB105"),  # an argument from 25.11
    ("#SBATCH --get-user-env=10L", "25.05", "SB105"),  # no argument from 25.05
    ("#SBATCH --job-name=my\\ job", "23.11", "SB108"),  # `\ ` keeps the space from 24.05
    ("#SBATCH --output=log-%j-%b.out", "24.05", "SB113"),  # %b from 24.11
    ("#SBATCH --gpus-per-node=8\n#SBATCH --gres=gpu:8", "26.05", "SB106"),  # refused from 26.05
])
def test_refused_in_that_release(line, version, code):
    assert code in codes(line, version)


@pytest.mark.parametrize("line,version,code", [
    ("#SBATCH --tres-per-task=cpu=4", "23.02", "SB112"),
    ("#SBATCH --power=level", "23.11", "SB112"),
    ("#SBATCH --exclusive=topo", "24.05", "SB105"),
    ("#SBATCH --gres-flags=one-task-per-sharing", "24.05", "SB105"),
    ("#SBATCH --nodes=1,5,9", "23.02", "SB105"),
    ("#SBATCH --requeue=expedite", "25.11", "SB105"),
    ("#SBATCH --get-user-env=10L", "22.05", "SB105"),
    ("#SBATCH --job-name=my\\ job", "24.05", "SB108"),
    ("#SBATCH --output=log-%j-%b.out", "24.11", "SB113"),
    ("#SBATCH --gpus-per-node=8\n#SBATCH --gres=gpu:8", "25.11", "SB106"),
])
def test_accepted_in_that_release(line, version, code):
    assert code not in codes(line, version)


def test_srun_cpus_per_task_follows_the_version():
    line = "#SBATCH --cpus-per-task=8"
    assert codes(line, "22.05").get("SB207") == "warning"
    assert codes(line, "23.02").get("SB207") == "warning"
    assert "SB207" not in codes(line, "23.11")
    assert "SB207" not in codes(line, "21.08")


def test_pyxis_option_is_an_error_without_pyxis_and_not_an_unknown_option():
    found = codes("#SBATCH --container-image=nvcr.io/nvidia/pytorch:24.01-py3", "22.05",
                  pyxis=False)
    assert found.get("SB111") == "error" and "SB103" not in found


def test_effective_values_follow_prefixes_short_forms_and_duplicates():
    text = ("#!/bin/bash\n#SBATCH -N 2\n#SBATCH --ntasks-per-n=4\n#SBATCH --nodes=3\n"
            "#SBATCH hetjob\n#SBATCH --nodes=9\nsrun hostname\n")
    d = lint(text, "job.sbatch").job.directives
    eff = d.effective()
    assert eff["nodes"].value == "3" and eff["ntasks-per-node"].value == "4"
    assert d.value("nodes") == "3" and [u.value for u in d.all("nodes", 1)] == ["9"]
