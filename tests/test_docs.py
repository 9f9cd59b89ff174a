"""The documentation build (dev/docs, run by dev/test) fails on what would mislead a reader:
a public name without a docstring or example, a reference to a name that does not exist, a
link to a missing page or heading. Each is put into a copy of docs/ and the build must stop."""
import importlib.util
import os
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT


def _copy_docs(tmp_path):
    """docs/ and README.md copied; the package sources linked (conf.py documents them)."""
    shutil.copytree(os.path.join(ROOT, "docs"), tmp_path / "docs",
                    ignore=shutil.ignore_patterns("api"))
    shutil.copy(os.path.join(ROOT, "README.md"), tmp_path / "README.md")
    os.symlink(os.path.join(ROOT, "python"), tmp_path / "python")
    return tmp_path / "docs"


def _build(docs, out):
    # Sphinx's dummy builder reads and resolves every page as the html one does, and so
    # reports the same references; it writes nothing (a third of the html build's CPU).
    return subprocess.run([sys.executable, "-m", "sphinx", "-E", "-W", "--keep-going", "-n", "-q",
                           "-b", "dummy", "-d", str(out / "doctrees"), str(docs), str(out / "html")],
                          capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def docs_conf():
    spec = importlib.util.spec_from_file_location("docs_conf", os.path.join(ROOT, "docs", "conf.py"))
    conf = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conf)
    return conf


def test_every_public_name_is_documented(docs_conf):
    assert docs_conf.undocumented_public_names() == []


def test_a_public_name_without_docstring_or_example_is_reported(docs_conf, monkeypatch):
    from spark_checkpoint_storage import jvm_names, savepoints

    monkeypatch.setattr(savepoints.savepoint, "__doc__", None)
    monkeypatch.setattr(jvm_names.spark_file_manager_class, "__doc__", "No example.")
    problems = docs_conf.undocumented_public_names()
    assert "spark_checkpoint_storage.savepoints.savepoint has no docstring" in problems
    assert ("spark_checkpoint_storage.jvm_names.spark_file_manager_class has no example "
            "(>>>) in its docstring") in problems


def test_dead_links_and_references_fail_the_build(tmp_path):
    docs = _copy_docs(tmp_path / "src")
    with open(docs / "benchmarks.md", "a") as f:
        f.write("\nSee [a heading](operations.md#no-such-heading), [a page](no-such-page.md) and "
                "{py:func}`spark_checkpoint_storage.savepoints.no_such_function`.\n")
    built = _build(docs, tmp_path / "out")
    assert built.returncode != 0
    assert "local id not found in doc 'operations': 'no-such-heading'" in built.stderr
    assert "no-such-page.md" in built.stderr
    assert "spark_checkpoint_storage.savepoints.no_such_function" in built.stderr
