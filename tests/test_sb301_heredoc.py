"""SB301 inside an unquoted here-document: the advice is to quote the delimiter, since the batch
shell expands the body when it writes the file (bash(1) "Here Documents"), not where it runs."""
from sbatch_lsp.lint import lint

HEAD = ("#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=1\n#SBATCH --gpus-per-node=8\n"
        "export MASTER_ADDR=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n1)\n")
BODY = ("torchrun --nnodes=2 --nproc-per-node=8 --node-rank=$SLURM_NODEID "
        "--master-addr=$MASTER_ADDR --master-port=29500 train.py\n")


def sb301(text: str) -> list:
    return [d for d in lint(text, "job.sbatch").diagnostics if d.code == "SB301"]


def test_unquoted_heredoc_advice_names_its_delimiter():
    text = HEAD + "cat > run.sh <<END_OF_RUN\n" + BODY + "END_OF_RUN\nsrun bash run.sh\n"
    (d,) = sb301(text)
    assert d.severity.name == "ERROR"
    assert "when it writes this here-document" in d.message
    assert "quote the delimiter (<<'END_OF_RUN')" in d.message
    assert "single-quote the `bash -c` body" not in d.message  # no bash -c here
    assert text[d.start:d.end] == "$SLURM_NODEID"


def test_tab_stripping_heredoc_and_a_double_quoted_bash_c_keep_their_own_advice():
    text = HEAD + "cat > run.sh <<-EOF\n\t" + BODY + "\tEOF\nsrun bash run.sh\n"
    (d,) = sb301(text)
    assert "(<<'EOF')" in d.message
    plain = HEAD + 'srun bash -c "' + BODY.strip() + '"\n'
    (d,) = sb301(plain)
    assert "here-document" not in d.message and "single-quote the `bash -c` body" in d.message


def test_quoted_delimiter_is_clean():
    text = HEAD + "cat > run.sh <<'EOF'\n" + BODY + "EOF\nsrun bash run.sh\n"
    assert sb301(text) == []
