# SPDX-License-Identifier: MIT
# The type stubs (bloomkit/__init__.pyi) describe the module as built: every
# name in bloomkit.__all__ is in the stubs and the other way round, each
# class's public methods and properties (and the protocol methods it
# defines: __contains__, __len__, __iter__, item access, operators, context
# manager) are in its stub class and no more, exception classes derive
# from the same bases, and py.typed marks the package as typed (PEP 561).
# mypy's stubtest (Debian's mypy, from scripts/bootstrap.sh) then checks
# the stubs against the imported module the way type checkers read them.
import ast
import os
import pathlib
import subprocess
import sys

import pytest

import bloomkit

PKG = pathlib.Path(bloomkit.__file__).resolve().parent
SRC = pathlib.Path(__file__).resolve().parents[1] / "bloomkit"
PROTOCOL = {"__contains__", "__len__", "__iter__", "__getitem__",
            "__setitem__", "__delitem__", "__enter__", "__exit__", "__or__",
            "__and__", "__ior__", "__iand__"}


def stub_tree():
    return ast.parse((SRC / "__init__.pyi").read_text(encoding="utf-8"))


def stub_classes():
    return {n.name: n for n in stub_tree().body if isinstance(n, ast.ClassDef)}


# Slots the runtime has but refuses (t[key] = v raises TypeError): not in
# the stubs, so type checkers flag them.
REFUSED = {("IdempotentCounters", "__setitem__")}


def stub_members(cls):
    names = set()
    for n in cls.body:
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(n.name)
        elif isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name):
            names.add(n.target.id)
        elif isinstance(n, ast.Assign):
            names.update(t.id for t in n.targets if isinstance(t, ast.Name))
    return {n for n in names if not n.startswith("__") or n in PROTOCOL}


def runtime_members(cls):
    names = {a for a in dir(cls) if not a.startswith("_")}
    for klass in cls.__mro__:
        if klass is object or klass is tuple:
            break
        names |= PROTOCOL & set(vars(klass))
    return names


def test_py_typed_and_stubs_are_beside_the_module():
    assert (SRC / "py.typed").exists()
    assert (SRC / "__init__.pyi").exists()
    assert (PKG / "__init__.pyi").exists(), "the build/install lacks the stubs"


def test_every_public_name_is_in_the_stubs():
    tree = stub_tree()
    declared = set()
    for n in tree.body:
        if isinstance(n, ast.ClassDef):
            declared.add(n.name)
        elif isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name):
            declared.add(n.target.id)
        elif isinstance(n, ast.FunctionDef):
            declared.add(n.name)
    assert set(bloomkit.__all__) - declared == set()
    assert {d for d in declared if not d.startswith("_")} - set(bloomkit.__all__) == set()


@pytest.mark.parametrize("name", sorted(bloomkit.__all__))
def test_class_members_match(name):
    obj = getattr(bloomkit, name)
    if not isinstance(obj, type) or issubclass(obj, BaseException):
        return
    stub = stub_classes()[name]
    if name == "Order" or name == "AddResult":
        members = {a for a in vars(obj) if not a.startswith("_")}
        if name == "AddResult":
            members = {"value", "applied"}
        assert members <= stub_members(stub)
        return
    runtime = {m for m in runtime_members(obj) if (name, m) not in REFUSED}
    assert runtime == stub_members(stub), name


@pytest.mark.parametrize("name", sorted(bloomkit.__all__))
def test_exception_bases_match(name):
    obj = getattr(bloomkit, name)
    if not (isinstance(obj, type) and issubclass(obj, BaseException)):
        return
    stub = stub_classes()[name]
    bases = [ast.unparse(b) for b in stub.bases]
    assert bases == [b.__name__ for b in obj.__bases__], name


def test_every_method_has_a_docstring():
    for name in bloomkit.__all__:
        obj = getattr(bloomkit, name)
        if not isinstance(obj, type) or issubclass(obj, BaseException):
            continue
        assert obj.__doc__, name
        for m in runtime_members(obj):
            attr = getattr(obj, m, None)
            if m.isupper() or name in ("AddResult", "Order"):
                continue
            assert getattr(attr, "__doc__", None), f"{name}.{m}"


def test_mypy_stubtest_finds_no_error():
    pytest.importorskip("mypy")
    env = dict(os.environ, PYTHONPATH=str(PKG.parent),
               MYPY_CACHE_DIR=os.devnull)
    r = subprocess.run([sys.executable, "-m", "mypy.stubtest", "bloomkit"],
                       capture_output=True, text=True, env=env, timeout=240,
                       cwd=PKG.parent)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]


def test_the_stubs_type_check_an_example():
    pytest.importorskip("mypy")
    code = (
        "import bloomkit\n"
        "bf = bloomkit.BloomFilter(1000, 0.01)\n"
        "bf.add('a'); bf.update([b'b', 3, 2.5])\n"
        "ok: bool = bf.add_if_absent('c') and ('a' in bf)\n"
        "r = bloomkit.IdempotentCounters(60).add('k', client=1, seq=1)\n"
        "v: int = r.value\n"
        "bad: str = bf.fpp\n"  # the one error mypy must report
    )
    env = dict(os.environ, PYTHONPATH=str(PKG.parent),
               MYPY_CACHE_DIR=os.devnull)
    r = subprocess.run([sys.executable, "-m", "mypy", "--strict", "-c", code],
                       capture_output=True, text=True, env=env, timeout=240,
                       cwd=PKG.parent)
    out = r.stdout
    assert r.returncode == 1, out
    assert out.count("error:") == 1 and '"float"' in out and "str" in out, out
