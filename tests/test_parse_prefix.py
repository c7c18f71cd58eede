"""``parse.PREFIX_ASSIGN``, the test of a word before a command's name that is an assignment, is
``parse.ASSIGN`` matching with no index (``NAME=``, ``NAME+=``; ``A[1]=x`` is no prefix
assignment to bashlex), at every position of tricky and random texts."""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sbatch_lsp.shell import parse


def _agrees(text: str) -> bool:
    for i in range(len(text) + 1):
        m = parse.ASSIGN.match(text, i)
        if (parse.PREFIX_ASSIGN.match(text, i) is not None) != \
                (m is not None and m.group(2) is None):
            return False
    return True


@pytest.mark.parametrize("text", [
    "A=1", "A+=1", "A[1]=x", "A[1]+=x", "A[=1", "A]=1", "_a9=", "9a=", "a b=", "A==", "A+1=",
    "AB[x] y=1", "A=[1]", "a[]=", "=", "+=", "A", "ab+", "ÄB=1", "X[1]Y=2"])
def test_the_prefix_test_is_assign_without_an_index_on_tricky_texts(text):
    assert _agrees(text)


@settings(max_examples=2000, deadline=None)
@given(st.text(alphabet="aZ_9[]+= -x", max_size=12))
def test_the_prefix_test_is_assign_without_an_index_on_random_texts(text):
    assert _agrees(text), text
