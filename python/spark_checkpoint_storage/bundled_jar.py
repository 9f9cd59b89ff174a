"""
The plugin jar that ships inside this Python package, and the check that the JVM in use
runs the jar of the same version.
"""
import glob
import os
from typing import Any

from spark_checkpoint_storage._version import __version__

__all__ = ["bundled_jar_path", "check_jar_version", "JarVersionMismatchError",
           "JarNotOnClasspathError", "JVM_BUILD_INFO_CLASS", "ARTIFACT_ID", "GROUP_ID"]

GROUP_ID = "io.sparkcheckpointstorage"
ARTIFACT_ID = "spark-checkpoint-storage_2.13"
JVM_BUILD_INFO_CLASS = "io.sparkcheckpointstorage.BuildInfo"

_JARS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "jars")


class JarNotOnClasspathError(RuntimeError):
    """The spark-checkpoint-storage jar is not on the classpath of the Spark driver JVM."""


class JarVersionMismatchError(RuntimeError):
    """The jar on the JVM's classpath and this Python package are of different versions."""


def bundled_jar_path() -> str:
    """
    Returns the absolute path of the jar bundled with this package.

    Example:
    ::

        >>> from spark_checkpoint_storage.bundled_jar import bundled_jar_path
        >>> bundled_jar_path().endswith(".jar")
        True
    """
    jars = sorted(glob.glob(os.path.join(_JARS_DIR, "spark-checkpoint-storage_*.jar")))
    if not jars:
        raise JarNotOnClasspathError(
            "The spark-checkpoint-storage jar is missing from the Python package at %s. "
            "Reinstall the package (pip install spark-checkpoint-storage), or from a source "
            "checkout run dev/bootstrap, which builds the jar and installs the package."
            % _JARS_DIR)
    if len(jars) > 1:
        raise JarNotOnClasspathError(
            "Several spark-checkpoint-storage jars in %s: %s. Reinstall the package so that "
            "exactly one remains." % (_JARS_DIR, ", ".join(os.path.basename(j) for j in jars)))
    return jars[0]


def _how_to_add_jar() -> str:
    try:
        jar = bundled_jar_path()
    except JarNotOnClasspathError:
        jar = "<the spark-checkpoint-storage jar>"
    return (
        "Build the session with spark_checkpoint_storage.configure_spark_with_checkpoint_storage"
        "(SparkSession.builder), or start Spark with --jars %s, or with --packages %s:%s:%s. "
        "The jar must be on the classpath when the driver JVM starts: stop the running "
        "SparkSession first." % (jar, GROUP_ID, ARTIFACT_ID, __version__))


def check_jar_version(gateway: Any) -> str:
    """
    Checks that the driver JVM behind ``gateway`` has the spark-checkpoint-storage jar on its
    classpath, of the same version as this package. Returns the jar's version.

    :raises JarNotOnClasspathError: when the JVM cannot load the jar's classes.
    :raises JarVersionMismatchError: when the jar's version differs from the package's.
    """
    from py4j.java_gateway import JavaClass
    from py4j.protocol import Py4JError

    build_info = gateway.jvm
    for part in JVM_BUILD_INFO_CLASS.split("."):
        build_info = getattr(build_info, part)
    # py4j answers a class it cannot load with a JavaPackage, which fails later with the
    # cryptic "'JavaPackage' object is not callable": catch that here.
    if not isinstance(build_info, JavaClass):
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
    return jar_version


def _bundled_or_unknown() -> str:
    try:
        return bundled_jar_path()
    except JarNotOnClasspathError:
        return "missing"
