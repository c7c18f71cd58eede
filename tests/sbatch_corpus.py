"""A generated corpus of job scripts for the differential test against the real sbatch 22.05.

Each case is (name, script bytes). The corpus covers every value-taking option of sbatch 22.05
with valid and invalid values, the tokenizer rules of slurm-facts.md §1.3, option spellings,
prefixes and short forms, quoting, inline comments, placement, combinations and the whole-file
checks of §1.2. Values are chosen to pass or fail the *client-side* checks; what only the
controller checks (partition names, accounts, array bounds) cannot differ offline.
"""
from __future__ import annotations

import json
from pathlib import Path

SHEBANG = "#!/bin/bash\n"
BODY = "srun hostname\n"

#: option -> (valid values, invalid values) for every value-taking 22.05 option. Invalid values
#: are ones sbatch 22.05 refuses on the client (slurm-facts.md §4) or, for options the client does
#: not check, odd values it passes on.
VALUES: dict[str, tuple[list[str], list[str]]] = {
    "account": (["proj123", "a-b_c"], []),
    "acctg-freq": (["task=30", "energy=60,task=30", "30"], ["task=abc"]),
    "array": (["0-15", "1,3,5", "0-99:2", "0-7%2", "5"], ["a-b", "1-x"]),
    "batch": (["haswell"], []),
    "bb": (["capacity=1G"], []),
    "begin": (["now+1hour", "now+60", "16:00", "2030-01-20T12:34:00", "midnight", "noon",
               "teatime", "tomorrow", "now", "01/20/30", "2030-01-20", "now+2days"],
              ["notadate", "yesterday-ish", "now+1fortnight", "25:00"]),
    "chdir": (["/tmp", "relative/dir"], []),
    "cluster-constraint": (["fast"], []),
    "comment": (["hello", '"two words"'], []),
    "constraint": (["haswell", "a100&ib", "[rack1|rack2]"], []),
    "container": (["/path/to/bundle"], []),
    "context": (["unconfined_u"], []),
    "core-spec": (["0", "2"], ["-1", "x"]),
    "cores-per-socket": (["4"], ["0", "four"]),
    "cpu-freq": (["low", "high", "medium", "highm1", "2400000", "1200000-2400000",
                  "low-high:ondemand", "Performance", "1200000-2400000:performance"],
                 ["turbo", "fast:ondemand", "low:badgov", "2400000:powersave",
                  "2400000-1200000"]),
    "cpus-per-gpu": (["8"], ["0", "x"]),
    "cpus-per-task": (["1", "8", "128", "+4", "08"], ["0", "x", "1.5", "-2", "4c"]),
    "deadline": (["2030-01-20T12:00:00", "now+2hours"], ["someday"]),
    "delay-boot": (["10", "1:00:00", "2-0"], ["soon", "10m"]),
    "dependency": (["afterok:123", "afterany:1:2", "singleton", "after:123+10",
                    "afterok:123,afternotok:456", "afterok:123?afterany:456", "aftercorr:7"],
                   ["afterok", "waitfor:123"]),
    "distribution": (["block", "cyclic", "plane=4", "block:cyclic",
                      "cyclic:block:fcyclic", "*:*", "block,Pack", "cyclic,nopack"],
                     ["round-robin", "plane", "plane=0", "block:round", "a:b:c:d"]),
    "error": (["err-%j.txt", "logs/%x-%A_%a.err", "/dev/null", "none"], []),
    "exclude": (["n1", "n[1-3]"], []),
    "exclusive": (["user", "mcs", "oversubscribe", "EXCLUSIVE"], ["nodes", "topo", "yes"]),
    "export": (["ALL", "NONE", "ALL,FOO=bar", "FOO,BAR", "NIL"], []),
    "extra-node-info": (["2:8:2", "2", "*:4"], ["x:y"]),
    "gpu-bind": (["closest", "single:1", "none", "verbose,closest", "map_gpu:0,1"],
                 ["nearest"]),
    "gpu-freq": (["high", "medium,memory=high", "1200"], ["turbo"]),
    "gpus": (["8", "a100:8", "1"], []),
    "gpus-per-node": (["8", "h100:8"], []),
    "gpus-per-socket": (["1"], []),
    "gpus-per-task": (["1", "a100:1"], []),
    "gres": (["gpu:2", "gpu", "none", "gpu:8"], ["gpu:x:y:z"]),
    "gres-flags": (["enforce-binding", "disable-binding"],
                   ["allow-task-sharing", "one-task-per-sharing", "bind"]),
    "hint": (["nomultithread", "compute_bound", "memory_bound", "multithread"], []),
    "input": (["in.txt", "/dev/null"], []),
    "job-name": (["train", '"my job"', "'quoted name'", "a:b", "x%j"], []),
    "kill-on-invalid-dep": (["yes", "no", "YES"], ["maybe"]),
    "licenses": (["matlab:2", "ansys@db:1,comsol"], []),
    "mail-type": (["END", "BEGIN,END,FAIL", "ALL", "NONE", "TIME_LIMIT_80", "array_tasks",
                   "END,FAILS"], ["FINISH", "START,STOP", "everything"]),
    "mail-user": (["me@example.org"], []),
    "mcs-label": (["group1"], []),
    "mem": (["0", "4000", "500G", "500g", "500GB", "64gb", "2T", "1024M", "1048576K",
             "16000MB"], ["1.5G", "lots", "8GiB", "-1", "G", "10X", "4 G"]),
    "mem-bind": (["local", "none", "verbose,local", "map_mem:0,1"], ["far"]),
    "mem-per-cpu": (["2G", "3968M", "1000"], ["2.5G", "big"]),
    "mem-per-gpu": (["80G"], ["lots"]),
    "mincpus": (["4"], ["0", "x"]),
    "network": (["sn_all"], []),
    "nice": (["10", "-5", "0"], ["99999999999"]),
    "no-kill": (["off", "set", "no"], ["maybe"]),
    "nodelist": (["n1", "n[1-2]"], []),
    "nodes": (["1", "2", "1-4", "0", "2-2", "1k", "4-0"], ["two", "4-2", "x-3", "2-x", "1,3",
                                                              "1-15:4", "2.5"]),
    "ntasks": (["1", "64"], ["0", "four", "-1"]),
    "ntasks-per-core": (["1"], ["0"]),
    "ntasks-per-gpu": (["2"], ["0"]),
    "ntasks-per-node": (["8", "1"], ["0", "eight", "8x"]),
    "ntasks-per-socket": (["2"], ["zero"]),
    "ntasks-per-tres": (["2"], ["0"]),
    "open-mode": (["append", "truncate", "APPEND", "a", "trunc"], ["overwrite", "rewrite"]),
    "output": (["slurm-%j.out", "logs/%x_%j.log", "out-%A_%a.txt", "%N-%n-%t-%u-%s.out",
                "/dev/null", "o%%j"], []),
    "partition": (["debug", "gpu,cpu"], []),
    "power": (["level"], []),
    "prefer": (["a100"], []),
    "priority": (["10", "TOP", "0"], ["-5"]),
    "profile": (["all", "none", "task", "energy,task", "Lustre,Network"], ["nonsense"]),
    "qos": (["normal"], []),
    "reservation": (["maint"], []),
    "signal": (["USR1", "B:USR1@90", "10@120", "SIGTERM", "R:USR2", "USR1@0", "BR:TERM@60",
                "sigusr1", "KILL"], ["FOO", "USR1@x", "B:USR1@70000", "0", "USR1@", "@60"]),
    "sockets-per-node": (["2"], ["0"]),
    "switches": (["1", "2@10:00"], ["0", "x"]),
    "thread-spec": (["2"], ["0"]),
    "threads-per-core": (["1", "2"], ["0", "x"]),
    "time": (["10", "0", "10:30", "1:00:00", "48:00:00", "2-0", "2-12", "2-12:30",
              "7-00:00:00", "INFINITE", "unlimited", "-1", "00:90:00", "90:30", "3600",
              "1:2:3"], ["3600.0", "1h", "1:99:99:99", "1-2-3", "a", "1:2-3", "10 min",
                         "1-", "::", "-2"]),
    "time-min": (["30", "0:30:00"], ["half-hour"]),
    "tmp": (["100G", "500"], ["10.5G"]),
    "wait-all-nodes": (["0", "1"], ["2", "yes"]),
    "wckey": (["proj"], []),
    "cluster": (["offline"], []),
    "clusters": (["offline"], []),
    "propagate": (["ALL", "NONE", "STACK,CORE", "NOFILE"], []),
    "requeue": ([], ["expedite"]),
    "tasks-per-node": (["8"], ["0"]),
    "get-user-env": (["10L", "5S", "10"], ["10X"]),
}
#: options the offline harness cannot exercise faithfully, with the reason
SKIPPED = {
    "wrap": "ignored in a batch script (covered by the SB109 cases)",
    "bbf": "reads a burst-buffer file from the submit host",
    "nodefile": "reads a node file from the submit host",
    "export-file": "reads a file or descriptor on the submit host",
    "uid": "resolves a user and needs root",
    "gid": "resolves a group and needs root",
    "cluster": "--cluster/--clusters ask slurmdbd to resolve the name (no daemon offline)",
    "clusters": "as --cluster",
}
#: a flag value for every option that takes none (22.05)
FLAGS = ["contiguous", "hold", "ignore-pbs", "no-requeue", "overcommit", "oversubscribe",
         "reboot", "spread-job", "use-min-nodes", "requeue", "get-user-env"]
EARLY = ["help", "usage", "version", "verbose", "quiet", "parsable", "test-only", "wait"]


def _script(*lines: str, body: str = BODY) -> bytes:
    return (SHEBANG + "".join(f"{ln}\n" for ln in lines) + "\n" + body).encode()


def _options_2205() -> dict:
    data = json.loads((Path(__file__).resolve().parents[1] / "sbatch_lsp" / "data" /
                       "sbatch_options.json").read_text())
    return {o["long"]: o for o in data["options"]}


def cases() -> list[tuple[str, bytes]]:
    """The generated corpus: (unique name, script bytes)."""
    out: list[tuple[str, bytes]] = []

    def add(name: str, data: bytes) -> None:
        out.append((name, data))

    table = _options_2205()
    shorts = {o["short"]: n for n, o in table.items() if o["short"] and o["in_22_05"]}
    #: companions some options need to pass sbatch's other client checks
    companion = {"gpus-per-socket": "--sockets-per-node=2", "ntasks-per-gpu": "--gpus=2",
                 "ntasks-per-tres": "--gpus=2", "mem-per-gpu": "--gpus=1",
                 "gpus-per-task": "--ntasks=2"}
    # 1. every value-taking option: valid and invalid values, in both spellings
    for name, (good, bad) in VALUES.items():
        if name in SKIPPED:
            continue
        short = table[name]["short"]
        extra = [f"#SBATCH {companion[name]}"] if name in companion else []
        for k, v in enumerate(good):
            add(f"value-{name}-ok{k}", _script(f"#SBATCH --{name}={v}", *extra))
        for k, v in enumerate(bad):
            add(f"value-{name}-bad{k}", _script(f"#SBATCH --{name}={v}", *extra))
        if good and table[name]["arg"] == "required":
            add(f"value-{name}-spaced", _script(f"#SBATCH --{name} {good[0]}", *extra))
            if short:
                add(f"value-{name}-short", _script(f"#SBATCH -{short} {good[0]}"))
                add(f"value-{name}-shortjoined", _script(f"#SBATCH -{short}{good[0]}"))
        if bad and short:
            add(f"value-{name}-shortbad", _script(f"#SBATCH -{short} {bad[0]}"))
        if table[name]["arg"] == "required":
            add(f"value-{name}-missing", _script("#SBATCH --job-name=x", f"#SBATCH --{name}"))
    for name in FLAGS:
        add(f"flag-{name}", _script(f"#SBATCH --{name}"))
        if table[name]["arg"] == "none" and name not in ("requeue", "get-user-env"):
            add(f"flag-{name}-arg", _script(f"#SBATCH --{name}=yes"))
    for name in EARLY:
        add(f"early-{name}", _script(f"#SBATCH --{name}"))
    add("early-wrap", _script("#SBATCH --wrap=hostname"))
    add("early-verbose-short", _script("#SBATCH -v"))
    # 2. every option name of other releases, srun and pyxis
    for name, o in table.items():
        if o["in_22_05"]:
            continue
        arg = "" if o["arg"] == "none" else "=1"
        add(f"version-{name}", _script(f"#SBATCH --{name}{arg}"))
    srun_only = ["mpi=pmix", "pty", "label", "kill-on-bad-exit", "overlap", "exact", "whole",
                 "cpu-bind=cores", "multi-prog", "unbuffered", "het-group=0", "relative=1",
                 "task-prolog=/x", "bcast", "accel-bind=g", "quit-on-interrupt",
                 "disable-status", "threads=4", "msg-timeout=10", "interactive",
                 "ntasks-per-node-srun", "slurmd-debug=3", "send-libs", "preserve-env",
                 "treewidth=2", "wait-for-children", "external-launcher"]
    for s in srun_only:
        add(f"srun-{s.split('=')[0]}", _script(f"#SBATCH --{s}"))
    for letter in "lKuZEXT":
        add(f"srun-short-{letter}", _script(f"#SBATCH -{letter}"))
    for p in ["container-image=nvcr.io/nvidia/pytorch:24.01-py3", "container-mounts=/a:/b",
              "no-container-mount-home", "container-workdir=/w", "container-name=x",
              "container-writable", "container-env=FOO"]:
        add(f"pyxis-{p.split('=')[0]}", _script(f"#SBATCH --{p}"))
    # 3. spellings and prefixes
    multi = [n for n, o in table.items() if o["in_22_05"] and "-" in n]
    for n in multi:
        o = table[n]
        arg = "" if o["arg"] == "none" else "=" + (VALUES.get(n, (["1"], []))[0] or ["1"])[0]
        if n in SKIPPED or n in EARLY or n == "wrap":
            continue
        add(f"spelling-underscore-{n}", _script(f"#SBATCH --{n.replace('-', '_')}{arg}"))
    for typo in ["gpu-per-node=8", "gpus-per-nodes=8", "ntask=4", "node=2", "Nodes=2",
                 "TIME=10", "partion=debug", "cpu-per-task=4", "mem-per-core=1G", "memory=4G",
                 "output-file=x", "job_name=x", "tasks=4", "walltime=10", "gres-per-node=gpu:1",
                 "nnodes=2", "gpus_per_node=8", "exclusve", "qos_name=x", "acount=x"]:
        add(f"spelling-typo-{typo.split('=')[0]}", _script(f"#SBATCH --{typo}"))
    prefixes = ["ntasks-per-n=8", "partit=debug", "nodel=n1", "job-n=x", "cpus-per-t=4",
                "gpus-per-n=8", "mail-t=END", "mem-per-c=1G", "out=x", "tim=10",
                "exclusiv", "dep=singleton", "chd=/tmp", "sig=USR1", "array=1-2",
                "cons=x", "acc=x", "reserv=x", "wait-all=1", "threads-per=1"]
    for p in prefixes:
        add(f"prefix-{p.split('=')[0]}", _script(f"#SBATCH --{p}"))
    for p in ["mem-per=1G", "gpus-per=1", "nod=2", "exclu", "ntasks-per=1", "cpu=1", "cont=x",
              "time=10 --mem-per=1G", "no=1", "t=10", "mem-=1G", "gpus-=1", "c=4"]:
        add(f"ambiguous-{p.split('=')[0]}", _script(f"#SBATCH --{p}"))
    for letter, name in sorted(shorts.items()):
        if name in SKIPPED:
            continue
        good = VALUES.get(name, ([], []))[0]
        if table[name]["arg"] == "none":
            if name in EARLY:
                continue
            add(f"short-{letter}", _script(f"#SBATCH -{letter}"))
        elif good:
            add(f"short-{letter}-value", _script(f"#SBATCH -{letter} {good[0]}"))
    for letter in "fgjPRUYyz":
        add(f"short-unknown-{letter}", _script(f"#SBATCH -{letter}"))
    add("short-cluster-flags", _script("#SBATCH -HO"))
    add("short-cluster-value", _script("#SBATCH -HN2"))
    # 4. tokenizer rules (slurm-facts.md §1.3)
    tok = {
        "nospace": "#SBATCH--nodes=2", "tab": "#SBATCH\t--nodes=2", "x-suffix": "#SBATCHX --nodes=2",
        "trailing-comment": "#SBATCH --nodes=2 # two nodes",
        "comment-nospace": "#SBATCH --mem=8G#comment", "hash-in-name": "#SBATCH --job-name=a#b",
        "hash-quoted": '#SBATCH --job-name="a#b"', "hash-escaped": "#SBATCH --job-name=a\\#b",
        "hash-single-quoted": "#SBATCH --job-name='a#b'",
        "quoted-space": '#SBATCH --job-name="my job"', "escaped-space": "#SBATCH --job-name=my\\ job",
        "unmatched-double": '#SBATCH --job-name="my job', "unmatched-single": "#SBATCH --job-name='x",
        "colon-token": "#SBATCH : -N 2", "colon-later": "#SBATCH --nodes=2 :x",
        "stray-word": "#SBATCH nodes=2", "stray-after": "#SBATCH --time=10 extra",
        "paren-remark": "#SBATCH --nodes=2 (two nodes)", "space-name": "#SBATCH -J my job",
        "spaced-equals": "#SBATCH --gres = gpu:2", "equals-after": "#SBATCH --time= 10",
        "double-dash": "#SBATCH -- --nodes=2", "double-dash-alone": "#SBATCH --",
        "empty-directive": "#SBATCH", "empty-directive-spaces": "#SBATCH    ",
        "two-options": "#SBATCH --nodes=2 --ntasks=4", "dollar-var": "#SBATCH --job-name=${USER}_run",
        "dollar-nodes": "#SBATCH --nodes=$NUM_NODES", "cmd-subst": "#SBATCH --job-name=$(date +%s)",
        "cmd-subst-nospace": "#SBATCH --job-name=$(date)", "tilde": "#SBATCH --chdir=~/work",
        "dollar-output": "#SBATCH --output=$HOME/logs/%j.out", "glob": "#SBATCH --output=*.log",
        "backslash-output": "#SBATCH --output=logs\\\\%j.out", "quoted-option": '#SBATCH "--nodes=2"',
        "quote-in-middle": '#SBATCH --job-name=a"b c"d', "escaped-quote": '#SBATCH --job-name=a\\"b',
        "hash-value-image": "#SBATCH --comment=nvcr.io#nvidia/pytorch",
        "slurm-prefix": "#SLURM --nodes=2", "lower": "#sbatch --nodes=2",
        "slurm-prefix-bad": "#SLURM --nodes=two", "slurm-prefix-unknown": "#SLURM --bogus",
        "space-after-hash": "# SBATCH --nodes=2", "double-hash": "##SBATCH --nodes=2",
        "indented": "  #SBATCH --nodes=2", "tab-indented": "\t#SBATCH --nodes=2",
        "hetjob": "#SBATCH --nodes=1\n#SBATCH hetjob\n#SBATCH --nodes=2",
        "packjob": "#SBATCH --nodes=1\n#SBATCH packjob\n#SBATCH --nodes=2",
        "value-next-line": "#SBATCH --time\n#SBATCH 10",
        "comment-only": "#SBATCH # just a comment",
        "trailing-backslash": "#SBATCH --gpus=8 \\\n#SBATCH --mem=4G",
        "one-dash-long": "#SBATCH -array=1-4", "one-dash-time": "#SBATCH -time=10",
        "template-braces": "#SBATCH -p { partition }", "template-angle": "#SBATCH -A <your account>",
        "cr-in-line": "#SBATCH --job-name=a\rb",
        "unicode-value": "#SBATCH --job-name=tränung", "unicode-dash": "#SBATCH \u2013nodes=2",
        "em-dash": "#SBATCH \u2014time=10", "nbsp": "#SBATCH --nodes=2\u00a0",
        "value-with-equals": "#SBATCH --export=A=1,B=2", "dash-value": "#SBATCH --nice=-5",
        "dash-value-spaced": "#SBATCH --nice -5", "short-dash-value": "#SBATCH -J -weird",
    }
    for k, line in tok.items():
        add(f"tokens-{k}", _script(line))
    # 5. placement
    place = {
        "after-set": ("set -euo pipefail\n#SBATCH --nodes=2\n", "late"),
        "after-module": ("module load x\n#SBATCH --nodes=2\n", "late"),
        "after-colon": (":\n#SBATCH --nodes=2\n", "late"),
        "after-export": ("export X=1\n#SBATCH --nodes=2\n", "late"),
        "after-blank": ("\n\n#SBATCH --nodes=2\n", "ok"),
        "after-comments": ("# a\n#\n# b\n#SBATCH --nodes=2\n", "ok"),
        "after-indented-comment": ("   # a\n#SBATCH --nodes=2\n", "ok"),
        "after-function": ("f() { :; }\n#SBATCH --nodes=2\n", "late"),
        "late-invalid": ("echo hi\n#SBATCH --nodes=two\n", "late"),
        "late-unknown": ("echo hi\n#SBATCH --bogus\n", "late"),
        "heredoc": ("cat <<EOF\n#SBATCH --nodes=2\nEOF\n", "late"),
    }
    for k, (head, _) in place.items():
        add(f"placement-{k}", (SHEBANG + head + BODY).encode())
    # 6. combinations
    combos = {
        "mem-and-per-cpu": ["--mem=8G", "--mem-per-cpu=2G"],
        "mem-and-per-gpu": ["--mem=8G", "--mem-per-gpu=2G", "--gpus=1"],
        "per-cpu-and-per-gpu": ["--mem-per-cpu=8G", "--mem-per-gpu=2G", "--gpus=1"],
        "mem-per-gpu-no-gpu": ["--mem-per-gpu=8G"],
        "mem-per-gpu-gres": ["--mem-per-gpu=8G", "--gres=gpu:1"],
        "gpus-per-task-alone": ["--gpus-per-task=1"],
        "gpus-per-task-ntasks": ["--gpus-per-task=1", "--ntasks=2"],
        "gpus-per-task-gpus": ["--gpus-per-task=1", "--gpus=2"],
        "gpus-per-task-ntasks-per-node": ["--gpus-per-task=1", "--ntasks-per-node=2"],
        "gpus-per-task-nodes": ["--gpus-per-task=1", "--nodes=2"],
        "mail-type-accumulates": ["--mail-type=BEGIN", "--mail-type=END", "--mail-type=FAIL"],
        "ntasks-per-gpu-and-per-node": ["--ntasks-per-gpu=2", "--ntasks-per-node=2", "--gpus=2"],
        "ntasks-per-gpu-and-gpus-per-task": ["--ntasks-per-gpu=2", "--gpus-per-task=1",
                                             "--ntasks=2"],
        "ntasks-per-gpu-ok": ["--ntasks-per-gpu=2", "--gpus=2"],
        "core-and-thread-spec": ["--core-spec=1", "--thread-spec=1"],
        "cpus-per-task-and-per-gpu": ["--cpus-per-task=2", "--cpus-per-gpu=2", "--gpus=1"],
        "exclusive-and-oversubscribe": ["--exclusive", "--oversubscribe"],
        "gpus-per-node-and-gres": ["--gpus-per-node=2", "--gres=gpu:2"],
        "duplicate-same": ["--nodes=2", "--nodes=2"],
        "duplicate-different": ["--nodes=2", "--nodes=3"],
        "duplicate-time": ["--time=10", "--time=1:00:00"],
        "duplicate-short-long": ["-N 2", "--nodes=4"],
        "requeue-then-no": ["--requeue", "--no-requeue"],
        "nodes-more-than-tasks": ["--nodes=4", "--ntasks=2"],
        "begin-after-deadline": ["--begin=now+2hours", "--deadline=now+1hour"],
        "gres-and-gpus": ["--gres=gpu:1", "--gpus=1"],
        "hint-and-threads": ["--hint=nomultithread", "--threads-per-core=1"],
        "nodelist-fewer-nodes": ["--nodes=3", "--nodelist=localhost"],
        "mail-type-twice": ["--mail-type=BEGIN", "--mail-type=END"],
        "arbitrary-no-nodelist": ["--distribution=arbitrary"],
        "arbitrary-nodelist": ["--distribution=arbitrary", "--nodelist=localhost"],
        "gpus-per-socket-alone": ["--gpus-per-socket=1"],
        "ntasks-per-gpu-alone": ["--ntasks-per-gpu=1"],
        "ntasks-per-gpu-nodes": ["--ntasks-per-gpu=1", "--nodes=1"],
        "deadline-after-begin": ["--begin=now+1hour", "--deadline=now+2hours"],
        "gpus-ntasks-mismatch": ["--gpus=4", "--gpus-per-task=1", "--ntasks=2"],
        "hetjob-duplicates": ["--nodes=1", "hetjob", "--nodes=2"],
    }
    for k, opts_ in combos.items():
        add(f"combo-{k}", _script(*[f"#SBATCH {o}" for o in opts_]))
    # 7. whole-file faults (slurm-facts.md §1.2)
    whole = {
        "empty": b"", "whitespace": b"  \n\n\t\n", "no-shebang": b"#SBATCH --nodes=1\nhostname\n",
        "bom": b"\xef\xbb\xbf#!/bin/bash\n#SBATCH --nodes=1\nhostname\n",
        "leading-blank": b"\n#!/bin/bash\n#SBATCH --nodes=1\nhostname\n",
        "leading-space": b" #!/bin/bash\n#SBATCH --nodes=1\nhostname\n",
        "crlf": b"#!/bin/bash\r\n#SBATCH --nodes=1\r\nhostname\r\n",
        "one-crlf": b"#!/bin/bash\n#SBATCH --nodes=1\nhostname\r\n",
        "cr-only": b"#!/bin/bash\n#SBATCH --nodes=1\nhostname\r",
        "nul": b"#!/bin/bash\n#SBATCH --nodes=1\nhost\x00name\n",
        "shebang-only": b"#!/bin/bash\n", "shebang-sh": b"#!/bin/sh\n#SBATCH -N 1\nhostname\n",
        "shebang-env": b"#!/usr/bin/env bash\n#SBATCH -N 1\nhostname\n",
        "shebang-space": b"#! /bin/bash\n#SBATCH -N 1\nhostname\n",
        "no-newline": b"#!/bin/bash\n#SBATCH -N 1\nhostname",
        "directives-only": b"#!/bin/bash\n#SBATCH -N 1\n",
        "python": b"#!/usr/bin/env python3\n#SBATCH -N 1\nprint(1)\n",
        "shebang-hash-only": b"#!\n#SBATCH -N 1\nhostname\n",
    }
    for k, data in whole.items():
        add(f"file-{k}", data)
    # 8. quoting of values
    for k, v in enumerate(['"10"', "'10'", '"1:00:00"', '1":00:"00', '""', "''"]):
        add(f"quoting-time-{k}", _script(f"#SBATCH --time={v}"))
    for k, v in enumerate(['"8G"', "'8 G'", '"2"', "'two'"]):
        add(f"quoting-mem-{k}", _script(f"#SBATCH --mem={v}"))
    return out
