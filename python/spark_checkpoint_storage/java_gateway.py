"""
Access to the JVM, in the manner of ``pyflink.java_gateway``: :func:`get_gateway` returns
the py4j gateway of the running Spark driver, or launches one with the bundled jar so that
checkpoint storages can be built and inspected before a SparkSession exists.
"""
import atexit
import contextlib
import signal
import subprocess
import threading
from typing import Any, Iterator, Optional

from spark_checkpoint_storage.bundled_jar import bundled_jar_path, check_jar_version

__all__ = ["get_gateway"]

_lock = threading.RLock()
_launched_gateway: Optional[Any] = None
# Gateways whose JVM already passed the jar check, keyed by id (a gateway is not hashable
# in every py4j version).
_checked_gateways: "dict[int, Any]" = {}


def get_gateway() -> Any:
    """
    Returns the py4j gateway to the JVM that holds the spark-checkpoint-storage classes.

    With an active SparkContext this is that context's gateway (the driver JVM). With none,
    a gateway is launched once per Python process with the bundled jar on its classpath, so
    that storages can be created before the session, as in PyFlink. Either way the jar's
    version is checked against this package's on first use.

    Example:
    ::

        >>> from spark_checkpoint_storage.java_gateway import get_gateway
        >>> gateway = get_gateway()
        >>> gateway.jvm.io.sparkcheckpointstorage.BuildInfo.version()  # doctest: +SKIP
        '0.1.0'

    :raises JarNotOnClasspathError: the running driver was started without the jar.
    :raises JarVersionMismatchError: the driver's jar is of another version.
    """
    from pyspark import SparkContext

    with _lock:
        sc = SparkContext._active_spark_context
        gateway = sc._gateway if sc is not None else _launch_gateway()
        if id(gateway) not in _checked_gateways:
            check_jar_version(gateway)
            _checked_gateways[id(gateway)] = gateway
        return gateway


def _launch_gateway() -> Any:
    global _launched_gateway
    if _launched_gateway is None:
        from pyspark import SparkConf
        from pyspark.java_gateway import launch_gateway

        conf = SparkConf(loadDefaults=False).set("spark.jars", bundled_jar_path())
        with _no_python_between_fork_and_exec():
            _launched_gateway = launch_gateway(conf)
        atexit.register(_shutdown_launched_gateway)
    return _launched_gateway


@contextlib.contextmanager
def _no_python_between_fork_and_exec() -> Iterator[None]:
    """PySpark starts its JVM with a ``preexec_fn`` that makes the JVM ignore the terminal's
    Ctrl-C (SIGINT): Python code in the child between fork and exec, which Python documents as
    unsafe while other threads run. A Spark Connect client's gRPC threads do: the child then
    died now and then before exec (``JAVA_GATEWAY_EXITED``). On the main thread, SIGINT is
    ignored in this process for the moment of the fork instead: an ignored signal stays
    ignored across fork and exec, and the JVM keeps it so. The JVM stays in the caller's
    process group, so a kill of the group still takes it along. (Only the main thread may
    change a signal's handler: from another, PySpark's own launch is used.)"""
    import pyspark.java_gateway as pyspark_gateway

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def popen(*args: Any, **kwargs: Any) -> subprocess.Popen:
        kwargs.pop("preexec_fn", None)
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            return subprocess.Popen(*args, **kwargs)
        finally:
            signal.signal(signal.SIGINT, previous)

    original = pyspark_gateway.Popen
    pyspark_gateway.Popen = popen
    try:
        yield
    finally:
        pyspark_gateway.Popen = original


def _shutdown_launched_gateway() -> None:
    """Stops the JVM launched by :func:`get_gateway` (the JVM exits when its stdin closes)."""
    global _launched_gateway
    with _lock:
        gateway, _launched_gateway = _launched_gateway, None
        if gateway is None:
            return
        _checked_gateways.pop(id(gateway), None)
        proc = getattr(gateway, "proc", None)
        try:
            gateway.shutdown()
        finally:
            if proc is not None:
                if proc.stdin is not None:
                    proc.stdin.close()
                proc.wait(timeout=30)
