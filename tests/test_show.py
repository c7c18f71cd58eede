"""`sbatch-lint show`: the job as Slurm runs it (layouts verified on Slurm 22.05.8, slurm-facts.md
§14; the cluster differential checks the same JSON on the slurm tier)."""
import json
from importlib import resources
from pathlib import Path

import jsonschema
import pytest

from sbatch_lsp.facts.show import job_for, main, show_object

SHARED = Path(__file__).resolve().parent.parent.parent / "shared"
ROOT = Path(__file__).resolve().parent.parent


def schema():
    return json.loads(resources.files("sbatch_lsp").joinpath("schemas/show.schema.json")
                      .read_text("utf-8"))


def show(text: str) -> dict:
    obj = show_object(job_for(text, "job.sbatch"))
    jsonschema.validate(obj, schema())
    return obj


def steps(directives: str, body: str) -> list[dict]:
    return show("#!/bin/bash\n" + directives + "\n" + body + "\n")["steps"]


def scripts() -> list[Path]:
    found = sorted((ROOT / "examples").rglob("*.sbatch"))
    found += sorted(SHARED.glob("cases/**/*.sbatch"))
    found += sorted((ROOT / "tests" / "cases").glob("*.sbatch"))
    return found


def test_every_example_and_case_validates_against_the_schema():
    paths = scripts()
    assert len(paths) >= 10
    s = schema()
    for p in paths:
        obj = show_object(job_for(p.read_text("utf-8", "replace"), str(p)))
        jsonschema.validate(obj, s)


@pytest.mark.parametrize("directives,srun,nodes,tasks,tpn,placement", [
    ("#SBATCH --nodes=2 --ntasks-per-node=2", "srun", 2, 4, 2, [[0, 1], [2, 3]]),
    # a lone --ntasks-per-node=1 is ignored: the inherited SLURM_NTASKS wins
    ("#SBATCH --nodes=2 --ntasks-per-node=2", "srun --ntasks-per-node=1", 2, 4, 2,
     [[0, 1], [2, 3]]),
    ("#SBATCH --nodes=2 --ntasks-per-node=2",
     'srun --nodes="$SLURM_JOB_NUM_NODES" --ntasks="$SLURM_JOB_NUM_NODES" --ntasks-per-node=1',
     2, 2, 1, [[0], [1]]),
    # --ntasks without --ntasks-per-node: 22.05.8 placed 4 tasks on 2 nodes as 3 + 1
    ("#SBATCH --nodes=2 --ntasks=4", "srun", 2, 4, None, None),
    ("#SBATCH --nodes=4 --ntasks=4", "srun", 4, 4, 1, [[0], [1], [2], [3]]),
    ("#SBATCH --nodes=2", "srun", 2, 2, 1, [[0], [1]]),
    # a whole-node job holds the CPUs the step's six tasks need
    ("#SBATCH --nodes=2 --exclusive", "srun --ntasks-per-node=3", 2, 6, 3,
     [[0, 1, 2], [3, 4, 5]]),
    # without it the job holds one CPU per node: 22.05.8 refused the step ("More processors
    # requested than permitted"), so nothing is predicted
    ("#SBATCH --nodes=2", "srun --ntasks-per-node=3", None, None, None, None),
    ("#SBATCH --nodes=2 --ntasks-per-node=2", "srun --distribution=cyclic", 2, 4, 2,
     [[0, 2], [1, 3]]),
    ("#SBATCH --nodes=3 --ntasks-per-node=4", "srun -N1 -n1", 1, 1, 1, [[0]]),
    # fewer tasks than nodes: srun shrinks the node count
    ("#SBATCH --nodes=4", "srun --ntasks=2", 2, 2, 1, [[0], [1]]),
    # unknown node count: nothing is guessed
    ("#SBATCH --ntasks=8", "srun", None, 8, None, None),
    # no job-wide count: one node (sbatch(1) --nodes; 22.05.8: NumNodes=1 for
    # --ntasks-per-node=3 alone)
    ("#SBATCH --ntasks-per-node=8", "srun", 1, 8, 8, [list(range(8))]),
    ("#SBATCH --nodes=2 --ntasks-per-node=8\nNNODES=${SLURM_NNODES}",
     "srun --ntasks=${NNODES} --ntasks-per-node=1", 2, 2, 1, [[0], [1]]),
])
def test_step_layout_and_placement(directives, srun, nodes, tasks, tpn, placement):
    (step,) = steps(directives, srun + " hostname")
    assert (step["nodes"], step["tasks"], step["tasks_per_node"]) == (nodes, tasks, tpn)
    got = None if step["placement"] is None else [p["procids"] for p in step["placement"]]
    assert got == placement
    if step["placement"]:
        assert [p["node_index"] for p in step["placement"]] == list(range(len(placement)))


def test_components_of_a_heterogeneous_job_and_het_group():
    obj = show("#!/bin/bash\n#SBATCH --nodes=1 --ntasks=1 --partition=cpu --time=10\n"
               "#SBATCH hetjob\n#SBATCH --nodes=2 --ntasks-per-node=4 --gpus-per-node=4 "
               "--partition=gpu\nsrun hostname\nsrun --het-group=1 hostname\n")
    assert obj["components"] == [
        {"nodes": 1, "tasks": 1, "tasks_per_node": 1, "gpus_per_node": None, "partition": "cpu",
         "time": "00:10:00"},
        {"nodes": 2, "tasks": 8, "tasks_per_node": 4, "gpus_per_node": 4, "partition": "gpu",
         "time": None}]
    first, second = obj["steps"]
    assert (first["nodes"], first["tasks"], first["gpus_per_node"]) == (1, 1, None)
    assert (second["nodes"], second["tasks"], second["gpus_per_node"]) == (2, 8, 4)


def test_env_reaches_tasks_only_when_exported_and_let_through():
    body = ("export A=1\nB=2\nexport C=$(hostname)\nD=$1\nexport D\n"
            "srun hostname\nsrun --export=NONE hostname\nsrun --export=A,E=5 hostname\n"
            "F=6 srun hostname\n")
    s = steps("#SBATCH --nodes=2", body)
    env = [{k: (v["exported"], v["scope"], v["value"]) for k, v in st["env"].items()}
           for st in s]
    assert env[0] == {"A": (True, "const", "1"), "B": (False, "const", "2"),
                      "C": (True, "job", None), "D": (True, "submit", None)}
    assert not any(v[0] for v in env[1].values())
    assert env[2]["A"][0] and not env[2]["C"][0] and env[2]["E"] == (True, "const", "5")
    assert env[3]["F"] == (True, "const", "6")


def test_sbatch_export_none_reaches_the_steps_unless_the_script_restores_it():
    s = steps("#SBATCH --nodes=1 --export=NONE",
              "export A=1\nsrun hostname\nexport SLURM_EXPORT_ENV=ALL\nsrun hostname")
    assert s[0]["env"]["A"]["exported"] is False
    assert s[1]["env"]["A"]["exported"] is True


@pytest.mark.parametrize("launch,launcher,world,per_node", [
    ("torchrun --nnodes=2 --nproc-per-node=4 t.py", "torchrun", 8, 4),
    ("torchrun --nnodes=$SLURM_NNODES --nproc_per_node=4 t.py", "torchrun", 8, 4),
    ("python -m torch.distributed.run --nnodes 2 --nproc-per-node gpu t.py", "torchrun", 8, 4),
    ("timeout 3h torchrun --nnodes=2 --nproc-per-node=4 t.py", "torchrun", 8, 4),
    ("accelerate launch --num_machines 2 --num_processes 8 t.py", "accelerate", 8, 4),
    ("torchrun --nnodes=1:2 --nproc-per-node=4 t.py", "torchrun", None, None),
    ('torchrun "${ARGS[@]}" t.py', "torchrun", None, None),
])
def test_launcher_world_size(launch, launcher, world, per_node):
    (step,) = steps("#SBATCH --nodes=2 --gpus-per-node=4",
                    "srun --ntasks-per-node=1 " + launch)
    assert (step["launcher"], step["world_size"], step["ranks_per_node"]) == \
        (launcher, world, per_node)


def test_srun_native_and_mpirun_and_no_launch():
    s = steps("#SBATCH --nodes=2 --ntasks-per-node=4 --gpus-per-node=4",
              "srun python train.py\nsrun -N1 -n1 mpirun -np 8 -npernode 4 ./a.out\n"
              "srun hostname")
    assert [(x["launcher"], x["world_size"], x["ranks_per_node"]) for x in s] == [
        ("srun", 8, 4), ("mpirun", 8, 4), (None, None, None)]


def test_container_and_gpus_of_a_step():
    (step,) = steps("#SBATCH --nodes=2 --gpus-per-node=8",
                    "srun --container-image=nvcr.io#nvidia/pytorch:24.01 --gpus-per-node=2 "
                    "hostname")
    assert step["container"] == "nvcr.io#nvidia/pytorch:24.01"
    assert step["gpus_per_node"] == 2


def test_no_secret_value_in_the_output(capsys, tmp_path):
    token = "hf_" + "abcdefghijklmnopqrstuvwxyz123456"
    p = tmp_path / "job.sbatch"
    p.write_text("#!/bin/bash\n#SBATCH -N 1\n"
                 f"export HF_TOKEN={token}\nexport WANDB_API_KEY=notrandom\n"
                 f"srun --export=ALL,T={token} python t.py\n")
    assert main(["--format", "json", str(p)]) == 0
    out = capsys.readouterr().out
    assert token not in out and "notrandom" not in out
    env = json.loads(out)["steps"][0]["env"]
    assert env["HF_TOKEN"]["value"] == "hf_****"


def test_main_text_exit_codes_and_bad_input(capsys, tmp_path):
    p = tmp_path / "job.sbatch"
    p.write_text("#!/bin/bash\n#SBATCH --nodes=2 --ntasks-per-node=2\nsrun hostname\n")
    assert main([str(p)]) == 0
    out = capsys.readouterr().out
    assert "line 3: srun step: 2 node(s) x 2 task(s) per node = 4 task(s)" in out
    assert "node 0: tasks 0,1; node 1: tasks 2,3" in out
    assert main([str(tmp_path / "missing.sbatch")]) == 2
    assert "cannot read" in capsys.readouterr().err
    (tmp_path / "bin.sbatch").write_bytes(b"\x00\x01\x02\xff")
    assert main([str(tmp_path / "bin.sbatch")]) == 2
    with pytest.raises(SystemExit) as exc:
        main(["--format", "xml", str(p)])
    assert exc.value.code == 2


def test_registered_in_the_cli(tmp_path, monkeypatch, capsys):
    from sbatch_lsp import cli
    monkeypatch.chdir(tmp_path)
    (tmp_path / "job.sbatch").write_text("#!/bin/bash\n#SBATCH --nodes=2\nsrun hostname\n")
    assert cli.main(["show", "--format", "json", "job.sbatch"]) == 0
    obj = json.loads(capsys.readouterr().out)
    assert [s["placement"] for s in obj["steps"]] == [
        [{"node_index": 0, "procids": [0]}, {"node_index": 1, "procids": [1]}]]
    with pytest.raises(SystemExit) as exc:
        cli.main(["show", "--help"])
    assert exc.value.code == 0
    assert "sbatch-lint show" in capsys.readouterr().out


def test_show_names_an_unreadable_file_in_one_plain_phrase(tmp_path, capsys):
    from sbatch_lsp.facts.show import main
    assert main([str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.strip() == f"sbatch-lint show: cannot read {tmp_path}: is a directory"
    assert main([str(tmp_path / "missing.sbatch")]) == 2
    assert "Errno" not in capsys.readouterr().err


def test_several_agents_per_node_form_no_world():
    """4 torchrun agents per node (SB201) each claim a place in a 4-node rendezvous: no world of
    16 forms, so the world size is unknown while 16 processes start on each node."""
    from sbatch_lsp.facts.show import job_for
    from sbatch_lsp.facts.steps import facts_of
    text = ("#!/bin/bash\n#SBATCH --nodes=4\n#SBATCH --ntasks-per-node=4\n#SBATCH --gpus-per-node=4\n"
            "srun torchrun --nnodes=4 --nproc-per-node=4 --rdzv-backend=c10d "
            "--rdzv-endpoint=n1:29500 train.py\n")
    [step] = facts_of(job_for(text, "job.sbatch")).steps
    assert (step.world_size, step.ranks_per_node) == (None, 16)
    one = text.replace("--ntasks-per-node=4", "--ntasks-per-node=1")
    [step] = facts_of(job_for(one, "job.sbatch")).steps
    assert (step.world_size, step.ranks_per_node) == (16, 4)


@pytest.mark.parametrize("name,content,why", [
    ("empty.sbatch", "", "empty"),
    ("blank.sbatch", " \n\t\n", "only whitespace"),
    ("train.py", "import torch\nprint(torch.cuda.device_count())\n", "no #SBATCH line"),
    # a README whose heading mentions sbatch: prose, not a directive (source.JOB_SCRIPT)
    ("README.md", "# sbatch-tools\n\nRun `sbatch job.sbatch`.\n", "no #SBATCH line"),
    # a switched-off directive alone: it looks like one, but sbatch reads no directive, and
    # there is no srun step and no #! line
    ("notes.txt", "# SBATCH\nkeep the logs\n", "no #SBATCH directive"),
])
def test_a_file_that_is_no_job_script_is_said_to_be_none(tmp_path, capsys, name, content, why):
    """No default job (1 node, 1 task) is invented for it: text and JSON say it is no job script,
    with empty components and steps; exit 0 like the linter on named files that are none."""
    p = tmp_path / name
    p.write_text(content)
    assert main([str(p)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{p}: not a job script: ") and why in out
    assert "node(s)" not in out
    assert main(["--format", "json", str(p)]) == 0
    obj = json.loads(capsys.readouterr().out)
    jsonschema.validate(obj, schema())
    assert why in obj["not_a_job_script"]
    assert (obj["components"], obj["steps"]) == ([], [])


def test_a_job_script_has_no_not_a_job_script_reason():
    obj = show("#!/bin/bash\npython train.py\n")  # a .sbatch name, no directive: sbatch's defaults
    assert obj["not_a_job_script"] is None
    assert obj["components"][0]["nodes"] == 1
    bad = dict(obj, not_a_job_script="empty")
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema())  # a reason with components is not a valid object


@pytest.mark.parametrize("gpus,nodes", [("1", 1), ("a100:1", 1), ("8", None)])
def test_gpus_without_nodes(gpus, nodes):
    """sbatch(1) --nodes: without it, "enough nodes to satisfy ... -n, -c and --gpus": one GPU
    fits on one node; eight may need several (the site's nodes decide)."""
    obj = show(f"#!/bin/bash\n#SBATCH --array=0-3\n#SBATCH --gpus={gpus}\nsrun python t.py\n")
    assert obj["components"][0]["nodes"] == nodes
    assert obj["steps"][0]["nodes"] == nodes
    if nodes == 1:
        assert obj["steps"][0]["tasks"] == 1 and obj["components"][0]["gpus_per_node"] == 1


def test_text_says_why_the_node_count_is_unknown():
    from sbatch_lsp.facts.show import show_text
    text = show_text(job_for("#!/bin/bash\n#SBATCH --gpus=8\nsrun python t.py\n",
                               "job.sbatch"), "job.sbatch")
    assert "? node(s)" in text
    assert "node count unknown: no --nodes: sbatch allocates enough nodes for --gpus=8" in text
    known = show_text(job_for("#!/bin/bash\n#SBATCH --gpus=1\nsrun python t.py\n",
                                "job.sbatch"), "job.sbatch")
    assert "job: 1 node(s), 1 task(s)" in known and "unknown" not in known
