# Real sbatch for the differential test (tests/test_sbatch_differential.py): Debian's
# slurm-client, run offline with tests/data/slurm-offline.conf (no daemons are started).
if ! command -v sbatch >/dev/null; then
    apt_install slurm-client
fi
