"""
The plugin jar that ships inside this Python package, and the check that the JVM in use
runs the jar of the same version.
"""
import glob
import os
import re
from typing import Any, List, Optional, Tuple

from spark_checkpoint_storage import jvm_names
from spark_checkpoint_storage._version import __version__

__all__ = ["bundled_jar_path", "check_jar_version", "JarVersionMismatchError",
           "JarNotOnClasspathError", "UnsupportedSparkVersionError", "jvm_has_jar", "JVM_BUILD_INFO_CLASS",
           "GROUP_ID", "SUPPORTED_SPARK_LINES", "artifact_id", "running_spark_line",
           "supported_spark_lines"]

GROUP_ID = jvm_names.JVM_PACKAGE
JVM_BUILD_INFO_CLASS = jvm_names.BUILD_INFO_CLASS

_JARS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "jars")
_JAR_NAME = re.compile(r"spark-checkpoint-storage-spark(\d+\.\d+)_(\d+\.\d+)-(.+)\.jar$")


def _carried_lines() -> Tuple[Tuple[str, str], ...]:
    # The jars the build put into the package are the one record of its lines here: the
    # build reads them from the project's table of Spark lines, so no list is kept twice.
    found = set()
    for jar in glob.glob(os.path.join(_JARS_DIR, "*.jar")):
        m = _JAR_NAME.search(os.path.basename(jar))
        if m and m.group(3) == __version__:
            found.add((m.group(1), m.group(2)))
    return tuple(sorted(found, key=lambda ls: (tuple(int(x) for x in ls[0].split(".")),
                                               tuple(int(x) for x in ls[1].split(".")))))


#: The Spark lines this package carries a jar for, with their Scala binary versions, oldest
#: first: read off the jars in the package (one per line and Scala binary).
SUPPORTED_SPARK_LINES: Tuple[Tuple[str, str], ...] = _carried_lines()


class UnsupportedSparkVersionError(RuntimeError):
    """The running Spark is of a line (or Scala binary version) this package has no jar for."""


def artifact_id(spark_line: Optional[str] = None, scala_binary: Optional[str] = None) -> str:
    """
    The Maven artifact of the jar for a Spark line, by default the running Spark's: the line
    is part of the name, as in ``--packages io.sparkcheckpointstorage:<artifact>:<version>``.

    Example:
    ::

        >>> from spark_checkpoint_storage.bundled_jar import artifact_id
        >>> artifact_id("3.5", "2.12")
        'spark-checkpoint-storage-spark3.5_2.12'
    """
    if spark_line is None or scala_binary is None:
        running_line, running_scala = running_spark_line()
        spark_line = spark_line or running_line
        scala_binary = scala_binary or running_scala
    return "spark-checkpoint-storage-spark%s_%s" % (spark_line, scala_binary)


def _spark_jars_dirs() -> List[str]:
    import pyspark

    dirs = [os.path.join(os.path.dirname(os.path.abspath(pyspark.__file__)), "jars")]
    spark_home = os.environ.get("SPARK_HOME")
    if spark_home:
        dirs.insert(0, os.path.join(spark_home, "jars"))
    return dirs


def running_spark_line() -> Tuple[str, str]:
    """
    The Spark line (``"4.3"``) and Scala binary version (``"2.13"``) of the Spark this Python
    process runs: pyspark's version, and the Scala library among Spark's jars (``SPARK_HOME``
    first, then pyspark's own).

    Example (with pyspark 4.3 installed):
    ::

        >>> running_spark_line()  # doctest: +SKIP
        ('4.3', '2.13')
    """
    import pyspark

    match = re.match(r"(\d+)\.(\d+)", pyspark.__version__)
    if match is None:
        raise UnsupportedSparkVersionError("Cannot tell the Spark line of pyspark %s"
                                           % pyspark.__version__)
    line = "%s.%s" % match.groups()
    scala = None
    for jars in _spark_jars_dirs():
        libs = glob.glob(os.path.join(jars, "scala-library-2.*.jar"))
        if libs:
            scala = re.search(r"scala-library-(2\.\d+)", os.path.basename(libs[0])).group(1)
            break
    # pyspark from PyPI is built for Scala 2.12 up to 3.5, 2.13 from 4.0.
    return line, scala or ("2.12" if line < "4.0" else "2.13")


def supported_spark_lines() -> List[str]:
    """
    The lines this package supports, as ``"3.5 (Scala 2.12)"``, for messages.

    Example:
    ::

        >>> supported_spark_lines()[0]
        '3.5 (Scala 2.12)'
    """
    return ["%s (Scala %s)" % (line, scala) for line, scala in SUPPORTED_SPARK_LINES]


class JarNotOnClasspathError(RuntimeError):
    """The spark-checkpoint-storage jar is not on the classpath of the Spark driver JVM."""


class JarVersionMismatchError(RuntimeError):
    """The jar on the JVM's classpath and this Python package are of different versions."""


def bundled_jar_path(spark_line: Optional[str] = None, scala_binary: Optional[str] = None) -> str:
    """
    Returns the absolute path of the jar bundled with this package for a Spark line and
    Scala binary version, by default those of the running Spark (see
    :func:`running_spark_line`). The package carries one jar per supported line.

    Example:
    ::

        >>> from spark_checkpoint_storage.bundled_jar import bundled_jar_path
        >>> bundled_jar_path().endswith(".jar")
        True
        >>> bundled_jar_path("3.5", "2.12").endswith("spark-checkpoint-storage-spark3.5_2.12-%s.jar"
        ...                                          % __version__)
        True

    :raises UnsupportedSparkVersionError: the line is not one of :data:`SUPPORTED_SPARK_LINES`.
    :raises JarNotOnClasspathError: the package is missing that line's jar.
    """
    if spark_line is None or scala_binary is None:
        running_line, running_scala = running_spark_line()
        spark_line = spark_line or running_line
        scala_binary = scala_binary or running_scala
    if (spark_line, scala_binary) not in SUPPORTED_SPARK_LINES:
        import pyspark

        raise UnsupportedSparkVersionError(
            "spark-checkpoint-storage %s does not support Spark %s with Scala %s (pyspark %s "
            "is installed). Supported Spark lines: %s. Install a pyspark of one of them."
            % (__version__, spark_line, scala_binary, pyspark.__version__,
               ", ".join(supported_spark_lines())))
    name = "%s-%s.jar" % (artifact_id(spark_line, scala_binary), __version__)
    jar = os.path.join(_JARS_DIR, name)
    if not os.path.isfile(jar):
        present = sorted(os.path.basename(j) for j in glob.glob(os.path.join(_JARS_DIR, "*.jar")))
        raise JarNotOnClasspathError(
            "The spark-checkpoint-storage jar for Spark %s (Scala %s), %s, is missing from the "
            "Python package at %s (it holds: %s). Reinstall the package (pip install "
            "spark-checkpoint-storage), or from a source checkout run dev/bootstrap, which builds "
            "the jars and installs the package."
            % (spark_line, scala_binary, name, _JARS_DIR, ", ".join(present) or "no jar"))
    return jar


def _how_to_add_jar() -> str:
    try:
        jar = bundled_jar_path()
    except (JarNotOnClasspathError, UnsupportedSparkVersionError):
        jar = "<the spark-checkpoint-storage jar>"
    return (
        "Build the session with spark_checkpoint_storage.configure_spark_with_checkpoint_storage"
        "(SparkSession.builder), or start Spark with --jars %s, or with --packages %s:%s:%s. "
        "The jar must be on the classpath when the driver JVM starts: stop the running "
        "SparkSession first." % (jar, GROUP_ID, _artifact_or_unknown(), __version__))


def _artifact_or_unknown() -> str:
    try:
        return artifact_id()
    except UnsupportedSparkVersionError:
        return "spark-checkpoint-storage-spark<line>_<scala>"


def _build_info(gateway: Any) -> Any:
    """The jar's ``BuildInfo`` class in the JVM behind ``gateway``, or None without the jar."""
    from py4j.java_gateway import JavaClass

    build_info = jvm_names.jvm_class(gateway.jvm, JVM_BUILD_INFO_CLASS)
    # py4j answers a class it cannot load with a JavaPackage, which fails later with the
    # cryptic "'JavaPackage' object is not callable": catch that here.
    return build_info if isinstance(build_info, JavaClass) else None


def jvm_has_jar(gateway: Any) -> bool:
    """
    Whether the JVM behind ``gateway`` can load the classes of the spark-checkpoint-storage jar.

    Example:
    ::

        >>> from spark_checkpoint_storage import get_gateway
        >>> jvm_has_jar(get_gateway())
        True
    """
    return _build_info(gateway) is not None


def check_jar_version(gateway: Any) -> str:
    """
    Checks that the driver JVM behind ``gateway`` has the spark-checkpoint-storage jar on its
    classpath, of the same version as this package. Returns the jar's version.

    :raises JarNotOnClasspathError: when the JVM cannot load the jar's classes.
    :raises JarVersionMismatchError: when the jar's version differs from the package's.
    :raises UnsupportedSparkVersionError: when the jar is built for another Spark line.

    Example:
    ::

        >>> from spark_checkpoint_storage import __version__, get_gateway
        >>> check_jar_version(get_gateway()) == __version__
        True
    """
    from py4j.protocol import Py4JError

    build_info = _build_info(gateway)
    if build_info is None:
        raise JarNotOnClasspathError(
            "The spark-checkpoint-storage classes are not on the Spark driver's classpath "
            "(%s cannot be loaded). %s" % (JVM_BUILD_INFO_CLASS, _how_to_add_jar()))
    try:
        jar_version = str(build_info.version())
        jar_location = str(build_info.jarLocation())
    except Py4JError as e:
        raise JarNotOnClasspathError(
            "The spark-checkpoint-storage jar on the driver's classpath cannot report its "
            "version (%s). %s" % (e, _how_to_add_jar())) from e
    if jar_version != __version__:
        raise JarVersionMismatchError(
            "spark-checkpoint-storage version mismatch: the Python package is %s but the jar "
            "on the Spark driver's classpath (%s) is %s. Use the jar bundled with the Python "
            "package (%s), or install the Python package of version %s."
            % (__version__, jar_location, jar_version, _bundled_or_unknown(), jar_version))
    mismatch = build_info.sparkLineMismatch()
    if mismatch is not None:
        raise UnsupportedSparkVersionError(str(mismatch))
    return jar_version


def _bundled_or_unknown() -> str:
    try:
        return bundled_jar_path()
    except (JarNotOnClasspathError, UnsupportedSparkVersionError):
        return "missing"
