# SPDX-License-Identifier: MIT
# The Python examples of the README and docs/python.md run as written: each
# ```python block is executed in a fresh namespace (a block that imports
# numpy is skipped when numpy is missing), so the docs cannot drift from
# the binding unnoticed.
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOCS = ["README.md", "docs/python.md", "python/README.md"]


def blocks():
    for doc in DOCS:
        path = ROOT / doc
        if not path.exists():
            continue
        text = path.read_text(encoding="utf-8")
        for i, m in enumerate(re.finditer(r"```python\n(.*?)```", text, re.S)):
            line = text.count("\n", 0, m.start()) + 2
            yield pytest.param(doc, line, m.group(1), id=f"{doc}:{line}")


@pytest.mark.parametrize("doc, line, code", list(blocks()))
def test_example_runs(doc, line, code, tmp_path, monkeypatch):
    if "numpy" in code:
        pytest.importorskip("numpy")
    monkeypatch.chdir(tmp_path)  # examples that write files write them here
    exec(compile(code, f"{doc}:{line}", "exec"), {"__name__": "__example__"})


def test_the_readme_has_a_python_example():
    assert any(p.values[0] == "README.md" for p in blocks())
