"""``sbatch-lint profile import`` on real Slurm output of several releases (tests/data/profile,
SOURCES.md there names each file's origin), the configuration it writes, and the SB7xx rules
judging scripts against a profile imported from real text."""
from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path

import pytest

from sbatch_lsp.cli import main
from sbatch_lsp.config import ConfigError, from_table, load_file
from sbatch_lsp.diagnostics import Severity
from sbatch_lsp.lint import lint
from sbatch_lsp.profile import ProfileInputError, build, read_text
from sbatch_lsp.profile.cli import run
from sbatch_lsp.profile.site import gres_gpus

DATA = Path(__file__).resolve().parent / "data" / "profile"
CLUSTER = [DATA / f"slurm-22.05.8-{n}.txt" for n in ("partition", "node", "config",
                                                     "srun-help")]


def _read(name: str):
    return read_text(name, (DATA / name).read_text())


def _profile(*files: Path) -> str:
    return run([str(f) for f in files], cluster=False)


# ---- readers -------------------------------------------------------------------------------

@pytest.mark.parametrize("name,kind,count", [
    ("slurm-22.05.8-partition.txt", "partitions", 2),
    ("slurm-22.05.8-partition-oneline.txt", "partitions", 2),
    ("slurm-22.05.8-node.txt", "nodes", 2),
    ("slurm-22.05.8-node-oneline.txt", "nodes", 2),
    ("aris-partition.txt", "partitions", 1),
    ("slurm-23.02-node.txt", "nodes", 1),
    ("slurm-24.05-node.txt", "nodes", 1),
    ("slurm-25.05-node.txt", "nodes", 1),
    ("slurm-25.11-node.txt", "nodes", 1),
])
def test_records_recognised_by_content(name, kind, count):
    t = _read(name)
    assert t.kind == kind and len(t.records) == count


def test_one_line_form_reads_like_the_multi_line_form():
    for what in ("partition", "node"):
        multi = _read(f"slurm-22.05.8-{what}.txt").records
        one = _read(f"slurm-22.05.8-{what}-oneline.txt").records
        assert multi == one


def test_values_with_spaces_stay_whole():
    rec = _read("slurm-24.05-node.txt").records[0]
    assert rec["OS"].startswith("Linux 5.10.0-153") and rec["OS"].endswith("CST 2023")
    assert rec["Reason"] == ("gres/gpu count reported lower than configured (0 < 1) "
                             "[slurm@2024-12-19T11:03:34]")
    assert rec["AllocTRES"] == ""


def test_config_and_srun_help():
    cfg = _read("slurm-22.05.8-config.txt")
    assert cfg.kind == "config" and cfg.settings["SLURM_VERSION"] == "22.05.8"
    assert cfg.settings["EnforcePartLimits"] == "NO"
    assert _read("slurm-22.05.8-srun-help.txt").pyxis is False
    assert _read("slurm-22.05.8-srun-help-pyxis.txt").pyxis is True


@pytest.mark.parametrize("text,kinds", [
    ("gpu:h100:8(S:0-1)", {"h100": 8}),
    ("gpu:8", {None: 8}),
    ("gpu:a40:1(S:0,2,4,6,8,10)", {"a40": 1}),
    ("gpu:a100:2,gpu:v100:2,mps:200", {"a100": 2, "v100": 2}),
    ("gpu:nvidia_h100_80gb_hbm3:4(S:0-1),shard:32", {"nvidia_h100_80gb_hbm3": 4}),
    ("(null)", {}),
])
def test_gres_gpus(text, kinds):
    assert gres_gpus(None if text == "(null)" else text) == kinds


# ---- the site --------------------------------------------------------------------------------

def test_cluster_22_05_site():
    site = build([_read(f.name) for f in CLUSTER])
    assert site.release == "22.05.8" and site.enforce_part_limits == "NO" and site.pyxis is False
    debug, short = site.partitions["debug"], site.partitions["short"]
    assert debug.default and debug.max_time is None and debug.max_nodes is None
    assert (short.max_time, short.max_nodes, short.total_nodes) == (600, 1, 1)
    # Gres=gpu:2 (untyped) on both nodes; RealMemory=1000; short holds node1 only
    assert (debug.gpus_per_node, debug.gpu_types, debug.mem_per_node) == (2, (), 1000)
    assert short.gpus_per_node == 2 and not short.derived


def test_typed_gpus_features_and_partitions_from_nodes_alone():
    site = build([_read("slurm-25.05-node.txt"), _read("slurm-24.05-node.txt")])
    assert sorted(site.partitions) == ["compute100", "tn"]
    tn = site.partitions["tn"]
    assert (tn.gpus_per_node, tn.gpu_types, tn.mem_per_node) == (1, ("a40",), 245760)
    assert tn.features == ("a40", "esc8000a")
    assert site.partitions["compute100"].gpu_types == ("nvidia-rtx-3090",)
    none = build([_read("slurm-25.11-node.txt")]).partitions["all"]
    assert none.gpus_per_node == 0 and none.gpu_types is None  # Gres=(null): no GPUs


def test_slurm_23_02_node_features_memory_and_no_gpus():
    rec = _read("slurm-23.02-node.txt").records[0]
    assert rec["Version"] == "23.02.7" and rec["CPUEfctv"] == "256"
    zen4 = build([_read("slurm-23.02-node.txt")]).partitions["cpu_zen4"]
    assert (zen4.total_nodes, zen4.mem_per_node) == (1, 644096)  # RealMemory, not CfgTRES mem=629G
    assert zen4.features == ("amd_cpu", "rack17", "zen4")
    assert zen4.gpus_per_node == 0 and zen4.gpu_types is None  # Gres=(null), no gres/gpu in CfgTRES
    assert zen4.max_time is None and not zen4.default  # node records say nothing of limits


def test_tres_sum_only_without_node_data_and_marked_derived():
    text = _profile(DATA / "aris-partition.txt")
    assert "derived: the partition's TRES sum" in text
    compute = tomllib.loads(text)["profile"]["partitions"]["compute"]
    # TRES=cpu=6144,mem=23808G,node=48: 23808 GiB / 48 nodes; no gres/gpu -> GPUs unknown
    assert compute["mem-per-node"] == 23808 * 1024 // 48 and "gpus-per-node" not in compute
    assert compute["derived"] == ["mem-per-node"] and compute["max-time"] == "2-00:00:00"
    with_nodes = tomllib.loads(_profile(*CLUSTER))["profile"]["partitions"]["debug"]
    assert "derived" not in with_nodes


def test_constrain_devices_from_the_cgroup_section_of_show_config(tmp_path):
    # scontrol show config prints cgroup.conf's settings after the slurm.conf ones, under
    # "Cgroup Support Configuration:" (src/api/config_info.c); the test cluster has no
    # cgroup.conf, so the section is appended here in that form
    real = (DATA / "slurm-22.05.8-config.txt").read_text()
    assert build([_read("slurm-22.05.8-config.txt"),
                  _read("slurm-22.05.8-partition.txt")]).constrain_devices is None
    for said, want in (("yes", True), ("no", False)):
        text = real.replace("\nSlurmctld(primary)", "\nCgroup Support Configuration:\n"
                            "CgroupMountpoint        = /sys/fs/cgroup\n"
                            f"ConstrainCores          = yes\nConstrainDevices        = {said}\n"
                            "\nSlurmctld(primary)")
        f = tmp_path / f"config-{said}.txt"
        f.write_text(text)
        cfg = tomllib.loads(_profile(f, DATA / "slurm-22.05.8-partition.txt"))
        assert cfg["profile"]["constrain-devices"] is want
        out = tmp_path / f"site-{said}.toml"
        out.write_text(_profile(f, DATA / "slurm-22.05.8-partition.txt"))
        assert load_file(out).profile.constrain_devices is want


def test_written_profile_is_a_configuration_and_an_extend_target(tmp_path):
    out = tmp_path / "site.toml"
    assert main(["profile", "import", *map(str, CLUSTER), "-o", str(out)]) == 0
    cfg = load_file(out)
    assert cfg.profile.slurm_version == "22.05" and cfg.profile.pyxis is False
    assert cfg.profile.enforce_part_limits == "NO" and cfg.profile.default_partition() == "debug"
    (tmp_path / ".sbatch-lint.toml").write_text(
        'extend = "site.toml"\n[profile.partitions.short]\nmax-time = "00:30:00"\n')
    merged = load_file(tmp_path / ".sbatch-lint.toml").profile.partitions["short"]
    assert merged.max_time == 1800 and merged.max_nodes == 1  # own key wins, the rest stays


def test_stdout_and_standard_input(capsys, monkeypatch):
    import io

    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(
        (DATA / "slurm-22.05.8-partition.txt").read_bytes())))
    assert main(["profile", "import", "-"]) == 0
    assert "[profile.partitions.short]" in capsys.readouterr().out


# ---- bad input -----------------------------------------------------------------------------

@pytest.mark.parametrize("content,needle", [
    ("", "is empty"),
    ("JOBID PARTITION NAME USER ST TIME NODES\n", "not output that profile import knows"),
    ("\0\1\2binary", "binary"),
    ("No partitions are configured in the system\n", "nothing to import"),
    ("   AllowGroups=ALL\nPartitionName=x\n", "its first line is 'AllowGroups=ALL'"),
    ("PartitionName=x MaxTime=forever\n", "MaxTime=forever is not a Slurm time"),
    ("PartitionName=x Nodes=n[1-\n", "not a host list"),
    ("Configuration data as of 2024-01-01T00:00:00\nClusterName = c\n", "SLURM_VERSION"),
])
def test_bad_input_is_a_clear_error_naming_the_file(tmp_path, capsys, content, needle):
    f = tmp_path / "saved.txt"
    f.write_bytes(content.encode("latin-1"))
    assert main(["profile", "import", str(f)]) == 2
    err = capsys.readouterr().err
    assert needle in err and str(f) in err and "Traceback" not in err


def test_missing_file_and_usage(tmp_path, capsys):
    assert main(["profile", "import", str(tmp_path / "nope.txt")]) == 2
    assert "nope.txt: cannot read" in capsys.readouterr().err
    assert main(["profile", "import"]) == 2
    assert "--from-cluster" in capsys.readouterr().err
    assert main(["profile"]) == 2
    assert main(["profile", "import", "--help"]) == 0


def test_from_cluster_without_scontrol(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert main(["profile", "import", "--from-cluster"]) == 2
    assert "scontrol is not on PATH" in capsys.readouterr().err


def test_from_cluster_reads_what_scontrol_prints(monkeypatch, tmp_path, capsys):
    """A stand-in scontrol on PATH prints the saved 22.05.8 output: --from-cluster reads it
    like the files (the real cluster is tests/slurm/test_profile_cluster.py)."""
    fake = tmp_path / "scontrol"
    fake.write_text("#!/bin/sh\ncat \"%s/slurm-22.05.8-$2.txt\"\n" % DATA)
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}/usr/bin{os.pathsep}/bin")
    monkeypatch.setattr("shutil.which", lambda name: str(fake) if name == "scontrol" else None)
    assert main(["profile", "import", "--from-cluster"]) == 0
    out = capsys.readouterr().out
    assert "`scontrol show partition` (partitions)" in out and 'slurm-version = "22.05"' in out


# ---- configuration validation --------------------------------------------------------------

@pytest.mark.parametrize("table,needle", [
    ({"partitions": {"gpu": {"max-time": 48}}}, "max-time: expected a Slurm time"),
    ({"partitions": {"gpu": {"max-time": "two days"}}}, "max-time"),
    ({"partitions": {"gpu": {"max-nodes": -1}}}, "max-nodes"),
    ({"partitions": {"gpu": {"gpus": 8}}}, "unknown key 'gpus'"),
    ({"partitions": {"gpu": {"exclusive": "yes"}}}, "exclusive"),
    ({"partitions": {"gpu": {"gpu-arch": "volta"}}}, "gpu-arch"),
    ({"partitions": {"gpu": {"derived": ["max-time"]}}}, "derived"),
    ({"partitions": ["gpu"]}, "partitions: expected a table"),
    ({"enforce-part-limits": "yes"}, "enforce-part-limits"),
])
def test_profile_keys_are_validated_loudly(table, needle):
    with pytest.raises(ConfigError, match=needle):
        from_table({"profile": table}, "cfg")


# ---- rules against a profile imported from real text ---------------------------------------

@pytest.fixture(scope="module")
def cluster_config():
    return from_table(tomllib.loads(_profile(*CLUSTER)), "imported")


def _found(text: str, config, code: str) -> list[tuple[int, int, Severity]]:
    r = lint(text, "job.sbatch", config)
    assert not [d for d in r.diagnostics if d.code == "SB003"]
    out = []
    for d in r.diagnostics:
        if d.code == code:
            line = r.source.line_of(d.start)
            out.append((line + 1, d.start - r.source.line_starts[line] + 1, d.severity))
    return out


BREACHES = [
    # (directive lines after the shebang, code, line of the finding, column)
    ("#SBATCH --partition=shrot", "SB701", 2, 21),
    ("#SBATCH --partition=short,nosuch", "SB701", 2, 27),
    ("#SBATCH --partition=short\n#SBATCH --time=00:20:00", "SB702", 3, 9),
    ("#SBATCH --partition=short\n#SBATCH --nodes=2", "SB703", 3, 9),
    ("#SBATCH --partition=debug\n#SBATCH --nodes=3", "SB703", 3, 9),
    ("#SBATCH --partition=debug\n#SBATCH --gpus-per-node=4", "SB704", 3, 9),
    ("#SBATCH --partition=debug\n#SBATCH --gres=gpu:h100:1", "SB705", 3, 20),
    ("#SBATCH --partition=debug\n#SBATCH --mem=2G", "SB706", 3, 9),
]


@pytest.mark.parametrize("directives,code,line,col", BREACHES)
def test_each_breach_is_an_error_at_its_directive(cluster_config, directives, code, line, col):
    text = f"#!/bin/bash\n{directives}\nsrun hostname\n"
    assert _found(text, cluster_config, code) == [(line, col, Severity.ERROR)]


def test_a_fitting_script_is_clean(cluster_config):
    text = ("#!/bin/bash\n#SBATCH --partition=short\n#SBATCH --time=00:10:00\n"
            "#SBATCH --nodes=1\n#SBATCH --gpus-per-node=2\n#SBATCH --mem=1000M\n"
            "srun hostname\n")
    r = lint(text, "job.sbatch", cluster_config)
    assert [d for d in r.diagnostics if d.severity >= Severity.INFO and
            d.code.startswith("SB7")] == []
    assert [d for d in r.diagnostics if d.severity >= Severity.WARNING] == []


def test_silent_without_a_profile():
    text = "#!/bin/bash\n#SBATCH --partition=nosuch\n#SBATCH --time=99-00:00:00\nsrun hostname\n"
    assert not [d for d in lint(text, "job.sbatch").diagnostics if d.code.startswith("SB7")]


def test_default_partition_findings_are_info(cluster_config):
    """No --partition: the profile's default (debug) is assumed, but the command line may choose
    another, so the finding rests on what the script does not say."""
    text = "#!/bin/bash\n#SBATCH --gpus-per-node=4\nsrun hostname\n"
    assert _found(text, cluster_config, "SB704") == [(2, 9, Severity.INFO)]


def test_a_partition_list_is_judged_as_a_whole(cluster_config):
    text = "#!/bin/bash\n#SBATCH --partition=short,debug\n#SBATCH --time=00:20:00\nsrun true\n"
    assert _found(text, cluster_config, "SB702") == []  # debug has no time limit: it fits
    enforced = from_table({"profile": {"enforce-part-limits": "ALL"}}, "x", cluster_config)
    found = lint(text, "job.sbatch", enforced)
    d = next(d for d in found.diagnostics if d.code == "SB702")
    assert "EnforcePartLimits=ALL" in d.message and "refuses" in d.message


def test_the_message_says_what_the_profile_knows(cluster_config):
    text = "#!/bin/bash\n#SBATCH --partition=short\n#SBATCH --time=20\nsrun true\n"
    msg = next(d for d in lint(text, "j.sbatch", cluster_config).diagnostics
               if d.code == "SB702").message
    assert "pending with reason PartitionTimeLimit (EnforcePartLimits=NO)" in msg
    unknown = from_table({"profile": {"partitions": {"short": {"max-time": "00:10:00"}}}}, "x")
    msg = next(d for d in lint(text, "j.sbatch", unknown).diagnostics
               if d.code == "SB702").message
    assert "the profile does not say which" in msg and "PartitionTimeLimit" in msg


def test_derived_figures_give_warnings():
    cfg = from_table(tomllib.loads(_profile(DATA / "aris-partition.txt")), "aris")
    text = "#!/bin/bash\n#SBATCH --partition=compute\n#SBATCH --mem=600G\nsrun true\n"
    assert _found(text, cfg, "SB706") == [(3, 9, Severity.WARNING)]


def test_partition_gpu_type_gives_sb403_its_architecture():
    text = ("#!/bin/bash\n#SBATCH --partition=batch\n#SBATCH --nodes=1\n"
            "#SBATCH --ntasks-per-node=1\n#SBATCH --gpus-per-node=4\n\n"
            "srun torchrun --nproc-per-node=4 pretrain_gpt.py --tensor-model-parallel-size 2 "
            "--num-layers 32 --hidden-size 4096 --num-attention-heads 32 "
            "--micro-batch-size 1 --global-batch-size 64\n")

    def sb403(gpu_type: str) -> list[Severity]:
        cfg = from_table({"profile": {"megatron-core": "0.13", "partitions": {
            "batch": {"gpu-type": gpu_type, "gpus-per-node": 4}}}}, "x")
        return [d.severity for d in lint(text, "j.sbatch", cfg).diagnostics if d.code == "SB403"]

    assert sb403("h100") == [Severity.ERROR]  # Hopper, TP 2 on 0.13: needs =1
    assert sb403("gb200") == []  # Blackwell: the check is for earlier GPUs only


def test_json_output_names_the_rule(cluster_config, tmp_path, capsys):
    job = tmp_path / "job.sbatch"
    job.write_text("#!/bin/bash\n#SBATCH --partition=shrot\nsrun true\n")
    cfg = tmp_path / "site.toml"
    cfg.write_text(_profile(*CLUSTER))
    assert main(["--no-cache", "--config", str(cfg), "--format", "json", str(job)]) == 1
    out = json.loads(capsys.readouterr().out)
    assert [(o["code"], o["name"], o["line"]) for o in out] == [("SB701", "unknown-partition", 2)]


def test_profile_input_error_is_a_value_error():
    with pytest.raises(ProfileInputError):
        read_text("x", "hello\n")


def test_readme_site_profile_snippet_loads_and_extends(tmp_path):
    import re

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    block = next(b for b in re.findall(r"```toml\n(.*?)```", readme, re.S)
                 if b.startswith("# site.toml"))
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "site.toml").write_text(block)
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / ".sbatch-lint.toml").write_text(
        'extend = "../site/site.toml"\n[profile.partitions.gpu]\nmax-time = "12:00:00"\n')
    cfg = load_file(tmp_path / "proj" / ".sbatch-lint.toml")
    gpu = cfg.profile.partitions["gpu"]
    assert gpu.max_time == 12 * 3600 and gpu.gpus_per_node == 8 and gpu.gpu_types == ("h100",)
    assert cfg.profile.default_partition() == "gpu" and cfg.profile.pyxis is True
    text = "#!/bin/bash\n#SBATCH --time=1-00:00:00\nsrun true\n"  # no --partition: the default
    assert _found(text, cfg, "SB702") == [(2, 9, Severity.INFO)]


def test_constraint_features_from_real_node_records():
    cfg = from_table(tomllib.loads(_profile(DATA / "slurm-25.05-node.txt")), "25.05")
    job = "#!/bin/bash\n#SBATCH --partition=tn\n#SBATCH --constraint={}\nsrun true\n"
    assert _found(job.format("a40"), cfg, "SB707") == []
    assert _found(job.format("esc8000a&a40"), cfg, "SB707") == []
    assert _found(job.format("a100"), cfg, "SB707") == [(3, 22, Severity.ERROR)]
    # quoted: the finding sits on the name, after the quote; names are case-sensitive
    assert _found(job.format('"a40&ESC8000A"'), cfg, "SB707") == [(3, 27, Severity.ERROR)]


def test_names_inside_quoted_values_keep_their_columns(cluster_config):
    text = '#!/bin/bash\n#SBATCH --partition="short,nosuch"\nsrun true\n'
    assert _found(text, cluster_config, "SB701") == [(2, 28, Severity.ERROR)]


@pytest.mark.parametrize("fields,exclusive", [
    ("OverSubscribe=EXCLUSIVE ExclusiveUser=NO", True),  # 16.05 on: whole nodes per job
    ("Shared=EXCLUSIVE", True),  # the same before 16.05
    ("OverSubscribe=NO ExclusiveUser=YES", "user"),  # 15.08 on: a node per user
    ("OverSubscribe=FORCE:4 ExclusiveUser=NO", False),
    ("OverSubscribe=NO ExclusiveUser=NO", False),
])
def test_exclusivity_by_release(fields, exclusive):
    site = build([read_text("p.txt", f"PartitionName=p MaxTime=UNLIMITED {fields}\n")])
    assert site.partitions["p"].exclusive == exclusive
    table = tomllib.loads(_write(site))["profile"]["partitions"]["p"]
    assert table.get("exclusive", False) == exclusive


def _write(site) -> str:
    from sbatch_lsp.profile import to_toml

    return to_toml(site)


def test_from_cluster_skips_a_failing_srun_and_empty_node_output(monkeypatch, tmp_path, capsys):
    fake = tmp_path / "scontrol"
    fake.write_text("#!/bin/sh\n[ \"$2\" = node ] && { echo 'No nodes in the system'; exit 0; }\n"
                    "cat \"%s/slurm-22.05.8-$2.txt\"\n" % DATA)
    srun = tmp_path / "srun"
    srun.write_text("#!/bin/sh\necho 'srun: error: cannot load plugin' >&2\nexit 1\n")
    for f in (fake, srun):
        f.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}/usr/bin{os.pathsep}/bin")
    monkeypatch.setattr("shutil.which", lambda name: str(tmp_path / name)
                        if name in ("scontrol", "srun") else None)
    assert main(["profile", "import", "--from-cluster"]) == 0
    out = capsys.readouterr().out
    assert "pyxis" not in out and "[profile.partitions.short]" in out


def test_unknown_partition_fix_takes_the_closest_name(cluster_config):
    from sbatch_lsp.fixer import fix_text

    for typed, meant in (("shrot", "short"), ("DEBUG", "debug")):
        text = f"#!/bin/bash\n#SBATCH --partition={typed}\nsrun true\n"
        out = fix_text(text, "j.sbatch", unsafe=True, codes={"SB701"}, config=cluster_config)
        assert out.text == text.replace(typed, meant)
        safe = fix_text(text, "j.sbatch", unsafe=False, codes={"SB701"}, config=cluster_config)
        assert safe.text == text  # another partition is another job: never a safe fix
    far = "#!/bin/bash\n#SBATCH --partition=zzzz\nsrun true\n"
    d = next(d for d in lint(far, "j.sbatch", cluster_config).diagnostics if d.code == "SB701")
    assert d.fixes == [] and "the site's partitions: debug, short" in d.message


def test_node_count_after_sbatch_adjusts_it_and_gpu_totals(cluster_config):
    lowered = "#!/bin/bash\n#SBATCH -p short\n#SBATCH -N 3\n#SBATCH -n 1\nsrun true\n"
    assert _found(lowered, cluster_config, "SB703") == []  # sbatch submits one node
    total = "#!/bin/bash\n#SBATCH -p debug\n#SBATCH -N 2\n#SBATCH --gpus={}\nsrun true\n"
    assert _found(total.format(4), cluster_config, "SB704") == []  # 2 nodes x 2 GPUs
    assert _found(total.format(5), cluster_config, "SB704") == [(4, 9, Severity.ERROR)]


def test_tres_with_typed_gpus():
    """A partition's TRES lists typed GPU counts when accounting tracks them: the types are
    known; a per-node figure only when the sum divides evenly over the nodes."""
    rec = ("PartitionName=h100 MaxTime=2-00:00:00 TotalNodes=3 TRES=cpu=192,mem=1500G,node=3,"
           "billing=192,gres/gpu=7,gres/gpu:nvidia_h100_80gb_hbm3=4,gres/gpu:nvidia_h100_nvl=3\n")
    p = build([read_text("p.txt", rec)]).partitions["h100"]
    assert p.gpu_types == ("nvidia_h100_80gb_hbm3", "nvidia_h100_nvl")
    assert p.gpus_per_node is None and p.mem_per_node == 512000 and p.derived == ("mem-per-node",)
    even = build([read_text("p.txt", rec.replace("TotalNodes=3", "TotalNodes=7"))])
    assert even.partitions["h100"].gpus_per_node == 1


def test_node_records_for_part_of_a_partition_are_marked_derived():
    """`scontrol show node node1` saved for a two-node partition: the figures are the largest of
    the nodes given, marked derived (warnings), and no types or features are claimed."""
    one = read_text("n.txt", (DATA / "slurm-22.05.8-node.txt").read_text().split("\n\n")[0])
    site = build([_read("slurm-22.05.8-partition.txt"), one])
    debug, short = site.partitions["debug"], site.partitions["short"]
    assert debug.partial == (1, 2) and debug.derived == ("gpus-per-node", "mem-per-node")
    assert debug.gpu_types is None and debug.features is None
    assert short.partial is None and short.gpu_types == ()  # node1 is all of short
    cfg = from_table(tomllib.loads(_write(site)), "partial")
    text = "#!/bin/bash\n#SBATCH -p debug\n#SBATCH --gpus-per-node=4\nsrun true\n"
    assert _found(text, cfg, "SB704") == [(3, 9, Severity.WARNING)]
    assert "derived: the largest of the 1 of its 2 nodes given" in _write(site)


def test_imported_profile_gets_the_umask_mode_not_0600(tmp_path):
    """The README says to share the written profile: it must be as readable as any new file."""
    import os
    import stat

    from sbatch_lsp.atomic import replace_file
    old = os.umask(0o022)
    try:
        replace_file(tmp_path / "site.toml", b"[profile]\n")
        assert stat.S_IMODE((tmp_path / "site.toml").stat().st_mode) == 0o644
        (tmp_path / "site.toml").chmod(0o640)
        replace_file(tmp_path / "site.toml", b"[profile]\n")  # a replaced file keeps its mode
        assert stat.S_IMODE((tmp_path / "site.toml").stat().st_mode) == 0o640
    finally:
        os.umask(old)
