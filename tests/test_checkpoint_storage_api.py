"""The PyFlink-style storage wrappers: PyFlink's test_checkpoint_storage.py translated
(DriverCheckpointStorage for JobManagerCheckpointStorage), plus the JVM dispatch and the
errors a user sees. Runs before any SparkSession exists, as PyFlink builds storages before the
environment: get_gateway() launches a JVM with the bundled jar."""
import pytest
from py4j.java_gateway import JavaObject

from spark_checkpoint_storage.checkpoint_storage import (
    CheckpointStorage,
    CustomCheckpointStorage,
    DriverCheckpointStorage,
    FileSystemCheckpointStorage,
    from_j_checkpoint_storage,
)
from spark_checkpoint_storage.errors import (
    CheckpointStorageException,
    IllegalCheckpointStorageArgumentException,
)
from spark_checkpoint_storage.java_gateway import get_gateway

JVM_STORAGE = "io.sparkcheckpointstorage.storage"


def jvm_class(name):
    cls = get_gateway().jvm
    for part in ("%s.%s" % (JVM_STORAGE, name)).split("."):
        cls = getattr(cls, part)
    return cls


# -- DriverCheckpointStorage (PyFlink: JobManagerCheckpointStorageTests) ---------------------

def test_driver_constant():
    assert (DriverCheckpointStorage.DEFAULT_MAX_STATE_SIZE
            == jvm_class("DriverCheckpointStorage").DefaultMaxStateSize())


def test_create_driver_checkpoint_storage():
    """Each constructor keeps what it was given and defaults the rest."""
    default = DriverCheckpointStorage()
    assert (default.get_checkpoint_path(), default.get_max_state_size()) == (
        None, DriverCheckpointStorage.DEFAULT_MAX_STATE_SIZE)
    with_path = DriverCheckpointStorage("file://var/checkpoints/")
    assert (with_path.get_checkpoint_path(), with_path.get_max_state_size()) == (
        "file://var/checkpoints", DriverCheckpointStorage.DEFAULT_MAX_STATE_SIZE)
    with_size = DriverCheckpointStorage("file://var/checkpoints/", 10000000)
    assert (with_size.get_checkpoint_path(), with_size.get_max_state_size()) == (
        "file://var/checkpoints", 10000000)


def test_driver_get_max_state_size():
    checkpoint_storage = DriverCheckpointStorage()
    assert checkpoint_storage.get_max_state_size() == DriverCheckpointStorage.DEFAULT_MAX_STATE_SIZE
    checkpoint_storage = DriverCheckpointStorage(max_state_size=50000)
    assert checkpoint_storage.get_max_state_size() == 50000


def test_driver_paths_and_str():
    heap_only = DriverCheckpointStorage()
    assert heap_only.get_checkpoint_path() is None
    assert heap_only.get_savepoint_path() is None
    assert not heap_only.is_persistent()
    assert str(heap_only) == heap_only._j_checkpoint_storage.toString()
    assert "not persistent" in str(heap_only)

    with_path = DriverCheckpointStorage("file://var/checkpoints/", 1000)
    assert with_path.get_checkpoint_path() == "file://var/checkpoints"
    assert with_path.get_savepoint_path() == "file://var/checkpoints/savepoints"
    assert with_path.is_persistent()
    assert str(with_path) == ("DriverCheckpointStorage (checkpoints to driver heap, checkpoint "
                              "path: file://var/checkpoints, maxStateSize: 1000)")


def test_driver_max_state_size_must_be_positive():
    with pytest.raises(IllegalCheckpointStorageArgumentException) as err:
        DriverCheckpointStorage(max_state_size=0)
    assert "The maximum state size must be positive, got 0" in str(err.value)
    assert err.value.java_class == "java.lang.IllegalArgumentException"
    with pytest.raises(TypeError):
        DriverCheckpointStorage(max_state_size="5m")


# -- FileSystemCheckpointStorage (PyFlink: FileSystemCheckpointStorageTests) -----------------

def test_fs_constants():
    JFs = jvm_class("FileSystemCheckpointStorage")
    assert FileSystemCheckpointStorage.MAX_FILE_STATE_THRESHOLD == JFs.MaxFileStateThreshold()
    assert FileSystemCheckpointStorage.DEFAULT_FILE_STATE_THRESHOLD == JFs.DefaultFileStateThreshold()
    assert FileSystemCheckpointStorage.DEFAULT_WRITE_BUFFER_SIZE == JFs.DefaultWriteBufferSize()


def test_create_fs_checkpoint_storage():
    """Each constructor keeps what it was given and defaults the rest."""
    def settings(storage):
        return (storage.get_checkpoint_path(), storage.get_min_file_size_threshold(),
                storage.get_write_buffer_size())

    assert settings(FileSystemCheckpointStorage("file://var/checkpoints/")) == (
        "file://var/checkpoints", FileSystemCheckpointStorage.DEFAULT_FILE_STATE_THRESHOLD, 20480)
    assert settings(FileSystemCheckpointStorage("file://var/checkpoints/", 2048)) == (
        "file://var/checkpoints", 2048, 4096)
    assert settings(FileSystemCheckpointStorage("file://var/checkpoints/", 2048, 8192)) == (
        "file://var/checkpoints", 2048, 8192)


def test_fs_get_min_file_size_threshold():
    checkpoint_storage = FileSystemCheckpointStorage("file://var/checkpoints/")
    assert checkpoint_storage.get_min_file_size_threshold() == 20480
    checkpoint_storage = FileSystemCheckpointStorage("file://var/checkpoints/",
                                                     file_state_size_threshold=2048)
    assert checkpoint_storage.get_min_file_size_threshold() == 2048


def test_fs_get_checkpoint_path():
    checkpoint_storage = FileSystemCheckpointStorage("file://var/checkpoints/")
    assert checkpoint_storage.get_checkpoint_path() == "file://var/checkpoints"


def test_fs_savepoint_path_and_write_buffer_and_str():
    storage = FileSystemCheckpointStorage("file:///data/cp/", 2048, 1024)
    assert storage.get_savepoint_path() == "file:/data/cp/savepoints"
    # Never below the threshold (Flink: max(writeBufferSize, threshold)).
    assert storage.get_write_buffer_size() == 2048
    assert FileSystemCheckpointStorage("file:///data/cp").get_write_buffer_size() == 20480
    assert FileSystemCheckpointStorage("file:///data/cp", 0).get_write_buffer_size() == 4096
    assert FileSystemCheckpointStorage("file:///data/cp", 0, 8192).get_write_buffer_size() == 8192
    assert str(storage) == ("FileSystemCheckpointStorage (checkpoints to file system, checkpoint "
                            "path: file:/data/cp, fileStateThreshold: 2048, writeBufferSize: 2048)")


def test_fs_threshold_boundaries():
    assert FileSystemCheckpointStorage("file:///cp", 0).get_min_file_size_threshold() == 0
    limit = FileSystemCheckpointStorage.MAX_FILE_STATE_THRESHOLD
    assert FileSystemCheckpointStorage("file:///cp", limit).get_min_file_size_threshold() == limit
    with pytest.raises(IllegalCheckpointStorageArgumentException) as err:
        FileSystemCheckpointStorage("file:///cp", limit + 1)
    assert "must be in [0, 1048576]" in str(err.value)
    assert "got 1048577" in str(err.value)
    assert err.value.getCondition() == "CHECKPOINT_STORAGE.INVALID_ARGUMENT"
    assert err.value.getMessageParameters()["javaClass"] == "java.lang.IllegalArgumentException"
    assert isinstance(err.value, ValueError)
    with pytest.raises(IllegalCheckpointStorageArgumentException):
        FileSystemCheckpointStorage("file:///cp", -2)


def test_fs_needs_a_checkpoint_path():
    with pytest.raises(ValueError, match="checkpoint_path must not be None"):
        FileSystemCheckpointStorage()
    with pytest.raises(ValueError, match="non-empty string"):
        FileSystemCheckpointStorage("  ")


# -- dispatch from the JVM -------------------------------------------------------------------

def test_from_j_checkpoint_storage_dispatches_on_the_jvm_class():
    j_driver = jvm_class("DriverCheckpointStorage")("file:/cp", 4096)
    driver = from_j_checkpoint_storage(j_driver)
    assert type(driver) is DriverCheckpointStorage
    assert driver.get_max_state_size() == 4096
    assert driver == DriverCheckpointStorage("file:/cp", 4096)

    j_fs = jvm_class("FileSystemCheckpointStorage")("file:///cp", 100, 200)
    fs = from_j_checkpoint_storage(j_fs)
    assert type(fs) is FileSystemCheckpointStorage
    assert fs.get_min_file_size_threshold() == 100
    assert fs.get_write_buffer_size() == 200

    assert from_j_checkpoint_storage(None) is None


def test_from_j_checkpoint_storage_refuses_what_is_not_a_storage():
    with pytest.raises(TypeError, match="is not an instance of CheckpointStorage"):
        from_j_checkpoint_storage(get_gateway().jvm.java.lang.StringBuilder("not a storage"))
    with pytest.raises(TypeError, match="not a JVM object"):
        from_j_checkpoint_storage("driver")


CUSTOM_STORAGE_SOURCE = """
package example;

import io.sparkcheckpointstorage.storage.CheckpointStorage;
import io.sparkcheckpointstorage.storage.CheckpointStorageOptions;
import io.sparkcheckpointstorage.storage.Placement;
import scala.Function1;
import scala.Option;

/** A user's storage: every state file becomes a file of its own, none is packed. */
public class AllFilesCheckpointStorage implements CheckpointStorage {
  public Option<String> checkpointPath() { return Option.empty(); }
  public Option<String> savepointPath() { return Option.empty(); }
  public boolean isPersistent() { return true; }
  public int writeBufferSize() { return 4096; }
  public Placement placement(long size) { return Placement.OwnFile$.MODULE$; }
  public CheckpointStorage configure(Function1<String, Option<String>> conf) { return this; }
  public scala.collection.immutable.Map<String, String> toConf() {
    scala.collection.immutable.Map<String, String> empty = scala.collection.immutable.Map$.MODULE$.empty();
    return empty.updated(CheckpointStorageOptions.AppPrefix() + "kind", getClass().getName());
  }
  @Override public boolean equals(Object o) { return o instanceof AllFilesCheckpointStorage; }
  @Override public int hashCode() { return 7; }
  @Override public String toString() { return "AllFilesCheckpointStorage"; }
}
"""


def build_custom_storage_jar(directory):
    """Compiles a user's CheckpointStorage in Java against Spark's jars and ours; returns the jar."""
    import glob
    import os
    import subprocess

    import pyspark

    from spark_checkpoint_storage.bundled_jar import bundled_jar_path

    src = os.path.join(str(directory), "src", "example")
    classes = os.path.join(str(directory), "classes")
    os.makedirs(src, exist_ok=True)
    os.makedirs(classes, exist_ok=True)
    with open(os.path.join(src, "AllFilesCheckpointStorage.java"), "w") as f:
        f.write(CUSTOM_STORAGE_SOURCE)
    spark_jars = os.path.join(os.path.dirname(pyspark.__file__), "jars")
    scala_lib = glob.glob(os.path.join(spark_jars, "scala-library-*.jar"))
    subprocess.run(["javac", "-d", classes, "-cp", os.pathsep.join(scala_lib + [bundled_jar_path()]),
                    os.path.join(src, "AllFilesCheckpointStorage.java")], check=True,
                   capture_output=True)
    jar = os.path.join(str(directory), "custom-storage.jar")
    subprocess.run(["jar", "cf", jar, "-C", classes, "."], check=True, capture_output=True)
    return jar


@pytest.fixture(scope="module")
def j_custom_storage(tmp_path_factory):
    """An instance of the user's class, loaded into the launched JVM through a class loader."""
    jar = build_custom_storage_jar(tmp_path_factory.mktemp("custom"))
    gateway = get_gateway()
    urls = gateway.new_array(gateway.jvm.java.net.URL, 1)
    urls[0] = gateway.jvm.java.io.File(jar).toURI().toURL()
    parent = jvm_class("CheckpointStorage")._java_lang_class.getClassLoader()
    loader = gateway.jvm.java.net.URLClassLoader(urls, parent)
    constructor = loader.loadClass("example.AllFilesCheckpointStorage").getDeclaredConstructor(
        gateway.new_array(gateway.jvm.java.lang.Class, 0))
    return constructor.newInstance(gateway.new_array(gateway.jvm.java.lang.Object, 0))


def test_custom_checkpoint_storage_wraps_any_jvm_storage(j_custom_storage):
    storage = from_j_checkpoint_storage(j_custom_storage)
    assert type(storage) is CustomCheckpointStorage
    assert isinstance(storage, CheckpointStorage)
    assert isinstance(storage._j_checkpoint_storage, JavaObject)
    assert str(storage) == "AllFilesCheckpointStorage"
    assert storage.get_checkpoint_path() is None
    assert storage.get_savepoint_path() is None
    assert storage.is_persistent()
    assert storage._to_conf() == {"spark.sql.streaming.checkpointStorage.app.kind":
                                  "example.AllFilesCheckpointStorage"}
    assert CustomCheckpointStorage(j_custom_storage) == storage


def test_jvm_errors_are_pyspark_style_exceptions():
    with pytest.raises(CheckpointStorageException) as err:
        DriverCheckpointStorage(max_state_size=-5)
    e = err.value
    assert e.getMessage().startswith("[CHECKPOINT_STORAGE.INVALID_ARGUMENT] ")
    assert "got -5" in e.getMessage()
    assert "DriverCheckpointStorage" in e.getMessageParameters()["javaStackTrace"]
    assert e.getSqlState() is None


_ERROR_AFTER_A_STOPPED_SESSION = """
    from pyspark.sql import SparkSession
    from spark_checkpoint_storage import configure_spark_with_checkpoint_storage
    from spark_checkpoint_storage.checkpoint_storage import DriverCheckpointStorage
    from spark_checkpoint_storage.errors import IllegalCheckpointStorageArgumentException
    from spark_checkpoint_storage import java_gateway

    # A storage built first launches a JVM of its own; the session then starts PySpark's.
    storage = DriverCheckpointStorage(max_state_size=1 << 20)
    spark = configure_spark_with_checkpoint_storage(
        SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false"),
        storage).getOrCreate()
    # py4j numbers each JVM's objects from 0: fill the session's JVM past the next ids of
    # the launched one, so that an id of the one names an object in the other.
    launched = java_gateway._launched_gateway
    launched_next = int(launched.jvm.java.lang.Object()._target_id[1:])
    kept = [spark._jvm.java.lang.StringBuilder("x")
            for _ in range(launched_next + 50)]
    spark.stop()
    for size in range(-5, 0):
        try:
            DriverCheckpointStorage(max_state_size=size)
        except IllegalCheckpointStorageArgumentException as e:
            print("CONVERTED", e.getMessage())
"""


def test_jvm_errors_of_the_launched_jvm_after_a_stopped_session(subproc):
    """After a session stops, PySpark keeps its JVM for the next one while get_gateway()
    serves the JVM it launched: that JVM's errors still reach the caller as this package's,
    never as an object of the other JVM."""
    from conftest import assert_ok

    out = assert_ok(subproc.python(_ERROR_AFTER_A_STOPPED_SESSION))
    converted = [line for line in out.splitlines() if line.startswith("CONVERTED ")]
    assert len(converted) == 5, out
    for size, line in zip(range(-5, 0), converted):
        assert line.startswith("CONVERTED [CHECKPOINT_STORAGE.INVALID_ARGUMENT] ")
        assert "got %d " % size in line


def test_launched_jvm_ignores_ctrl_c_and_goes_with_its_process_group():
    """The JVM get_gateway() launches is started without Python code between fork and exec
    (unsafe beside a Spark Connect client's gRPC threads), and still as PySpark starts its
    own: it ignores the terminal's Ctrl-C (SIGINT), and it is in the caller's process group,
    so a kill of the group takes it along; it serves the package's classes."""
    import os
    import signal

    from spark_checkpoint_storage import java_gateway

    launched = java_gateway._launch_gateway()
    pid = launched.proc.pid
    with open("/proc/%d/status" % pid) as f:
        ignored = int([line for line in f if line.startswith("SigIgn:")][0].split()[1], 16)
    assert ignored & (1 << (signal.SIGINT - 1)), "the JVM does not ignore SIGINT"
    assert os.getpgid(pid) == os.getpgrp()
    assert launched.jvm.io.sparkcheckpointstorage.BuildInfo.version()


def test_the_launch_runs_no_python_between_fork_and_exec(tmp_path):
    """What get_gateway() hands PySpark to start its JVM drops PySpark's preexec_fn (it
    never runs) and starts the child with SIGINT ignored, in the caller's process group."""
    import os
    import pyspark.java_gateway as pyspark_gateway
    import signal
    import subprocess

    from spark_checkpoint_storage import java_gateway

    ran = tmp_path / "preexec-ran"
    with java_gateway._no_python_between_fork_and_exec():
        child = pyspark_gateway.Popen(
            ["sh", "-c", "grep SigIgn: /proc/self/status; ps -o pgid= -p $$"],
            preexec_fn=lambda: ran.write_text("ran"), stdout=subprocess.PIPE, text=True)
        out, _ = child.communicate(timeout=60)
    assert pyspark_gateway.Popen is subprocess.Popen
    assert not ran.exists()
    ignored, pgid = out.split("\n")[:2]
    assert int(ignored.split()[1], 16) & (1 << (signal.SIGINT - 1)), out
    assert int(pgid) == os.getpgrp()
    assert signal.getsignal(signal.SIGINT) is not signal.SIG_IGN
