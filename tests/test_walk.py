"""``Script.walk()`` read from the list ``seal()`` makes at the end of parse_script gives the
commands the walk through the scripts gives (nested strings, written files and split
variables included, in the same order), for every script the project holds."""
import pytest

from rule_pages import sample_scripts
from sbatch_lsp.shell.model import Script
from sbatch_lsp.shell.parse import parse_script


def through(script: Script) -> list:
    """The depth-first walk, done here without the sealed lists."""
    out = []
    for cmd in script.commands:
        out.append(cmd)
        for inner in cmd.nested:
            out += through(inner)
    return out


@pytest.mark.parametrize("text", sample_scripts())
def test_sealed_walk_is_the_walk(text):
    script = parse_script(text)
    assert script._walked is not None
    assert list(script.walk()) == through(script)


def test_nested_commands_are_walked():
    text = ('#!/bin/bash\nL="torchrun --nproc-per-node=8 t.py"\n'
            'srun bash -c "cd /x && python a.py"\nsrun $L\n')
    script = parse_script(text)
    names = [c.name for c in script.walk()]
    assert names == [None, "srun", "cd", "python", "srun", "torchrun"]


def test_an_unsealed_script_walks_what_it_holds():
    script = parse_script("echo a\n")
    inner = parse_script("echo b\n")
    fresh = Script(commands=list(script.commands))
    fresh.commands[0].nested.append(inner)
    assert [c.name for c in fresh.walk()] == ["echo", "echo"]
