"""The package, its bundled jar, the gateway, and the ways the jar reaches Spark."""
import glob
import os
import re
import subprocess
import sys
import zipfile

import pytest

import spark_checkpoint_storage
from spark_checkpoint_storage import bundled_jar_path
from spark_checkpoint_storage.bundled_jar import (GROUP_ID, SUPPORTED_SPARK_LINES, artifact_id,
                                                  running_spark_line)

from conftest import ROOT, assert_ok, spark_lines_and_scala

VERSION_RESOURCE = "spark-checkpoint-storage-version.properties"


def jar_properties(jar: str) -> dict:
    with zipfile.ZipFile(jar) as z:
        text = z.read(VERSION_RESOURCE).decode()
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def test_package_carries_jar_of_its_own_version():
    jar = bundled_jar_path()
    assert os.path.isfile(jar)
    assert os.path.dirname(jar).startswith(os.path.dirname(spark_checkpoint_storage.__file__))
    props = jar_properties(jar)
    line, scala = running_spark_line()
    import pyspark
    assert line == ".".join(pyspark.__version__.split(".")[:2])
    assert props["version"] == spark_checkpoint_storage.__version__
    assert props["spark.line"] == line
    assert props["scala.binary.version"] == scala
    assert os.path.basename(jar) == "spark-checkpoint-storage-spark%s_%s-%s.jar" % (
        line, scala, spark_checkpoint_storage.__version__)


def test_package_carries_one_jar_per_spark_line():
    # What the package says it supports is what the project's table of lines builds.
    assert list(SUPPORTED_SPARK_LINES) == spark_lines_and_scala()
    for line, scala in SUPPORTED_SPARK_LINES:
        props = jar_properties(bundled_jar_path(line, scala))
        assert (props["spark.line"], props["scala.binary.version"]) == (line, scala)
        assert props["spark.version"].startswith(line + ".")


def test_unsupported_spark_line_fails_fast_naming_the_supported_ones():
    from spark_checkpoint_storage.bundled_jar import UnsupportedSparkVersionError
    with pytest.raises(UnsupportedSparkVersionError) as e:
        bundled_jar_path("3.4", "2.12")
    message = str(e.value)
    assert "does not support Spark 3.4 with Scala 2.12" in message
    assert "Supported Spark lines: %s." % ", ".join(
        "%s (Scala %s)" % ls for ls in spark_lines_and_scala()) in message


def test_jar_of_another_spark_line_is_refused_naming_the_right_artifact(subproc):
    line, scala = running_spark_line()
    # Another line's jar of the same Scala binary version: one of another Scala version
    # cannot even load its classes (scala.Serializable is gone in 2.13).
    others = [(lo, sc) for lo, sc in SUPPORTED_SPARK_LINES if lo != line and sc == scala]
    if not others:
        pytest.skip("no other Spark line is built for Scala %s" % scala)
    other = others[0]
    out = assert_ok(subproc.python("""
        from pyspark import SparkConf
        from pyspark.java_gateway import launch_gateway
        from spark_checkpoint_storage.bundled_jar import (UnsupportedSparkVersionError,
            bundled_jar_path, check_jar_version)
        gw = launch_gateway(SparkConf(loadDefaults=False).set("spark.jars", bundled_jar_path(%r, %r)))
        try:
            check_jar_version(gw)
        except UnsupportedSparkVersionError as e:
            print("REFUSED", e)
    """ % other))
    assert "REFUSED The spark-checkpoint-storage jar" in out
    assert "is built for Spark %s (Scala %s)" % other in out
    assert "--packages io.sparkcheckpointstorage:spark-checkpoint-storage-spark%s_%s:%s" % (
        line, scala, spark_checkpoint_storage.__version__) in out


def test_wheel_built_from_repo_contains_jar(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(tmp_path), ROOT],
        capture_output=True, text=True, timeout=600)
    assert_ok(result)
    wheels = glob.glob(str(tmp_path / "*.whl"))
    assert len(wheels) == 1
    with zipfile.ZipFile(wheels[0]) as z:
        names = z.namelist()
    for line, scala in SUPPORTED_SPARK_LINES:
        assert "spark_checkpoint_storage/jars/%s-%s.jar" % (
            artifact_id(line, scala), spark_checkpoint_storage.__version__) in names
    assert "spark_checkpoint_storage/java_gateway.py" in names


def test_get_gateway_without_session_launches_jvm_with_jar(subproc):
    out = assert_ok(subproc.python("""
        from pyspark import SparkContext
        from spark_checkpoint_storage import get_gateway
        gw = get_gateway()
        assert SparkContext._active_spark_context is None
        print("VERSION", gw.jvm.io.sparkcheckpointstorage.BuildInfo.version())
        assert get_gateway() is gw, "launched once per process"
    """))
    assert "VERSION %s" % spark_checkpoint_storage.__version__ in out


def test_get_gateway_with_session_is_the_drivers_gateway(subproc):
    out = assert_ok(subproc.python("""
        from pyspark.sql import SparkSession
        from spark_checkpoint_storage import configure_spark_with_checkpoint_storage, get_gateway
        spark = configure_spark_with_checkpoint_storage(
            SparkSession.builder.master("local[1]")).getOrCreate()
        gw = get_gateway()
        assert gw is spark.sparkContext._gateway
        print("JAR", gw.jvm.io.sparkcheckpointstorage.BuildInfo.jarLocation())
        spark.stop()
    """))
    assert "JAR file:%s" % bundled_jar_path() in out


def test_missing_jar_gives_clear_error_not_javapackage(subproc):
    result = subproc.python("""
        from pyspark.sql import SparkSession
        from spark_checkpoint_storage import get_gateway
        spark = SparkSession.builder.master("local[1]").getOrCreate()
        get_gateway()
    """)
    assert result.returncode != 0
    assert "JarNotOnClasspathError" in result.stderr
    assert "not on the Spark driver's classpath" in result.stderr
    assert "configure_spark_with_checkpoint_storage" in result.stderr
    assert "--jars %s" % bundled_jar_path() in result.stderr
    assert "JavaPackage" not in result.stderr


def test_jar_of_other_version_fails_fast_naming_both(subproc, tmp_path):
    other = tmp_path / "spark-checkpoint-storage_2.13-9.9.9.jar"
    with zipfile.ZipFile(bundled_jar_path()) as src, zipfile.ZipFile(other, "w") as dst:
        for item in src.infolist():
            data = src.read(item.filename)
            if item.filename == VERSION_RESOURCE:
                data = re.sub(rb"(?m)^version=.*$", b"version=9.9.9", data)
            dst.writestr(item, data)
    result = subproc.python("""
        from pyspark.sql import SparkSession
        from spark_checkpoint_storage import get_gateway
        spark = SparkSession.builder.master("local[1]").config("spark.jars", %r).getOrCreate()
        get_gateway()
    """ % str(other))
    assert result.returncode != 0
    assert "JarVersionMismatchError" in result.stderr
    assert "the Python package is %s" % spark_checkpoint_storage.__version__ in result.stderr
    assert "is 9.9.9" in result.stderr
    assert str(other) in result.stderr


EXECUTOR_JOB = """
    from pyspark.sql import SparkSession
    spark = SparkSession.builder.getOrCreate()
    sc = spark.sparkContext
    jvm = spark._jvm
    driver_jar = jvm.io.sparkcheckpointstorage.BuildInfo.jarLocation()
    # reflect() runs the static method inside the task, on an executor JVM.
    rows = spark.range(0, 4, 1, 2).selectExpr(
        "reflect('io.sparkcheckpointstorage.BuildInfo', 'version') AS v",
        "reflect('io.sparkcheckpointstorage.BuildInfo', 'jarLocation') AS loc").collect()
    executors = sc._jsc.sc().getExecutorMemoryStatus().size() - 1
    print("EXECUTORS", executors)
    print("DRIVER_JAR", driver_jar)
    for r in rows:
        print("EXECUTOR_JAR", r.v, r.loc)
    spark.stop()
"""


def _executor_lines(out: str):
    return [line.split(" ", 2)[1:] for line in out.splitlines() if line.startswith("EXECUTOR_JAR ")]


def test_jar_reaches_executor_jvms_on_local_cluster(subproc):
    out = assert_ok(subproc.python("""
        from pyspark.sql import SparkSession
        from spark_checkpoint_storage import configure_spark_with_checkpoint_storage
        builder = SparkSession.builder.master("local-cluster[2,1,1024]")
        configure_spark_with_checkpoint_storage(builder).getOrCreate()
    """ + EXECUTOR_JOB.replace("\n    ", "\n        "), timeout=600))
    assert "EXECUTORS 2" in out
    lines = _executor_lines(out)
    assert len(lines) == 4
    for version, location in lines:
        assert version == spark_checkpoint_storage.__version__
        # Each executor loads its own fetched copy, not the driver's file.
        assert location != "file:%s" % bundled_jar_path()
        assert location.endswith("%s-%s.jar" % (artifact_id(), version))


@pytest.mark.parametrize("how", ["packages", "jars"])
def test_spark_submit_with_packages_or_jars(subproc, tmp_path, how):
    coordinate = "%s:%s:%s" % (GROUP_ID, artifact_id(), spark_checkpoint_storage.__version__)
    if how == "packages":
        # Resolved from the local Maven repository that dev/build-jar published to.
        args = ["--packages", coordinate, "--conf", "spark.jars.ivy=%s" % (tmp_path / "ivy")]
    else:
        args = ["--jars", bundled_jar_path()]
    out = assert_ok(subproc.spark_submit(
        ["--master", "local-cluster[2,1,1024]"] + args, EXECUTOR_JOB, timeout=600))
    lines = _executor_lines(out)
    assert len(lines) == 4
    assert {v for v, _ in lines} == {spark_checkpoint_storage.__version__}
    if how == "packages":
        assert (tmp_path / "ivy" / "jars" / ("%s_%s-%s.jar" % (
            GROUP_ID, artifact_id(), spark_checkpoint_storage.__version__))).exists()
