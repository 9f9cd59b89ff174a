"""Wrong settings are refused where Flink refuses them, when the storage is configured: static
settings when the session starts, session settings when a query starts (before its first
batch), each in the words users read first: the first line of the Python exception, and
spark-submit's output. A session built by the helper in a Python process whose JVM lacks the
jar is refused before ``getOrCreate()``, saying why and what to do."""
import json

import pytest

from conftest import assert_ok
from spark_checkpoint_storage import jvm_names
from spark_checkpoint_storage.bundled_jar import JarNotOnClasspathError, bundled_jar_path
from spark_checkpoint_storage.errors import IllegalCheckpointStorageArgumentException

P = jvm_names.PREFIX

#: Every documented session setting (the README's settings table): a value of the wrong kind,
#: one out of range, and a misspelt name; with the words that say what is allowed.
SESSION_CASES = [
    (jvm_names.STORAGE, "filesytem", "expected 'driver', 'filesystem', or the name of a class"),
    (jvm_names.STORAGE, "java.lang.String", "implementing io.sparkcheckpointstorage.storage.CheckpointStorageFactory"),
    (jvm_names.CHECKPOINT_PATH, "1cp:/x", "expected a file system path or URI"),
    (jvm_names.SAVEPOINT_PATH, "2sp:/x", "expected a file system path or URI"),
    (jvm_names.MAX_STATE_SIZE, "lots", "expected a size of at least 1 byte and below 2g"),
    (jvm_names.MAX_STATE_SIZE, "0", "expected a size of at least 1 byte and below 2g"),
    (jvm_names.FILE_STATE_SIZE_THRESHOLD, "2m", "expected a size from 0 to 1m (1048576 bytes)"),
    (jvm_names.FILE_STATE_SIZE_THRESHOLD, "20 kilo", "expected a size from 0 to 1m (1048576 bytes)"),
    (jvm_names.WRITE_BUFFER_SIZE, "3g", "expected a size from 0 to below 2g"),
    (jvm_names.WRITE_BUFFER_SIZE, "big", "expected a size from 0 to below 2g"),
    (jvm_names.PROVIDER_CLASS_CONF, jvm_names.HEAP_PROVIDER_CLASS.replace("Provider", "Provder"),
     "expected " + jvm_names.HEAP_PROVIDER_CLASS),
]

#: Static settings, refused when the session starts (a wrong session setting given at start-up
#: is refused then too).
STATIC_CASES = [
    (jvm_names.DRIVER_MAX_TOTAL_INLINE_SIZE, "much", "expected a size of at least 1 byte"),
    (jvm_names.DRIVER_MAX_TOTAL_INLINE_SIZE, "0", "expected a size of at least 1 byte"),
    (jvm_names.EXECUTOR_MAX_REQUEST_BATCH_SIZE, "65m", "expected a size from 0 (each request on its own) to 64m"),
    (jvm_names.EXECUTOR_MAX_REQUEST_BATCH_SIZE, "some", "expected a size from 0 (each request on its own) to 64m"),
    (jvm_names.EXTERNALIZED_CLEANUP, "KEEP", "expected RETAIN_ON_CANCELLATION or DELETE_ON_CANCELLATION"),
] + [case for case in SESSION_CASES if case[1] in ("2m", "filesytem")]

TYPO = P + ".fileStateSizeTreshold"


def first_line(message: str, key: str, value: str, allowed: str) -> None:
    first = message.splitlines()[0]
    assert "Invalid value '%s' for %s: " % (value, key) in first, message[:2000]
    assert allowed in first, message[:2000]


def start_aggregation(spark, checkpoint, source=None):
    """The aggregation of the rate source, or of the parquet files under ``source``."""
    if source is None:
        stream = spark.readStream.format("rate").load()
    else:
        stream = spark.readStream.schema("value long").parquet(str(source))
    return (stream.groupBy("value").count()
            .writeStream.outputMode("update").format("noop")
            .option("checkpointLocation", str(checkpoint)).start())


@pytest.mark.parametrize("key,value,allowed", SESSION_CASES)
def test_wrong_session_setting_fails_the_query_start(spark, tmp_path, key, value, allowed):
    spark.conf.set(key, value)
    try:
        with pytest.raises(IllegalCheckpointStorageArgumentException) as err:
            query = start_aggregation(spark, tmp_path / "cp")
            query.stop()
    finally:
        spark.conf.unset(key)
    first_line(str(err.value), key, value, allowed)
    assert err.value.getCondition() == "CHECKPOINT_STORAGE.INVALID_ARGUMENT"
    assert isinstance(err.value, ValueError)
    # Refused before anything ran: no batch was planned, nothing written.
    assert not (tmp_path / "cp" / "offsets").exists()


def test_misspelt_setting_name_is_refused_with_the_nearest_one(spark, tmp_path):
    spark.conf.set(TYPO, "1k")
    try:
        with pytest.raises(IllegalCheckpointStorageArgumentException) as err:
            start_aggregation(spark, tmp_path / "cp").stop()
    finally:
        spark.conf.unset(TYPO)
    first = str(err.value).splitlines()[0]
    assert "Unknown setting %s (value '1k')" % TYPO in first
    assert "Did you mean %s?" % jvm_names.FILE_STATE_SIZE_THRESHOLD in first


def test_the_query_starts_once_the_setting_is_fixed(spark, tmp_path):
    """A refused start leaves nothing behind: the same checkpoint starts cleanly afterwards."""
    checkpoint = tmp_path / "cp"
    spark.conf.set(jvm_names.FILE_STATE_SIZE_THRESHOLD, "2m")
    try:
        with pytest.raises(IllegalCheckpointStorageArgumentException):
            start_aggregation(spark, checkpoint)
    finally:
        spark.conf.unset(jvm_names.FILE_STATE_SIZE_THRESHOLD)
    source = tmp_path / "source"
    spark.range(10).write.parquet(str(source))
    query = start_aggregation(spark, checkpoint, source)
    try:
        query.processAllAvailable()
        assert query.lastProgress is not None and query.exception() is None
    finally:
        query.stop()
    assert (checkpoint / "commits").exists()


_STATIC_SESSIONS = """
    import json
    from pyspark.sql import SparkSession
    from spark_checkpoint_storage import configure_spark_with_checkpoint_storage
    from spark_checkpoint_storage.errors import IllegalCheckpointStorageArgumentException

    def builder():
        return configure_spark_with_checkpoint_storage(
            SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false"))

    # The JVM starts with a good session; each later one brings one wrong setting.
    builder().getOrCreate().stop()
    seen = []
    for key, value in %r:
        try:
            builder().config(key, value).getOrCreate().stop()
            seen.append([key, value, "STARTED", ""])
        except IllegalCheckpointStorageArgumentException as e:
            seen.append([key, value, type(e).__name__, str(e)])
    print("RESULT " + json.dumps(seen), flush=True)
    # A misspelt name, not caught: how it ends a script.
    builder().config(%r, "1k").getOrCreate().stop()
"""


def test_wrong_static_settings_fail_the_session_start(subproc):
    result = subproc.python(_STATIC_SESSIONS % ([[k, v] for k, v, _ in STATIC_CASES], TYPO))
    assert result.returncode != 0, result.stdout[-3000:]
    line = [l for l in result.stdout.splitlines() if l.startswith("RESULT ")]
    assert line, result.stderr[-5000:]
    seen = json.loads(line[0][len("RESULT "):])
    for (key, value, allowed), (_, _, kind, message) in zip(STATIC_CASES, seen):
        assert kind == "IllegalCheckpointStorageArgumentException", (key, value, kind)
        assert message.startswith("[CHECKPOINT_STORAGE.INVALID_ARGUMENT] "), message
        first_line(message, key, value, allowed)
    raised = [l for l in result.stderr.splitlines()
              if l.startswith("spark_checkpoint_storage.errors.IllegalCheckpointStorageArgumentException: ")]
    assert raised and "Unknown setting %s" % TYPO in raised[0], result.stderr[-5000:]


_SUBMIT_JOB = """
    from pyspark.sql import SparkSession
    spark = SparkSession.builder.getOrCreate()
    # spark-submit built the session, not our helpers: our errors for our JVM errors.
    from spark_checkpoint_storage import install_error_conversion
    install_error_conversion()
    spark.conf.set(%r, "2m")
    (spark.readStream.format("rate").load().groupBy("value").count()
     .writeStream.outputMode("update").format("noop")
     .option("checkpointLocation", %r).start().awaitTermination(5))
"""


def _submit_args(*confs, plugin=True):
    args = ["--master", "local[1]", "--jars", bundled_jar_path(),
            "--conf", "%s=%s" % (jvm_names.PROVIDER_CLASS_CONF, jvm_names.HEAP_PROVIDER_CLASS),
            "--conf", "%s=%s" % (jvm_names.FILE_MANAGER_CLASS_CONF, jvm_names.FILE_MANAGER_CLASS)]
    if plugin:
        args += ["--conf", "%s=%s" % (jvm_names.PLUGINS_CONF, jvm_names.PLUGIN_CLASS)]
    for conf in confs:
        args += ["--conf", conf]
    return args


def test_spark_submit_prints_the_refused_setting(subproc, tmp_path):
    """spark-submit users read the same first line: a static setting at start-up, a session
    setting when the query starts."""
    def job(name):
        return _SUBMIT_JOB % (jvm_names.FILE_STATE_SIZE_THRESHOLD, str(tmp_path / name))
    # Three drivers, side by side, each on a checkpoint of its own.
    at_start, at_query, no_plugin = subproc.spark_submit_all([
        (_submit_args("%s=65m" % jvm_names.EXECUTOR_MAX_REQUEST_BATCH_SIZE), job("cp-at-start")),
        (_submit_args(), job("cp")),
        (_submit_args(plugin=False), job("cp-no-plugin"))])
    assert at_start.returncode != 0
    assert ("Invalid value '65m' for %s: expected a size from 0 (each request on its own) to 64m"
            % jvm_names.EXECUTOR_MAX_REQUEST_BATCH_SIZE) in at_start.stderr, at_start.stderr[-5000:]
    assert at_query.returncode != 0
    # The traceback's last line; spark-submit passes the Python driver's output on as its stdout.
    raised = [l for l in (at_query.stdout + at_query.stderr).splitlines()
              if l.startswith("spark_checkpoint_storage.errors.IllegalCheckpointStorageArgumentException: ")]
    assert raised, at_query.stdout[-3000:] + at_query.stderr[-3000:]
    assert ("Invalid value '2m' for %s: expected a size from 0 to 1m"
            % jvm_names.FILE_STATE_SIZE_THRESHOLD) in raised[0]
    assert not (tmp_path / "cp" / "offsets").exists()
    # Settings given without the coordinator plugin: refused when the query starts.
    assert no_plugin.returncode != 0
    assert ("runs without its coordinator: spark.plugins does not name %s. Start Spark with spark.plugins=%s"
            % (jvm_names.PLUGIN_CLASS, jvm_names.PLUGIN_CLASS)) in no_plugin.stdout + no_plugin.stderr, \
        no_plugin.stdout[-3000:] + no_plugin.stderr[-3000:]


def test_helper_in_a_process_whose_jvm_lacks_the_jar_says_why(subproc):
    """A notebook started a plain session first: its JVM cannot take the jar any more."""
    result = subproc.python("""
        from pyspark.sql import SparkSession
        SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate().stop()
        from spark_checkpoint_storage import configure_spark_with_checkpoint_storage
        from spark_checkpoint_storage.bundled_jar import JarNotOnClasspathError
        try:
            configure_spark_with_checkpoint_storage(SparkSession.builder.master("local[1]")).getOrCreate()
        except JarNotOnClasspathError as e:
            print("REFUSED " + str(e))
    """)
    out = assert_ok(result)
    refused = [l for l in out.splitlines() if l.startswith("REFUSED ")]
    assert refused, out[-3000:] + result.stderr[-3000:]
    message = refused[0]
    assert "already runs a Spark driver JVM" in message
    assert "Start a new Python process" in message
    assert "--jars %s" % bundled_jar_path() in message
    assert "ClassNotFoundException" not in out + result.stderr


def test_connect_server_without_the_plugin_is_named():
    """A Spark Connect client cannot add the jar: a server started without it is refused when
    the client asks for its checkpoint settings (the module test_spark_connect runs the real
    server with the plugin, where the same check passes)."""
    from spark_checkpoint_storage.plugin import check_connect_server_has_plugin

    class Conf:
        def __init__(self, plugins):
            self.plugins = plugins

        def get(self, key, default=None):
            return self.plugins if key == jvm_names.PLUGINS_CONF else default

    class Session:
        def __init__(self, plugins):
            self.conf = Conf(plugins)

    with pytest.raises(JarNotOnClasspathError) as err:
        check_connect_server_has_plugin(Session(None))
    message = str(err.value)
    assert "The Spark Connect server does not run the spark-checkpoint-storage plugin" in message
    assert "--jars %s" % bundled_jar_path() in message
    assert "--conf spark.plugins=%s" % jvm_names.PLUGIN_CLASS in message
    with pytest.raises(JarNotOnClasspathError):
        check_connect_server_has_plugin(Session("com.example.OtherPlugin"))
    check_connect_server_has_plugin(Session("com.example.OtherPlugin, " + jvm_names.PLUGIN_CLASS))


# --------------------------------------------------------------------------------------
# Who converts our JVM errors: the session helpers, never the import

_IMPORT_ONLY = """
    import importlib, pkgutil
    from pyspark import SparkContext
    from pyspark.errors.exceptions import captured
    import pyspark.sql

    original = captured.convert_exception
    import spark_checkpoint_storage
    for module in pkgutil.iter_modules(spark_checkpoint_storage.__path__):
        if module.name != "__main__":
            importlib.import_module("spark_checkpoint_storage." + module.name)
    from spark_checkpoint_storage.errors import is_error_conversion_installed
    assert captured.convert_exception is original, captured.convert_exception
    assert not is_error_conversion_installed()
    assert SparkContext._gateway is None  # no JVM either
    print("UNTOUCHED", flush=True)
"""


def test_importing_the_package_changes_nothing_in_pyspark(subproc):
    """Importing the package and every module of it leaves PySpark's conversion of JVM errors
    as PySpark made it (and starts no JVM)."""
    assert "UNTOUCHED" in assert_ok(subproc.python(_IMPORT_ONLY))


_HELPER_INSTALLS = """
    from pyspark.errors.exceptions import captured
    from pyspark.sql import SparkSession
    from spark_checkpoint_storage import (
        configure_spark_with_checkpoint_storage, get_checkpoint_config, install_error_conversion,
        jvm_names)
    from spark_checkpoint_storage.bundled_jar import bundled_jar_path
    from spark_checkpoint_storage.errors import (
        CheckpointStorageException, IllegalCheckpointStorageArgumentException,
        is_error_conversion_installed)

    def start_refused(spark, name):
        spark.conf.set(jvm_names.FILE_STATE_SIZE_THRESHOLD, "2m")
        try:
            (spark.readStream.format("rate").load().groupBy("value").count().writeStream
             .outputMode("update").format("noop").option("checkpointLocation", name).start())
        except Exception as e:
            return e
        finally:
            spark.conf.unset(jvm_names.FILE_STATE_SIZE_THRESHOLD)
        raise AssertionError("a threshold over 1 MiB was accepted")

    # A session with the jar and the plugin, built without our helpers: PySpark's errors.
    original = captured.convert_exception
    spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
             .config(jvm_names.JARS_CONF, bundled_jar_path())
             .config(jvm_names.PLUGINS_CONF, jvm_names.PLUGIN_CLASS)
             .config(jvm_names.PROVIDER_CLASS_CONF, jvm_names.HEAP_PROVIDER_CLASS)
             .config(jvm_names.FILE_MANAGER_CLASS_CONF, jvm_names.FILE_MANAGER_CLASS)
             .getOrCreate())
    plain = start_refused(spark, "cp-plain")
    assert not isinstance(plain, CheckpointStorageException), repr(plain)
    assert "Invalid value '2m' for " + jvm_names.FILE_STATE_SIZE_THRESHOLD in str(plain), str(plain)
    assert captured.convert_exception is original and not is_error_conversion_installed()
    print("WITHOUT", type(plain).__module__ + "." + type(plain).__name__, flush=True)

    # The helper installs the conversion, once: the same refusal is ours.
    builder = configure_spark_with_checkpoint_storage(SparkSession.builder.master("local[1]"))
    installed = captured.convert_exception
    assert installed is not original and installed.__wrapped__ is original
    assert is_error_conversion_installed()
    configure_spark_with_checkpoint_storage(SparkSession.builder)
    get_checkpoint_config(spark)
    install_error_conversion()
    assert captured.convert_exception is installed
    assert builder.getOrCreate() is spark
    ours = start_refused(spark, "cp-helper")
    assert isinstance(ours, IllegalCheckpointStorageArgumentException), repr(ours)
    assert ours.getCondition() == "CHECKPOINT_STORAGE.INVALID_ARGUMENT"
    print("WITH", type(ours).__module__ + "." + type(ours).__name__, flush=True)
    print("FIRST LINE " + str(ours).splitlines()[0], flush=True)
    spark.stop()
"""


def test_session_helper_installs_the_conversion_of_our_jvm_errors(subproc):
    """Before the session helper, a JVM error of ours (a wrong setting refused when a query
    starts) reaches Python as PySpark made it; once ``configure_spark_with_checkpoint_storage``
    ran, as our exception class, and further helper calls install nothing more."""
    out = assert_ok(subproc.python(_HELPER_INSTALLS))
    without = [l for l in out.splitlines() if l.startswith("WITHOUT ")]
    assert without and without[0].startswith("WITHOUT pyspark."), out[-3000:]
    assert "WITH spark_checkpoint_storage.errors.IllegalCheckpointStorageArgumentException" in out
    first = [l for l in out.splitlines() if l.startswith("FIRST LINE ")][0][len("FIRST LINE "):]
    assert first.startswith("[CHECKPOINT_STORAGE.INVALID_ARGUMENT] ")
    first_line(first[len("[CHECKPOINT_STORAGE.INVALID_ARGUMENT] "):], jvm_names.FILE_STATE_SIZE_THRESHOLD,
               "2m", "expected a size from 0 to 1m")
