"""The README's "Python API" examples, run as written: every ```python block of the section
in order, in one fresh Python process (its own driver), then its ```bash command-line
examples against what the Python examples left on disk. The Spark Connect blocks are run by
tests/test_spark_connect.py against a real Connect server."""
import json
import os
import re
import subprocess

from conftest import ROOT, VENV_BIN, assert_ok

SECTION = "## Python API"


def readme_section(title=SECTION):
    with open(os.path.join(ROOT, "README.md")) as f:
        text = f.read()
    start = text.index("\n%s\n" % title)
    end = text.find("\n## ", start + 1)
    return text[start:end if end >= 0 else len(text)]


def code_blocks(section, language):
    return re.findall(r"```%s\n(.*?)```" % language, section, flags=re.S)


def is_connect(block):
    return ".remote(" in block or "SparkConnectServer" in block


def test_section_has_examples_for_every_api():
    section = readme_section()
    python = "\n".join(code_blocks(section, "python"))
    for api in ("DriverCheckpointStorage(", "FileSystemCheckpointStorage(",
                "configure_spark_with_checkpoint_storage(", "get_checkpoint_config(",
                "inspect_checkpoint(", "savepoint(", "StaticConfigurationException",
                "IllegalCheckpointStorageArgumentException", ".remote("):
        assert api in python, api
    assert any("inspect" in b for b in code_blocks(section, "bash"))


def test_python_api_examples_run(subproc, tmp_path):
    section = readme_section()
    blocks = [b for b in code_blocks(section, "python") if not is_connect(b)]
    env_file = tmp_path / "env.json"
    script = "\n\n".join(blocks) + (
        "\n\nimport json\n"
        "with open(%r, 'w') as _f:\n"
        "    json.dump({'CHECKPOINT': checkpoint, 'ROOT': root}, _f)\n" % str(env_file))
    result = subproc.python(script, timeout=400)
    out = assert_ok(result)
    # print(storage) and print(info) from the examples.
    assert "FileSystemCheckpointStorage (checkpoints to file system" in out
    assert "committed batches 0-2" in out
    paths = json.loads(env_file.read_text())
    assert os.path.getsize(os.path.join(paths["ROOT"], "checkpoint.png")) > 0

    for block in code_blocks(section, "bash"):
        if is_connect(block):
            continue
        env = subproc.env(paths)
        env["PATH"] = VENV_BIN + os.pathsep + env["PATH"]
        done = subprocess.run(["bash", "-euo", "pipefail", "-c", block], capture_output=True,
                              text=True, timeout=300, env=env)
        shown = assert_ok(done)
        assert "committed batches 0-2" in shown
        with open(os.path.join(paths["ROOT"], "state.png"), "rb") as f:
            assert f.read(4) == b"\x89PNG"


def test_switching_an_existing_query_examples_run(subproc, tmp_path):
    """The section "Switching an existing query": its Python block (a query on Spark's HDFS
    provider migrated to ours and resumed) in a fresh process, then its command line
    (migrating the original checkpoint at an earlier batch to RocksDB)."""
    section = readme_section("## Switching an existing query")
    blocks = code_blocks(section, "python")
    assert blocks and "migrate(" in blocks[0]
    env_file = tmp_path / "env.json"
    script = "\n\n".join(blocks) + (
        "\n\nimport json\n"
        "with open(%r, 'w') as _f:\n"
        "    json.dump({'ROOT': root}, _f)\n" % str(env_file))
    out = assert_ok(subproc.python(script, timeout=400))
    assert "HDFSBackedStateStoreProvider -> HeapStateStoreProvider, rows=1000" in out
    paths = json.loads(env_file.read_text())
    [block] = code_blocks(section, "bash")
    env = subproc.env(paths)
    env["PATH"] = VENV_BIN + os.pathsep + env["PATH"]
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", block], capture_output=True,
                          text=True, timeout=300, env=env)
    shown = assert_ok(done)
    assert "migrated batch 1 of" in shown and "RocksDBStateStoreProvider" in shown
    target = os.path.join(paths["ROOT"], "checkpoint-rocksdb")
    assert sorted(os.listdir(os.path.join(target, "commits"))) == ["0", "1"]
    with open(os.path.join(target, "offsets", "1")) as f:
        assert "RocksDBStateStoreProvider" in f.read()
    with open(os.path.join(target, "_migration")) as f:
        assert json.load(f)["batchId"] == 1
