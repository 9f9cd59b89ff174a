import json
import os
import pathlib
import subprocess
import sys
import textwrap
from typing import Dict, List, NamedTuple, Optional, Tuple

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV_BIN = os.path.dirname(sys.executable)

# Every JVM the tests start (drivers, local-cluster executors, spark-submit, servers) lives a
# minute or two on small data, and the suite is CPU-bound on a 2-core CI machine: C2's
# compiler threads and the parallel collector's cost more CPU than they save there. The
# tier-1 JIT alone and the serial collector cut the suite's time by about 40% (the JVM's
# `java` launcher reads JDK_JAVA_OPTIONS; it notes that on stderr). Benchmarks never run
# with them.
_TEST_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
# A streaming query with no new data asks its source again after
# spark.sql.streaming.pollingDelay (10 ms): a file source lists its folder each time (with a
# Hadoop JobConf each, which searches every jar of the class path for its own class). The
# tests' queries wait idle while the others of their driver run their batches: at 10 ms that
# polling took about a sixth of a test driver's CPU. At 100 ms a batch starts at most 100 ms
# later. (A system property: every SparkConf of a test JVM reads spark.* ones; a test's own
# setting still wins.)
_TEST_JVM_OPTIONS += " -Dspark.sql.streaming.pollingDelay=100ms"
# dev/class-archive's archive of this venv's Spark driver classes (dev/test writes it): a
# driver on the venv's pyspark starts on half the CPU. A JVM it does not match starts as
# without it; the cds logs are off so that no JVM says so on its stdout.
_CLASS_ARCHIVE = os.path.join(sys.prefix, "spark-driver.jsa")
if os.path.isfile(_CLASS_ARCHIVE):
    _TEST_JVM_OPTIONS += " -XX:SharedArchiveFile=%s -Xlog:cds=off -Xlog:cds+dynamic=off" % _CLASS_ARCHIVE
if _TEST_JVM_OPTIONS not in os.environ.get("JDK_JAVA_OPTIONS", ""):
    os.environ["JDK_JAVA_OPTIONS"] = (os.environ.get("JDK_JAVA_OPTIONS", "") + " " + _TEST_JVM_OPTIONS).strip()

# Python workers of in-process sessions must run this interpreter (it has pandas, pyarrow).
os.environ["PYSPARK_PYTHON"] = sys.executable
os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable

#: True when the run is the full tier (``dev/test --full`` or ``--spark``, which set
#: SCS_TEST_TIER=full): a module then also runs the cells CI leaves to that tier.
FULL_TIER = os.environ.get("SCS_TEST_TIER") == "full"


def wait_or_kill(proc: subprocess.Popen, timeout: float) -> None:
    """Waits for ``proc``; kills it when it outlives ``timeout`` seconds (a hung driver), or
    when the wait itself ends otherwise (the test's own timeout, pytest-timeout's): a driver
    left behind would take the CPU of the tests after it."""
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        pass
    finally:
        if proc.returncode is None:
            proc.kill()
            proc.wait()


class Started(NamedTuple):
    """A process started in the background, its output going to the files ``out`` and ``err``
    (they stay for a failure's post-mortem)."""
    proc: subprocess.Popen
    out: pathlib.Path
    err: pathlib.Path

    def finish(self, timeout: float) -> subprocess.CompletedProcess:
        """Waits for the process (killed past ``timeout`` seconds); its exit code and output."""
        wait_or_kill(self.proc, timeout)
        return subprocess.CompletedProcess(self.proc.args, self.proc.returncode, self.out.read_text(),
                                           self.err.read_text())


class Subprocess:
    """Runs Python code or spark-submit in a fresh process: each gets its own driver JVM."""

    def __init__(self, tmp_path):
        self.tmp_path = tmp_path

    def env(self, extra: Optional[Dict[str, str]] = None) -> Dict[str, str]:
        env = dict(os.environ)
        env.pop("PYSPARK_GATEWAY_PORT", None)
        env.pop("PYSPARK_GATEWAY_SECRET", None)
        env["PYSPARK_PYTHON"] = sys.executable
        env["PYSPARK_DRIVER_PYTHON"] = sys.executable
        env.update(extra or {})
        return env

    def python(self, code: str, timeout: int = 300,
               env: Optional[Dict[str, str]] = None) -> subprocess.CompletedProcess:
        script = self.tmp_path / "script.py"
        script.write_text(textwrap.dedent(code))
        return subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                              timeout=timeout, env=self.env(env), cwd=str(self.tmp_path))

    def start_python(self, code: str, name: str, folder=None) -> Started:
        """Starts ``code`` in the background as ``<folder>/<name>.py`` (``folder``: the test's
        own by default, also the process's working folder), its output in ``<name>.out`` and
        ``<name>.err`` there."""
        folder = pathlib.Path(folder or self.tmp_path)
        script = folder / (name + ".py")
        script.write_text(textwrap.dedent(code))
        return self._start([sys.executable, str(script)], name, folder)

    def _start(self, cmd: List[str], name: str, folder: pathlib.Path) -> Started:
        out, err = folder / (name + ".out"), folder / (name + ".err")
        with open(out, "w") as o, open(err, "w") as e:
            proc = subprocess.Popen(cmd, stdout=o, stderr=e, env=self.env(), cwd=str(folder))
        return Started(proc, out, err)

    def spark_submit(self, args: List[str], code: str,
                     timeout: int = 300) -> subprocess.CompletedProcess:
        (result,) = self.spark_submit_all([(args, code)], timeout)
        return result

    def spark_submit_all(self, jobs: List[Tuple[List[str], str]],
                         timeout: int = 300) -> List[subprocess.CompletedProcess]:
        """spark-submit of each (arguments, code) of ``jobs``, all at once (each its own
        driver); their results in the order of ``jobs``."""
        started = []
        for n, (args, code) in enumerate(jobs):
            script = self.tmp_path / ("job-%d.py" % n)
            script.write_text(textwrap.dedent(code))
            started.append(self._start([os.path.join(VENV_BIN, "spark-submit")] + args + [str(script)],
                                       "job-%d" % n, pathlib.Path(self.tmp_path)))
        return [s.finish(timeout) for s in started]


#: runs support/stateful_operators.py's driver (the operators' queries) with a spec file
_OPERATORS_DRIVER = """
    import sys
    sys.path.insert(0, %r)
    from support import stateful_operators
    stateful_operators.main(["stateful_operators", %r])
"""


def run_operators_driver(step_dir, spec: dict) -> subprocess.CompletedProcess:
    """Runs one driver process of support/stateful_operators.py with ``spec`` (written to
    ``step_dir/spec.json``). Its whole stdout and stderr stay in ``step_dir`` for a failure's
    post-mortem (``assert_ok`` shows only their ends)."""
    step_dir.mkdir()
    spec_path = step_dir / "spec.json"
    spec_path.write_text(json.dumps(spec))
    tests = os.path.dirname(os.path.abspath(__file__))
    result = Subprocess(step_dir).python(_OPERATORS_DRIVER % (tests, str(spec_path)),
                                         timeout=900, env={"TZ": "UTC"})
    (step_dir / "stdout.txt").write_text(result.stdout)
    (step_dir / "stderr.txt").write_text(result.stderr)
    return result


def spark_lines_table() -> List[Dict[str, str]]:
    """The rows of the project's table of Spark lines (dev/spark-lines.tsv), oldest first:
    what every build and dev script reads, so the tests check the package against it."""
    with open(os.path.join(ROOT, "dev", "spark-lines.tsv")) as f:
        lines = [l.rstrip("\n") for l in f if l.strip()]
    header = next(l for l in lines if l.startswith("#line")).lstrip("#").split("\t")
    return [dict(zip(header, l.split("\t"))) for l in lines if not l.startswith("#")]


def spark_lines_and_scala() -> List[tuple]:
    """Each (Spark line, Scala binary) the table builds a jar for, in the table's order."""
    return [(row["line"], scala.split("=")[0]) for row in spark_lines_table()
            for scala in row["scala"].split(",")]


@pytest.fixture(scope="module")
def spark(request):
    """The Spark session of a test module: ``local[2]``, no UI, configured by
    ``configure_spark_with_checkpoint_storage`` (our jar, plugin, listener, provider and file
    manager, unless the module names others), plus the settings in the module's
    ``SPARK_CONF`` dict; stopped after the module. One definition for every module."""
    from pyspark.sql import SparkSession
    from spark_checkpoint_storage import configure_spark_with_checkpoint_storage

    builder = (SparkSession.builder.master("local[2]")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false"))
    for key, value in getattr(request.module, "SPARK_CONF", {}).items():
        builder = builder.config(key, value)
    session = configure_spark_with_checkpoint_storage(builder).getOrCreate()
    yield session
    session.stop()


@pytest.fixture
def subproc(tmp_path) -> Subprocess:
    return Subprocess(tmp_path)


def assert_ok(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 0, "exit %d\nstdout:\n%s\nstderr:\n%s" % (
        result.returncode, result.stdout[-5000:], result.stderr[-8000:])
    return result.stdout


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "cluster: runs on local-cluster (executor JVMs of their own), slowest; "
                   "deselect with -m 'not cluster'")



@pytest.fixture(scope="module", autouse=True)
def _forget_first_session_storage_settings():
    """PySpark starts its JVM with the first session's settings as spark-submit --conf, and
    there they become system properties that every later SparkConf of this process loads. A
    storage one module sets in code would then outrank the settings of every later module's
    session (Flink's precedence), so after each module our settings leave the JVM's
    system properties; the rest (its jars on the classpath) stays, as PySpark intends."""
    yield
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    if gateway is None:
        return
    system = gateway.jvm.java.lang.System
    for key in list(system.getProperties().stringPropertyNames()):
        if key.startswith("spark.sql.streaming.checkpointStorage"):
            system.clearProperty(key)


# --------------------------------------------------------------------------------------
# Real remote file systems (tests/support/realfs.py): each server starts once per pytest
# run, on first use, and stops at the end of the run.

@pytest.fixture(scope="session")
def minidfs(tmp_path_factory):
    """A real HDFS: MiniDFSCluster in its own JVM, ``hdfs://127.0.0.1:<port>``."""
    from support import realfs
    fs = realfs.MiniDfs(str(tmp_path_factory.mktemp("minidfs")))
    yield fs
    fs.stop()


@pytest.fixture(scope="session")
def seaweed_s3(tmp_path_factory):
    """A real S3-compatible object store: SeaweedFS on 127.0.0.1, ``s3a://<bucket>``."""
    from support import realfs
    fs = realfs.SeaweedS3(str(tmp_path_factory.mktemp("seaweedfs")))
    yield fs
    fs.stop()


@pytest.fixture(scope="module", params=["hdfs", "s3a"])
def remote_fs(request):
    """Each remote file system in turn (module-scoped, so a module's tests group by it)."""
    return request.getfixturevalue({"hdfs": "minidfs", "s3a": "seaweed_s3"}[request.param])


@pytest.fixture(scope="session")
def connector_jars() -> List[str]:
    """The jars of Spark's Kafka connector for the running line (fetched once, then cached)."""
    from support import realfs
    return realfs.kafka_connector_jars()


@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory):
    """A real Kafka broker: one KRaft node in its own JVM, ``127.0.0.1:<port>``."""
    from support import realfs
    broker = realfs.KafkaBroker(str(tmp_path_factory.mktemp("kafka")))
    yield broker
    broker.stop()
