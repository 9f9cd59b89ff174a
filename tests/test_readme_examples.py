"""The code examples of README.md and docs/, run as written.

Every ```python and ```bash block of a page runs: the page's Python blocks in order in one
fresh Python process (its own driver), then its bash blocks, with every string the Python
blocks left in a global variable exported as an environment variable of the upper-cased name
(``root`` as ``$ROOT``; never one the environment has, such as ``$PATH``). A block that cannot run says why in a comment just above it,
``<!-- not run: reason -->``; a block run by a test of its own says which,
``<!-- run by tests/test_x.py ... -->`` (the Spark Connect blocks, against a real server, by
tests/test_spark_connect.py).
"""
import glob
import json
import os
import re
import subprocess
from typing import List, NamedTuple, Optional

import pytest

from conftest import ROOT, VENV_BIN, assert_ok

RUN_LANGUAGES = ("python", "bash", "sh", "shell", "console")
RUN_BY = re.compile(r"run by (tests/\w+\.py)\b")
CONNECT_MARK = "run by tests/test_spark_connect.py"
_FENCE = re.compile(r"(?:<!--(?P<mark>[^\n]*?)-->\n)?^```(?P<lang>\{?[\w-]*\}?)[^\n]*\n(?P<code>.*?)^```",
                    re.S | re.M)


class Block(NamedTuple):
    page: str
    language: str
    code: str
    mark: Optional[str]

    @property
    def runs_here(self) -> bool:
        return self.language in RUN_LANGUAGES and self.mark is None


def pages() -> List[str]:
    """README.md and every Markdown page of docs/, relative to the repository."""
    found = ["README.md"] + sorted(
        os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "**", "*.md"),
                                                    recursive=True))
    return found


def code_blocks(page: str) -> List[Block]:
    with open(os.path.join(ROOT, page)) as f:
        text = f.read()
    return [Block(page, m.group("lang"), m.group("code"),
                  m.group("mark").strip() if m.group("mark") is not None else None)
            for m in _FENCE.finditer(text)]


def connect_blocks(language: str) -> List[str]:
    """The Spark Connect blocks of the docs in ``language`` (run by test_spark_connect.py)."""
    return [b.code for page in pages() for b in code_blocks(page)
            if b.language == language and b.mark and b.mark.startswith(CONNECT_MARK)]


#: What a page's examples must print (beyond the assertions inside them), and files they
#: must leave: checks that the examples really ran what they show.
EXPECTED_OUTPUT = {
    "docs/python-guide.md": ["FileSystemCheckpointStorage (checkpoints to file system",
                             "committed batches 0-2"],
    "docs/state-backends.md": ["EmbeddedRocksDBStateBackend (org.apache.spark.sql.execution."
                               "streaming.state.RocksDBStateStoreProvider, changelog "
                               "checkpointing on)"],
    "docs/operations.md": ["HDFSBackedStateStoreProvider -> HeapStateStoreProvider, rows=1000",
                           "migrated batch 1 of", "RocksDBStateStoreProvider"],
}


def test_every_block_runs_or_says_why():
    """A shell or Python block is run here, by the test it names (which reads the page), or
    marked with the reason it cannot run."""
    for page in pages():
        for block in code_blocks(page):
            if block.language in RUN_LANGUAGES and block.mark is not None:
                run_by = RUN_BY.match(block.mark)
                if run_by:
                    with open(os.path.join(ROOT, run_by.group(1))) as f:
                        assert os.path.basename(page) in f.read() or run_by.group(1) == \
                            "tests/test_spark_connect.py", (page, block.mark)
                else:
                    assert block.mark.startswith("not run: ") and len(block.mark) > 12, \
                        (page, block.mark)
            # A block says what it holds (MyST directives, "{include}", are not code).
            assert block.language, "%s: a code block without a language" % page
    assert connect_blocks("python") and connect_blocks("bash")


def test_python_guide_has_examples_for_every_api():
    python = "\n".join(b.code for b in code_blocks("docs/python-guide.md")
                       if b.language == "python")
    for api in ("DriverCheckpointStorage(", "FileSystemCheckpointStorage(",
                "configure_spark_with_checkpoint_storage(", "get_checkpoint_config(",
                "inspect_checkpoint(", "savepoint(", "StaticConfigurationException",
                "IllegalCheckpointStorageArgumentException", ".remote("):
        assert api in python, api
    assert "migrate(" in "\n".join(b.code for b in code_blocks("docs/operations.md"))


def _pages_with_examples() -> List[str]:
    return [p for p in pages() if any(b.runs_here for b in code_blocks(p))]


@pytest.mark.parametrize("page", _pages_with_examples())
def test_page_examples_run(page, subproc, tmp_path):
    blocks = [b for b in code_blocks(page) if b.runs_here]
    python = [b.code for b in blocks if b.language == "python"]
    env_file = tmp_path / "env.json"
    script = "\n\n".join(python) + (
        "\n\nimport json as _json\n"
        "with open(%r, 'w') as _f:\n"
        "    _json.dump({_k.upper(): _v for _k, _v in dict(globals()).items()\n"
        "               if isinstance(_v, str) and not _k.startswith('_')}, _f)\n"
        % str(env_file))
    shown = assert_ok(subproc.python(script, timeout=400)) if python else ""
    variables = json.loads(env_file.read_text()) if python else {}
    for block in blocks:
        if block.language == "python":
            continue
        # A variable named like the environment's own (``path``) does not replace it.
        env = subproc.env({k: v for k, v in variables.items() if k not in os.environ})
        env["PATH"] = VENV_BIN + os.pathsep + env["PATH"]
        done = subprocess.run(["bash", "-euo", "pipefail", "-c", block.code],
                              capture_output=True, text=True, timeout=300, env=env, cwd=ROOT)
        shown += assert_ok(done)
    for expected in EXPECTED_OUTPUT.get(page, []):
        assert expected in shown, (page, expected)
    if page == "docs/python-guide.md":
        with open(os.path.join(variables["ROOT"], "state.png"), "rb") as f:
            assert f.read(4) == b"\x89PNG"
        assert os.path.getsize(os.path.join(variables["ROOT"], "checkpoint.png")) > 0
    if page == "docs/operations.md":
        target = os.path.join(variables["ROOT"], "checkpoint-rocksdb")
        assert sorted(os.listdir(os.path.join(target, "commits"))) == ["0", "1"]
        with open(os.path.join(target, "offsets", "1")) as f:
            assert "RocksDBStateStoreProvider" in f.read()
        with open(os.path.join(target, "_migration")) as f:
            assert json.load(f)["batchId"] == 1
