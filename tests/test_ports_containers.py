"""facts/ports.py bounds the ports a word can take; facts/containers.py reads pyxis options as
pyxis does; the enroot and ip-local-port-range profile keys are validated."""
import pytest

from sbatch_lsp.config import ConfigError, Config, Profile, from_table
from sbatch_lsp.facts.containers import containers
from sbatch_lsp.facts.ports import port_range
from sbatch_lsp.lint import job_of, lint


def _port(assignment: str, before: str = ""):
    job = job_of(f"#!/bin/bash\n{before}MASTER_PORT={assignment}\n")
    a = [x for x in job.script.assignments if x.name == "MASTER_PORT"][-1]
    return port_range(a.value, job.script)


@pytest.mark.parametrize("text,expected", [
    ("29500", (29500, 29500, True)),
    ("$((RANDOM % 1000 + 40000))", (40000, 40999, False)),
    ("$((10000 + SLURM_JOB_ID % 50000))", (10000, 59999, False)),
    ("$((SLURM_JOB_ID % 16384 + 49152))", (49152, 65535, False)),
    ("$((RANDOM + 10000))", (10000, 42767, False)),
    ("$(shuf -i 20000-30000 -n 1)", (20000, 30000, False)),
])
def test_port_range(text, expected):
    r = _port(text)
    assert r is not None and (r.low, r.high, r.fixed) == expected


def test_port_through_variable_and_unknown():
    r = _port("$BASE", before="BASE=$((RANDOM % 10 + 100))\n")
    assert r is not None and (r.low, r.high) == (100, 109)
    assert _port("$1") is None
    assert _port("$(python -c 'import socket')") is None


def test_overlap_counts_ports_in_range():
    r = _port("$((29500 + SLURM_JOB_ID % 20000))")
    assert r.overlap(32768, 60999) == 49499 - 32768 + 1


def test_container_facts_read_mounts_and_home():
    job = job_of("#!/bin/bash\nM=/lustre/a:/a\n"
                 "srun --container-image=./x.sqsh --container-mounts=\"$M,$PWD:/w:ro\" "
                 "--container-mount-home --no-container-mount-home true\n")
    (c,) = containers(job)
    assert c.image.value == "./x.sqsh"
    assert [(m.source, m.target, m.flags) for m in c.mounts] == [
        ("/lustre/a", "/a", None), ("$PWD", "/w", "ro")]
    assert c.mount_home is False and not c.workdir_given


def test_profile_keys_are_validated():
    cfg = from_table({"profile": {"enroot": "3.5", "ip-local-port-range": [40000, 50000]}},
                     "t.toml")
    assert cfg.profile.enroot == "3.5" and cfg.profile.ip_local_port_range == (40000, 50000)
    for bad in ({"enroot": 4}, {"ip-local-port-range": [5, 1]},
                {"ip-local-port-range": "32768-60999"}):
        with pytest.raises(ConfigError):
            from_table({"profile": bad}, "t.toml")


def test_port_range_follows_the_profile():
    text = ("#!/bin/bash\n#SBATCH --nodes=1\n#SBATCH --exclusive\n"
            "torchrun --nproc-per-node=8 --master-port=45000 train.py\n")
    assert "SB220" in [d.code for d in lint(text, "x.sbatch").diagnostics]
    narrow = Config(profile=Profile(ip_local_port_range=(50000, 60999)))
    assert "SB220" not in [d.code for d in lint(text, "x.sbatch", narrow).diagnostics]


def test_enroot_release_decides_sb405():
    text = "#!/bin/bash\nsrun --container-image=nvcr.io/nvidia/pytorch:24.01-py3 true\n"
    def sev(release):
        cfg = Config(profile=Profile(enroot=release))
        return [d.severity.name for d in lint(text, "x.sbatch", cfg).diagnostics
                if d.code == "SB405"]
    assert sev(None) == ["INFO"] and sev("3.5") == ["WARNING"] and sev("4.0.1") == []


def test_workdir_fix_follows_either_image_spelling():
    from sbatch_lsp.fixer import fix_text
    for spelled in ("--container-image nvcr.io#nvidia/pytorch:24.01-py3",
                    "--container-image=nvcr.io#nvidia/pytorch:24.01-py3"):
        text = (f"#!/bin/bash\n#SBATCH --nodes=1\nsrun {spelled} "
                "--container-mounts=\"$PWD:$PWD\" python train.py\n")
        out = fix_text(text, "x.sbatch", unsafe=True, codes={"SB406"})
        assert f"srun {spelled} --container-workdir=\"$PWD\" --container-mounts" in out.text


def test_enroot_settings_count_only_without_a_direct_enroot():
    pyxis = ("#!/bin/bash\n#SBATCH --nodes=1\nexport ENROOT_CACHE_PATH=/lustre/c\n"
             "srun --container-image=./x.sqsh true\n")
    assert [d.code for d in lint(pyxis, "x.sbatch").diagnostics] == ["SB409"]
    direct = pyxis.replace("srun --container-image", "srun -n1 timeout 1h enroot import -o x.sqsh "
                           "docker://ubuntu\nsrun --container-image")
    assert "SB409" not in [d.code for d in lint(direct, "x.sbatch").diagnostics]
    allowed = pyxis.replace("ENROOT_CACHE_PATH", "ENROOT_CONFIG_PATH")
    assert "SB409" not in [d.code for d in lint(allowed, "x.sbatch").diagnostics]


@pytest.mark.parametrize("mounts,bad", [
    ("data:/data", True), ("./data:/data", False), ("tmpfs:/scratch", False),
    ("/a:/a:ro+rprivate", False), ("/a:b", True), (".", True),
    ("/lustre:/", True), ("umount:/etc/slurm", False), ('"$PWD:/w"', False),
])
def test_mount_items(mounts, bad):
    text = ("#!/bin/bash\n#SBATCH --nodes=1\n"
            f"srun --container-image=./x.sqsh --container-mounts={mounts} true\n")
    assert ("SB408" in [d.code for d in lint(text, "x.sbatch").diagnostics]) is bad


def test_a_space_in_a_mount_follows_the_pyxis_release():
    text = ("#!/bin/bash\n#SBATCH --nodes=1\n"
            "srun --container-image=./x.sqsh --container-mounts='/x y:/z' true\n")
    def sev(pyxis):
        cfg = Config(profile=Profile(pyxis=pyxis))
        return [d.severity.name for d in lint(text, "x.sbatch", cfg).diagnostics
                if d.code == "SB408"]
    assert sev("0.16.1") == ["ERROR"] and sev(None) == ["INFO"] and sev("0.24.0") == []


def test_a_shared_partition_makes_a_fixed_port_a_warning():
    text = ("#!/bin/bash\n#SBATCH --nodes=1\n#SBATCH --partition=gpu\n"
            "torchrun --nproc-per-node=8 --master-port=29500 train.py\n")
    def sev(exclusive):
        cfg = from_table({"profile": {"partitions": {"gpu": {"exclusive": exclusive}}}}, "t")
        return [d.severity.name for d in lint(text, "x.sbatch", cfg).diagnostics
                if d.code == "SB221"]
    assert sev(False) == ["WARNING"] and sev(True) == []  # an exclusive partition: no co-tenant
    assert [d.severity.name for d in lint(text, "x.sbatch").diagnostics
            if d.code == "SB221"] == ["INFO"]


@pytest.mark.parametrize("line,fires", [
    ("srun --container-image=~/c/p.sqsh true", True),      # after `=`: bash leaves the ~
    ("srun --container-image ~/c/p.sqsh true", False),     # a word of its own: expanded
    ("A=(--container-image ~/c/p.sqsh)\nsrun \"${A[@]}\" true", False),
    ("A=(--container-image=p.sqsh)\nsrun \"${A[@]}\" true", True),
])
def test_image_tilde_and_arrays(line, fires):
    text = f"#!/bin/bash\n#SBATCH --nodes=1\n{line}\n"
    assert ("SB404" in [d.code for d in lint(text, "x.sbatch").diagnostics]) is fires


def test_a_host_port_endpoint_gets_no_port_fix_that_would_overwrite_its_host():
    # the port fix replaces the port word; in `--rdzv_endpoint host:port` the word is the
    # endpoint, and replacing it with the port arithmetic deleted the host (and, through a
    # resolved `$MASTER_ADDR:$MASTER_PORT`, the MASTER_ADDR assignment: the corpus review found
    # it in bigscience-workshop/bigscience's tr14 scripts)
    from sbatch_lsp.lint import lint
    text = ("#!/bin/bash\n#SBATCH --nodes=1\n#SBATCH --gpus-per-node=4\n"
            "srun torchrun --nnodes=1 --nproc-per-node=4 --rdzv-backend=c10d "
            "--rdzv-endpoint=node1:40000 train.py\n")
    got = [d for d in lint(text, "x.sbatch").diagnostics if d.code in ("SB220", "SB221")]
    assert sorted(d.code for d in got) == ["SB220", "SB221"]
    assert all(d.fixes == [] for d in got)
    plain = text.replace("--rdzv-backend=c10d --rdzv-endpoint=node1:40000", "--master-port 40000")
    [d] = [d for d in lint(plain, "x.sbatch").diagnostics if d.code == "SB220"]
    assert d.fixes and plain[d.start:d.end] == "40000"


def test_enroot_settings_are_looked_up_in_a_fixed_order():
    # SB409 looks each dropped name up in this order and keeps the first finding at a start:
    # a set's order would change with the process's hash seed, and with it the name reported
    from sbatch_lsp.rules.containers import ENROOT_DENIED

    assert isinstance(ENROOT_DENIED, tuple) and len(set(ENROOT_DENIED)) == len(ENROOT_DENIED)
    both = ("#!/bin/bash\n#SBATCH --nodes=1\nexport ENROOT_DATA_PATH=/d ENROOT_CACHE_PATH=/c\n"
            "srun --container-image=./x.sqsh true\n")
    found = [d for d in lint(both, "x.sbatch").diagnostics if d.code == "SB409"]
    assert [d.message.split()[4] for d in sorted(found, key=lambda d: d.start)] == [
        "ENROOT_DATA_PATH", "ENROOT_CACHE_PATH"]
