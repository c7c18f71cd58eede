"""Value records that are no longer frozen dataclasses (a frozen ``__init__`` sets each field
through ``object.__setattr__``, ~3x the cost of a plain one, and the linter builds thousands
per file) keep what frozen gave them: equality by value and a hash of their fields, so that
sets and dict keys of them behave as before."""
import pytest

from sbatch_lsp.diagnostics import Edit, Fix, Related
from sbatch_lsp.facts.containers import Text
from sbatch_lsp.facts.control import Atom, Tasks
from sbatch_lsp.facts.exports import Event
from sbatch_lsp.facts.framework import Setting
from sbatch_lsp.facts.layout import Request, StepRequest
from sbatch_lsp.options import Option, Resolution
from sbatch_lsp.secrets import Masker
from sbatch_lsp.shell.model import Expansion

# each a function building one record from fixed fields: two calls give equal, distinct objects
BUILDERS = {
    "Expansion": lambda: Expansion("X", "var", "double", 3, 7, "${X}", nested=True),
    "Option": lambda: Option("nodes", "N", "required"),
    "Resolution": lambda: Resolution("nod", Option("nodes", "N", "required"), True),
    "Request": lambda: Request(True, 2),
    "StepRequest": lambda: StepRequest(Request(True, 2), Request(), Request(True, None)),
    "Tasks": lambda: Tasks((Atom("procid", "eq", 0, 5, 20),), opaque=True),
    "Event": lambda: Event("N", 12, "export"),
    "Text": lambda: Text("/img.sqsh", 4, 13, True),
    "Setting": lambda: Setting("tp", 4, 30, 31, "--tensor-model-parallel-size"),
    "Edit": lambda: Edit(1, 2, "x"),
    "Related": lambda: Related(1, 2, "note"),
    "Fix": lambda: Fix("do it", (Edit(1, 2, "x"),), safe=False),
    "Masker": lambda: Masker(("hf_secret",)),
}


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_equal_fields_make_equal_records_with_equal_hashes(name):
    a, b = BUILDERS[name](), BUILDERS[name]()
    assert a is not b
    assert a == b
    assert hash(a) == hash(b)
    assert len({a, b}) == 1
    assert {a: 1}[b] == 1


def test_a_changed_field_makes_a_different_record():
    assert Event("N", 12, "export") != Event("N", 12, "unset")
    assert Request(True, 2) != Request(True, 3)
    assert Expansion("X", "var", "double", 3, 7, "$X") != Expansion("X", "var", "double", 4, 8, "$X")
