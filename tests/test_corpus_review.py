"""The corpus precision review (issue 10 item 7): the verdict file's shape, and each false-positive
class the review found and fixed, as a paraphrased script (tests/corpus_review/facts.tsv names the
real files; no script text is kept here)."""
import csv
from pathlib import Path

from sbatch_lsp.diagnostics import Severity
from sbatch_lsp.lint import lint

REVIEW = Path(__file__).parent / "corpus_review" / "facts.tsv"
COLUMNS = ["repository", "path", "line", "code", "severity", "verdict", "reason"]


def _rows() -> list[dict[str, str]]:
    with REVIEW.open(newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def test_verdict_file_shape():
    rows = _rows()
    with REVIEW.open() as f:
        assert f.readline().rstrip("\n").split("\t") == COLUMNS
    assert all(r["verdict"] in ("true", "false", "debatable") for r in rows)
    assert all(r["line"].isdigit() and r["code"].startswith("SB") and r["reason"] for r in rows)
    assert all(r["severity"] in ("error", "warning") for r in rows)
    families = [r for r in rows if r["code"][2] in "2345"]
    rest = [r for r in rows if r["code"][2] not in "2345"]
    assert len(rest) >= 150 and families


def _at_least_warning(text: str, code: str) -> list:
    return [d for d in lint(text, "job.sbatch").diagnostics
            if d.code == code and d.severity >= Severity.WARNING]


def test_site_plugin_options_are_info():
    text = "#!/bin/bash\n#SBATCH --quotatype=reserved\n#SBATCH --fpgalink=n00:acl0:ch0-n01:acl0:ch0\n"
    assert not _at_least_warning(text + "hostname\n", "SB103")


def test_batch_value_in_a_one_task_step_is_its_own():
    """One node, one task: the batch shell's SLURM_PROCID (0) is that task's own."""
    text = ("#!/bin/bash\n#SBATCH -N 1\n#SBATCH --ntasks-per-node=1\n#SBATCH --gpus-per-node=8\n"
            'srun bash -c "torchrun --nproc_per_node 8 --nnodes 1 --node_rank $SLURM_PROCID '
            '--master_addr $(hostname) --master_port 29500 train.py"\n')
    assert not _at_least_warning(text, "SB301")
    two = text.replace("-N 1", "-N 2").replace("--nnodes 1", "--nnodes 2")
    assert _at_least_warning(two, "SB301")


def test_exported_node_rank_no_launcher_reads():
    """torchrun takes --node-rank (or PET_NODE_RANK), never NODE_RANK: an exported NODE_RANK
    of 0 under a c10d torchrun reaches nothing the script shows."""
    text = ("#!/bin/bash\n#SBATCH --nodes=4\n#SBATCH --ntasks-per-node=1\n#SBATCH --gres=gpu:8\n"
            'export MASTER_ADDR=$(scontrol show hostname "$SLURM_JOB_NODELIST" | head -n 1)\n'
            "export NODE_RANK=$SLURM_NODEID\n"
            'srun torchrun --nproc_per_node=8 --nnodes="$SLURM_NNODES" --rdzv_backend=c10d '
            '--rdzv_endpoint="$MASTER_ADDR:29500" train.py\n')
    assert not _at_least_warning(text, "SB301")
    reads = text.replace('train.py\n', "train.py\n") + \
        "srun bash -c 'torchrun --node_rank=$NODE_RANK --nnodes=4 x.py'\n"
    assert _at_least_warning(reads, "SB301")
