"""
Where a batch's time goes (``run.py --profile``): a JDK Flight Recorder recording of the
driver JVM (``local[2]``: the tasks run in it too) over the measured batches, its CPU
samples (``jdk.ExecutionSample``) each put in the first phase, in the order below, that a
frame of its stack belongs to. A phase's time is its samples times the sampling period:
CPU time, per batch and per state task. Time a thread spends waiting (on a lock, on I/O that
blocks) is not sampled; the batch's wall time, beside it, says how much that is.
"""
import json
import os
import subprocess
from typing import Dict, List, Tuple

#: (phase, frame prefixes "class.method" or "package."), in the order a sample is tested.
PHASES: List[Tuple[str, Tuple[str, ...]]] = [
    ("Spark's report to its state store coordinator",
     ("org.apache.spark.sql.execution.streaming.state.StateStoreCoordinatorRef",
      "org.apache.spark.sql.execution.streaming.state.StateStore$.reportActiveStoreInstance",
      "org.apache.spark.sql.execution.streaming.state.StateStore$.verifyIfStoreInstanceActive")),
    ("maintenance",
     ("org.apache.spark.sql.execution.streaming.state.StateStore$.doMaintenance",
      "org.apache.spark.sql.execution.streaming.state.StateStore$.startMaintenanceIfNeeded",
      "org.apache.spark.sql.execution.streaming.state.MaintenanceThreadPool")),
    ("the pack write (driver, before Spark's commit log entry)",
     ("io.sparkcheckpointstorage.coordinator.CheckpointCoordinator.beforeCommit",
      "io.sparkcheckpointstorage.packs.")),
    ("the message to the coordinator and its answer",
     ("io.sparkcheckpointstorage.coordinator.",)),
    ("encoding the delta",
     # The state file's codec and compression only: the shuffle compresses with the same codecs.
     ("io.sparkcheckpointstorage.provider.StateFileFormat",
      "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider.writeUpdateToDeltaFile",
      "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider.writeRemoveToDeltaFile")),
    ("file system calls (state files, the logs, the source's listing)",
     ("io.sparkcheckpointstorage.filemanager.", "io.sparkcheckpointstorage.fileio.",
      "org.apache.hadoop.fs.", "org.apache.spark.sql.execution.streaming.CheckpointFileManager",
      "org.apache.spark.sql.execution.streaming.checkpointing.",
      "org.apache.spark.sql.execution.streaming.state.RocksDBFileManager")),
    ("loading the store",
     ("io.sparkcheckpointstorage.provider.HeapStateStoreProvider.openStore",
      "io.sparkcheckpointstorage.provider.HeapStateStoreProvider.load",
      "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider.getStore",
      "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider.loadMap",
      "org.apache.spark.sql.execution.streaming.state.RocksDB.load",
      "io.sparkcheckpointstorage.benchmarks.FloorStateStoreProvider.openStore")),
    ("reads and updates",
     ("io.sparkcheckpointstorage.provider.", "org.rocksdb.",
      "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider$HDFSBackedStateStore",
      "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
      "org.apache.spark.sql.execution.streaming.state.RocksDB.")),
]
OTHER_TASK = "the rest of the task (Spark: shuffle read, aggregation, the state operator around the store)"
OTHER_DRIVER = "the query's thread, the rest (planning, offset and commit logs)"


def start(spark) -> object:
    """Starts a recording with the JDK's ``profile`` settings (10-20 ms sampling)."""
    jvm = spark._jvm
    recording = jvm.jdk.jfr.Recording(jvm.jdk.jfr.Configuration.getConfiguration("profile"))
    recording.start()
    return recording


def stop(spark, recording, path: str) -> str:
    recording.stop()
    recording.dump(spark._jvm.java.io.File(path).toPath())
    recording.close()
    return path


def _frames(event: Dict) -> List[str]:
    out = []
    for f in (event.get("values", {}).get("stackTrace") or {}).get("frames", []):
        m = f.get("method", {})
        out.append("%s.%s" % (m.get("type", {}).get("name", "?").replace("/", "."), m.get("name", "?")))
    return out


def _thread(event: Dict) -> str:
    t = event.get("values", {}).get("sampledThread") or {}
    return t.get("javaName") or t.get("osName") or ""


#: The recording's stack depth (JFR keeps 64 frames by default; Spark's task stacks are deeper).
JAVA_OPTIONS = "-XX:FlightRecorderOptions:stackdepth=1024"


def breakdown(jfr_path: str, batches: int, partitions: int) -> Dict:
    """CPU ms per batch and per task of each phase, from the recording's CPU samples."""
    out = subprocess.run(["jfr", "print", "--json", "--events", "jdk.ExecutionSample", jfr_path],
                         capture_output=True, text=True, check=True).stdout
    events = json.loads(out)["recording"]["events"]
    times = sorted(e["values"]["startTime"] for e in events)
    # The sampling period, from the JDK's profile settings (10 ms for Java code in JDK 17).
    period_ms = 10.0
    counts: Dict[str, int] = {}
    for e in events:
        # Spark names a task thread "Executor task launch worker ..." or, in its pool, "Executor
        # task idle worker ..."; the recording keeps one of the names a thread had.
        thread = _thread(e)
        in_task = thread.startswith("Executor task")
        in_query = thread.startswith("stream execution thread")
        in_maintenance = thread.startswith("state-store-maintenance")
        if not (in_task or in_query or in_maintenance):
            continue  # the listener bus, the UI, Spark's RPC and scheduler: not a batch's path
        frames = _frames(e)
        phase = next((name for name, prefixes in PHASES
                      if any(f.startswith(p) for f in frames for p in prefixes)), None)
        if phase is None:
            phase = OTHER_TASK if in_task else OTHER_DRIVER if in_query else "maintenance"
        counts[phase] = counts.get(phase, 0) + 1
    order = [name for name, _ in PHASES] + [OTHER_TASK, OTHER_DRIVER]
    return {"samples": len(events), "period_ms": period_ms, "batches": batches, "partitions": partitions,
            "first": times[0] if times else None, "last": times[-1] if times else None,
            "phases": [{"phase": p, "samples": counts[p],
                        "ms_per_batch": counts[p] * period_ms / max(batches, 1),
                        "ms_per_task": counts[p] * period_ms / max(batches, 1) / max(partitions, 1)}
                       for p in order if p in counts]}


def table(profiles: Dict[str, Dict]) -> List[str]:
    """One markdown table: a row per phase, per variant its CPU ms per batch and per task."""
    names = list(profiles)
    phases: List[str] = []
    for p in profiles.values():
        phases += [x["phase"] for x in p["phases"] if x["phase"] not in phases]
    header = ["phase (CPU)"] + ["%s: ms/batch, ms/task" % n for n in names]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for ph in phases:
        cells = []
        for n in names:
            x = next((x for x in profiles[n]["phases"] if x["phase"] == ph), None)
            cells.append("-" if x is None else "%.0f, %.2f" % (x["ms_per_batch"], x["ms_per_task"]))
        lines.append("| %s | %s |" % (ph, " | ".join(cells)))
    lines.append("| samples (every 10 ms of CPU) | %s |" % " | ".join(str(profiles[n]["samples"]) for n in names))
    return lines
