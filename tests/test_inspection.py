"""Checkpoint inspection, checked against the files on disk: the commit log, the real state
files, and the packs (parsed here independently of the JVM); the command line in a fresh
process (no driver: inline state read from the packs) agrees with the in-driver view."""
import json
import os
import re
import struct
import subprocess
import sys
import textwrap
from datetime import datetime, timedelta, timezone

import pytest
from pyspark.sql import functions as F

from spark_checkpoint_storage.checkpoint_config import get_checkpoint_config
from spark_checkpoint_storage.checkpoint_storage import (
    DriverCheckpointStorage,
    FileSystemCheckpointStorage,
)
from spark_checkpoint_storage.errors import CheckpointNotFoundException, CheckpointStateException
from spark_checkpoint_storage.inspection import (
    CheckpointInspection,
    MatplotlibNotInstalledError,
    inspect_checkpoint,
)

from conftest import assert_ok

SCHEMA = "k long, v long"
INSTALL_COMMAND = "pip install 'spark-checkpoint-storage[inspection]'"
PARTITIONS = 3


#: settings of this module's Spark session (the shared ``spark`` fixture of conftest.py)
SPARK_CONF = {"spark.sql.shuffle.partitions": PARTITIONS}


def start(spark, root):
    source = os.path.join(str(root), "source")
    os.makedirs(source, exist_ok=True)
    return (spark.readStream.schema(SCHEMA).parquet(source).groupBy("k")
            .agg(F.count("*").alias("n"))
            .writeStream.outputMode("update").format("noop")
            .option("checkpointLocation", os.path.join(str(root), "checkpoint")).start())


def add_batch(spark, root, query, b, keys=40):
    spark.createDataFrame([(k, b) for k in range(keys)], SCHEMA).coalesce(1) \
        .write.mode("append").parquet(os.path.join(str(root), "source"))
    query.processAllAvailable()


def read_utf(data, pos):
    (n,) = struct.unpack_from(">H", data, pos)
    return data[pos + 2:pos + 2 + n].decode("utf-8"), pos + 2 + n


def parse_pack(path):
    """The pack format of coordinator/StatePack.scala, read independently of the JVM."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"SCSPACK1" and data[-8:] == b"SCSPACK1"
    (batch_id,) = struct.unpack_from(">q", data, 8)
    (index_offset,) = struct.unpack_from(">q", data, len(data) - 16)
    pos = index_offset
    (count,) = struct.unpack_from(">i", data, pos)
    pos += 4
    entries = []
    for _ in range(count):
        rel, pos = read_utf(data, pos)
        offset, length, _crc = struct.unpack_from(">qii", data, pos)
        pos += 16
        entries.append((rel, length))
    (deleted_count,) = struct.unpack_from(">i", data, pos)
    pos += 4
    deleted = []
    for _ in range(deleted_count):
        rel, pos = read_utf(data, pos)
        deleted.append(rel)
    return batch_id, entries, deleted


def inline_files_on_disk(checkpoint):
    """rel path -> (pack name, length) of the inline files the packs hold, oldest pack first."""
    pack_dir = os.path.join(checkpoint, "state-packs")
    live = {}
    for name in sorted(os.listdir(pack_dir), key=lambda n: int(n.split(".")[0])):
        _, entries, deleted = parse_pack(os.path.join(pack_dir, name))
        for rel in deleted:
            live.pop(rel, None)
        for rel, length in entries:
            live[rel] = (name, length)
    return live


def real_state_files(checkpoint):
    out = {}
    for d, _, files in os.walk(os.path.join(checkpoint, "state")):
        for f in files:
            if ".heap-" in f:
                out[os.path.relpath(os.path.join(d, f), checkpoint)] = os.path.getsize(os.path.join(d, f))
    return out


@pytest.fixture(scope="module")
def mixed_checkpoint(spark, tmp_path_factory):
    """Two batches with state packed inline, then two more after a restart with threshold 0,
    where every state file is a file of its own."""
    root = tmp_path_factory.mktemp("mixed")
    config = get_checkpoint_config(spark)
    config.set_checkpoint_storage(FileSystemCheckpointStorage(str(root / "cp")))
    query = start(spark, root)
    for b in range(2):
        add_batch(spark, root, query, b)
    query.stop()
    config.set_checkpoint_storage(FileSystemCheckpointStorage(str(root / "cp"), 0))
    query = start(spark, root)
    for b in range(2, 4):
        add_batch(spark, root, query, b)
    running = inspect_checkpoint(query)  # a running query, through the driver's coordinator
    query.stop()
    spark.conf.unset("spark.sql.streaming.checkpointStorage.app.kind")
    for key in ("checkpointPath", "fileStateSizeThreshold"):
        spark.conf.unset("spark.sql.streaming.checkpointStorage.app." + key)
    return os.path.join(str(root), "checkpoint"), running


def test_inspection_matches_the_files_on_disk(mixed_checkpoint):
    checkpoint, _ = mixed_checkpoint
    info = inspect_checkpoint(checkpoint)
    assert isinstance(info, CheckpointInspection)

    commits = sorted(int(f) for f in os.listdir(os.path.join(checkpoint, "commits")) if f.isdigit())
    assert info.committed_batches == commits == [0, 1, 2, 3]
    assert info.last_committed_batch == 3
    assert info.uncommitted_batches == []
    assert info.retained_range == (0, 3)
    with open(os.path.join(checkpoint, "metadata")) as f:
        assert json.loads(f.readline())["id"] == info.query_id

    inline = {rel: v for rel, v in inline_files_on_disk(checkpoint).items() if ".heap-" in rel}
    real = real_state_files(checkpoint)
    assert inline and real
    # Versions 1-2 were packed, 3-4 are files of their own.
    assert {rel.rsplit("/", 1)[1].split(".")[0] for rel in inline} == {"1", "2"}
    assert {rel.rsplit("/", 1)[1].split(".")[0] for rel in real} == {"3", "4"}

    stores = info.stores.to_pylist()
    assert [(s["operator"], s["partition"], s["store"]) for s in stores] == \
        [(0, p, "default") for p in range(PARTITIONS)]
    for s in stores:
        prefix = "state/0/%d/" % s["partition"]
        mine_inline = {r: v for r, v in inline.items() if r.startswith(prefix)}
        mine_real = {r: v for r, v in real.items() if r.startswith(prefix)}
        assert s["inline_files"] == len(mine_inline) == 2
        assert s["inline_bytes"] == sum(length for _, length in mine_inline.values())
        assert s["files"] - s["inline_files"] == len(mine_real) == 2
        assert s["file_bytes"] == sum(mine_real.values())
        assert (s["min_version"], s["max_version"]) == (1, 4)
        assert s["restorable_from_version"] == 1
    assert info.total_inline_bytes == sum(length for _, length in inline.values())
    assert info.total_file_bytes == sum(real.values())

    operators = info.operators().to_pylist()
    assert operators == [{"operator": 0, "stores": PARTITIONS, "files": 4 * PARTITIONS,
                          "inline_files": 2 * PARTITIONS,
                          "inline_bytes": info.total_inline_bytes,
                          "file_bytes": info.total_file_bytes}]

    packs = info.packs.to_pylist()
    pack_dir = os.path.join(checkpoint, "state-packs")
    assert sorted(p["name"] for p in packs) == sorted(os.listdir(pack_dir))
    for p in packs:
        batch_id, entries, deleted = parse_pack(os.path.join(pack_dir, p["name"]))
        assert p["bytes"] == os.path.getsize(os.path.join(pack_dir, p["name"]))
        assert (p["batch_id"], p["entries"], p["deleted"]) == (batch_id, len(entries), len(deleted))

    batches = info.batches.to_pylist()
    assert [b["batch_id"] for b in batches] == [0, 1, 2, 3]
    for b in batches:
        version = "%d.heap-delta" % (b["batch_id"] + 1)
        assert b["committed"]
        assert b["state_files"] == PARTITIONS
        assert b["inline_bytes"] == sum(l for r, (_, l) in inline.items() if r.endswith("/" + version))
        assert b["file_bytes"] == sum(v for r, v in real.items() if r.endswith("/" + version))
        commit_mtime = os.path.getmtime(os.path.join(checkpoint, "commits", str(b["batch_id"])))
        assert abs(b["committed_at_ms"] / 1000.0 - commit_mtime) < 1.0
        assert b["duration_ms"] >= 0


def test_running_query_view_agrees(mixed_checkpoint):
    checkpoint, running = mixed_checkpoint
    stopped = inspect_checkpoint(checkpoint)
    assert running.stores.to_pylist() == stopped.stores.to_pylist()
    assert running.committed_batches == stopped.committed_batches


def offline_env(extra=None):
    """The environment of a command line run with no Spark session to talk to."""
    env = dict(os.environ)
    env.pop("PYSPARK_GATEWAY_PORT", None)
    env.pop("PYSPARK_GATEWAY_SECRET", None)
    env.update(extra or {})
    return env


def inspect_command(*args):
    return [sys.executable, "-m", "spark_checkpoint_storage", "inspect"] + list(args)


def test_command_line_reads_packs_without_a_driver(mixed_checkpoint, tmp_path, spark):
    checkpoint, _ = mixed_checkpoint
    env = offline_env()
    plot = str(tmp_path / "plot.png")
    cmd = inspect_command(checkpoint, "--plot", plot)
    out = assert_ok(subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env))
    assert "committed batches 0-3" in out
    assert "retained range    0 to 3" in out
    assert "query id          %s" % inspect_checkpoint(checkpoint).query_id in out
    assert "stores (operator, partition, store)" in out
    assert "plot written to %s" % plot in out
    with open(plot, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    assert os.path.getsize(plot) > 10000

    # With --plot too, stdout holds the JSON alone (the plot's note goes to stderr).
    os.remove(plot)
    as_json = subprocess.run(inspect_command(checkpoint, "--json", "--plot", plot),
                             capture_output=True, text=True, timeout=300, env=env)
    offline = json.loads(assert_ok(as_json))
    assert "plot written to %s" % plot in as_json.stderr
    assert os.path.getsize(plot) > 10000
    in_driver = inspect_checkpoint(checkpoint).to_dict()
    assert offline["stores"] == in_driver["stores"]
    assert offline["batches"] == in_driver["batches"]
    assert offline["packs"] == in_driver["packs"]


def test_text_shows_local_iso_times_not_epoch_ms(mixed_checkpoint):
    checkpoint, _ = mixed_checkpoint
    batches = inspect_checkpoint(checkpoint).to_dict()["batches"]
    epoch_ms = [b[k] for b in batches for k in ("startedAtMs", "committedAtMs")]
    assert all(isinstance(ms, int) and ms > 10 ** 12 for ms in epoch_ms)  # JSON keeps them
    # A zone of its own (POSIX TZ: UTC+05:30, needs no tz database): local, not UTC and not
    # the machine's zone.
    run = subprocess.run(inspect_command(checkpoint), capture_output=True, text=True,
                         timeout=300, env=offline_env({"TZ": "IST-5:30"}))
    out = assert_ok(run)

    def local(ms):
        t = datetime.fromtimestamp(ms / 1000.0, timezone.utc) + timedelta(hours=5, minutes=30)
        return t.strftime("%Y-%m-%dT%H:%M:%S")

    lines = out.splitlines()
    header = lines.index("batches (local times, UTC+05:30 (IST))")
    columns = lines[header + 1].split()
    assert columns[:5] == ["batch_id", "committed", "started_at", "committed_at", "duration_ms"]
    rows = [line.split() for line in lines[header + 2:header + 2 + len(batches)]]
    for b, row in zip(batches, rows):
        assert row[:5] == [str(b["batchId"]), "True", local(b["startedAtMs"]),
                           local(b["committedAtMs"]), str(b["durationMs"])]
    assert not re.search(r"\b\d{13}\b", out), "epoch milliseconds in the text:\n" + out

    # The API's text is the same, in this process's zone.
    text = inspect_checkpoint(checkpoint).to_text()
    for ms in epoch_ms:
        assert datetime.fromtimestamp(ms / 1000.0).isoformat(timespec="seconds") in text
        assert str(ms) not in text


def test_json_round_trips(mixed_checkpoint, capsys):
    from spark_checkpoint_storage.__main__ import main

    checkpoint, _ = mixed_checkpoint
    assert main(["inspect", checkpoint, "--json"]) == 0
    out = capsys.readouterr().out
    info = inspect_checkpoint(checkpoint)
    assert json.loads(out) == info.to_dict()
    # The fields scripts read keep their names and epoch milliseconds.
    batch = json.loads(out)["batches"][0]
    assert {"batchId", "committed", "startedAtMs", "committedAtMs", "durationMs", "stateFiles",
            "inlineBytes", "fileBytes"} <= set(batch)
    assert batch["committedAtMs"] == info.batches.to_pylist()[0]["committed_at_ms"]


def hidden_matplotlib_env(tmp_path):
    """An environment where ``import matplotlib`` fails, as where it is not installed."""
    hide = tmp_path / "hide"
    (hide / "matplotlib").mkdir(parents=True)
    (hide / "matplotlib" / "__init__.py").write_text(
        "raise ImportError(\"No module named 'matplotlib'\", name='matplotlib')\n")
    path = [str(hide)] + [p for p in [os.environ.get("PYTHONPATH")] if p]
    return offline_env({"PYTHONPATH": os.pathsep.join(path)})


def test_plot_without_matplotlib_is_refused_in_one_line(mixed_checkpoint, tmp_path):
    checkpoint, _ = mixed_checkpoint
    env = hidden_matplotlib_env(tmp_path)
    plot = tmp_path / "state.png"
    # A location with no checkpoint: refused for matplotlib, the checkpoint never read (no
    # JVM started, whose launcher would note JDK_JAVA_OPTIONS on stderr).
    for location in (str(tmp_path / "no-checkpoint-here"), checkpoint):
        run = subprocess.run(inspect_command(location, "--plot", str(plot)), capture_output=True,
                             text=True, timeout=300, env=env)
        assert run.returncode != 0
        assert run.stdout == ""
        assert len(run.stderr.strip().splitlines()) == 1, run.stderr
        assert run.stderr.startswith("error: --plot: plotting needs matplotlib"), run.stderr
        assert INSTALL_COMMAND in run.stderr
        assert "Traceback" not in run.stderr and "No checkpoint" not in run.stderr
        assert not plot.exists()

    # The API: an ImportError of this package, naming the same command.
    data = tmp_path / "inspection.json"
    data.write_text(json.dumps(inspect_checkpoint(checkpoint).to_dict()))
    code = textwrap.dedent("""
        import json, sys
        from spark_checkpoint_storage.inspection import (CheckpointInspection,
                                                         MatplotlibNotInstalledError)
        info = CheckpointInspection(json.load(open(sys.argv[1])))
        try:
            info.plot(sys.argv[2])
        except MatplotlibNotInstalledError as e:
            print(isinstance(e, ImportError), e)
    """)
    run = subprocess.run([sys.executable, "-c", code, str(data), str(plot)],
                         capture_output=True, text=True, timeout=300, env=env)
    out = assert_ok(run)
    assert out.startswith("True plotting needs matplotlib")
    assert INSTALL_COMMAND in out
    assert not plot.exists()
    assert issubclass(MatplotlibNotInstalledError, ImportError)


def test_plot_has_integer_batch_ticks_and_the_legend_outside(mixed_checkpoint, tmp_path):
    pytest.importorskip("matplotlib")  # dev/requirements.txt installs it
    checkpoint, _ = mixed_checkpoint
    info = inspect_checkpoint(checkpoint)
    path = str(tmp_path / "state.png")
    assert info.plot(path) == path
    with open(path, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"

    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = info._figure()  # the figure plot() saves
    canvas = FigureCanvasAgg(fig)
    canvas.draw()  # lays the figure out as savefig does
    renderer = canvas.get_renderer()
    top, bottom = fig.axes
    low, high = bottom.get_xlim()
    ticks = [t for t in bottom.get_xticks() if low <= t <= high]
    assert ticks == [0, 1, 2, 3]
    labels = [t.get_text() for t in bottom.get_xticklabels() if low <= t.get_position()[0] <= high]
    assert labels == ["0", "1", "2", "3"]

    legend = top.get_legend()
    assert [t.get_text() for t in legend.get_texts()] == ["inline (packed / driver)",
                                                        "files of their own"]
    box = legend.get_window_extent(renderer)
    for axes in (top, bottom):
        assert not box.overlaps(axes.get_window_extent(renderer)), "legend over the data"
    whole = fig.bbox
    assert whole.x0 <= box.x0 and box.x1 <= whole.x1 and whole.y0 <= box.y0 and box.y1 <= whole.y1


def test_heap_only_state_that_is_gone_is_a_clear_error(spark, tmp_path):
    config = get_checkpoint_config(spark)
    config.set_checkpoint_storage(DriverCheckpointStorage())
    try:
        query = start(spark, tmp_path)
        add_batch(spark, tmp_path, query, 0, keys=3)
        assert inspect_checkpoint(query).stores.num_rows == PARTITIONS  # held by this driver
        query.stop()
    finally:
        spark.conf.unset("spark.sql.streaming.checkpointStorage.app.kind")
    # The query listener frees the state on Spark's listener bus, after stop() returns.
    spark.sparkContext._jsc.sc().listenerBus().waitUntilEmpty()
    with pytest.raises(CheckpointStateException) as e:
        inspect_checkpoint(os.path.join(str(tmp_path), "checkpoint"))
    assert "kept in the heap of the driver only" in str(e.value)
    assert "is gone" in str(e.value)


def test_missing_checkpoint_is_a_clear_error(tmp_path):
    with pytest.raises(CheckpointNotFoundException, match="No checkpoint at"):
        inspect_checkpoint(str(tmp_path / "nothing"))


def test_a_checkpoint_missing_its_last_batchs_state_is_reported_and_repaired(spark, tmp_path):
    """A pack deleted after its batch committed: the restart fails naming the batch, the
    missing state and the last complete batch; ``inspect`` shows the same; ``repair`` brings
    the checkpoint back to that batch, and the query runs the rest again from its source."""
    from spark_checkpoint_storage.errors import CorruptCheckpointException, convert_jvm_exception
    from spark_checkpoint_storage.inspection import repair_checkpoint
    from support.aggregation import expected, run_aggregation, state_of

    spark.conf.set("spark.sql.streaming.checkpointStorage", "filesystem")
    spark.conf.set("spark.sql.streaming.checkpointStorage.checkpointPath", str(tmp_path / "cp"))
    try:
        checkpoint = run_aggregation(spark, tmp_path, batches=4)
        packs = os.path.join(checkpoint, "state-packs")
        os.remove(os.path.join(packs, max(os.listdir(packs), key=lambda n: int(n.split(".")[0]))))

        with pytest.raises(Exception) as failed:
            run_aggregation(spark, tmp_path, batches=1, start_batch=4)
        error = convert_jvm_exception(failed.value)
        assert isinstance(error, CorruptCheckpointException), failed.value
        message = str(error)
        assert "its commit log records batch 3, but the state of that batch is missing" in message
        assert "hold no state of version 4" in message and "state/0/0" in message
        assert "The last complete batch is 2" in message
        assert "python -m spark_checkpoint_storage repair" in message

        info = inspect_checkpoint(checkpoint)
        assert info.result.last_committed_batch == 3 and info.result.last_complete_batch == 2
        assert len(info.result.missing_state) == PARTITIONS
        assert "state/0/0 version 4" in info.result.missing_state
        assert "INCOMPLETE" in info.to_text()

        dry = repair_checkpoint(checkpoint, dry_run=True)
        assert dry.removed_batches == (3,) and dry.dry_run and dry.removed_state_files == 0
        assert sorted(os.listdir(os.path.join(checkpoint, "commits"))) == ["0", "1", "2", "3"]
        cli = subprocess.run([sys.executable, "-m", "spark_checkpoint_storage", "repair", checkpoint],
                             capture_output=True, text=True, timeout=300)
        assert cli.returncode == 0, cli.stderr[-3000:]
        assert "batches 3 removed" in cli.stdout and "resumes after batch 2" in cli.stdout
        assert [n for n in sorted(os.listdir(os.path.join(checkpoint, "commits"))) if n.isdigit()] == ["0", "1", "2"]
        assert repair_checkpoint(checkpoint).removed_batches == ()

        # Batch 3 runs again from the source (with the input added since), then one more.
        run_aggregation(spark, tmp_path, batches=1, start_batch=5)
        assert state_of(spark, checkpoint) == expected(6)
    finally:
        spark.conf.unset("spark.sql.streaming.checkpointStorage")
        spark.conf.unset("spark.sql.streaming.checkpointStorage.checkpointPath")
