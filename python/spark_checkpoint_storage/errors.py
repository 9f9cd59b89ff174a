"""
Errors of spark-checkpoint-storage, in the style of ``pyspark.errors``: every exception is a
:class:`pyspark.errors.PySparkException` with a condition (``getCondition()``), message
parameters and the plain message (``getMessage()``). Errors raised in the JVM by this
package's functions reach Python as one of these, carrying the JVM's message and exception
class, instead of a raw ``py4j.protocol.Py4JJavaError``. Errors of this package raised in the
JVM through PySpark's own calls (``writeStream.start()``) become these once
:func:`install_error_conversion` has run: the session helpers
(``configure_spark_with_checkpoint_storage``, ``get_checkpoint_config``) run it; importing the
package changes nothing in PySpark.

Example:
::

    >>> from spark_checkpoint_storage.checkpoint_storage import FileSystemCheckpointStorage
    >>> from spark_checkpoint_storage.errors import IllegalCheckpointStorageArgumentException
    >>> try:
    ...     FileSystemCheckpointStorage("file:///tmp/cp", file_state_size_threshold=2 ** 30)
    ... except IllegalCheckpointStorageArgumentException as e:
    ...     print(e.getCondition())
    CHECKPOINT_STORAGE.INVALID_ARGUMENT
"""
import functools
import inspect
import threading
from typing import Any, Callable, Dict, Optional, Type, TypeVar

from pyspark.errors import PySparkException

from spark_checkpoint_storage import jvm_names

__all__ = [
    "CheckpointStorageException",
    "IllegalCheckpointStorageArgumentException",
    "StateBackendNotSupportedException",
    "StateSizeLimitException",
    "CorruptCheckpointException",
    "UnsupportedFormatException",
    "CheckpointNotFoundException",
    "CheckpointStateException",
    "SavepointException",
    "MigrationException",
    "StaticConfigurationException",
    "ClassicSessionRequiredException",
    "ResultSchemaException",
    "convert_jvm_exception",
    "install_error_conversion",
    "is_error_conversion_installed",
    "jvm_errors",
]


# pyspark 4 names an error's condition `errorClass` and lets a message go with it; 3.5 does not.
_PYSPARK_4_ERRORS = "errorClass" in inspect.signature(PySparkException.__init__).parameters


class CheckpointStorageException(PySparkException):
    """
    Base of every error of spark-checkpoint-storage. ``getCondition()`` names the kind of
    error, ``getMessageParameters()`` holds the message and, for errors raised in the JVM,
    the JVM exception class (``javaClass``) and stack trace (``javaStackTrace``).
    """

    CONDITION = "CHECKPOINT_STORAGE.ERROR"

    def __init__(self, message: str, java_class: Optional[str] = None,
                 java_stack_trace: Optional[str] = None):
        parameters: Dict[str, str] = {"message": message}
        if java_class is not None:
            parameters["javaClass"] = java_class
        if java_stack_trace is not None:
            parameters["javaStackTrace"] = java_stack_trace
        self._parameters = parameters
        if _PYSPARK_4_ERRORS:
            super().__init__(message=message, errorClass=self.CONDITION,
                             messageParameters=parameters)
        else:
            # pyspark 3.5 takes a message or an error class with parameters, never both.
            super().__init__(message=message)
            self.error_class = self.CONDITION
            self.message_parameters = parameters
        self._text = message
        self.java_class = java_class
        self.java_stack_trace = java_stack_trace

    def getCondition(self) -> str:
        """The kind of error, such as ``CHECKPOINT_STORAGE.INVALID_ARGUMENT``."""
        return self.CONDITION

    def getErrorClass(self) -> str:
        """PySpark's older name of :meth:`getCondition`."""
        return self.CONDITION

    def getMessageParameters(self) -> Dict[str, str]:
        """The message and, for errors raised in the JVM, its class and stack trace."""
        return dict(self._parameters)

    def getMessage(self) -> str:
        """The condition and the message: ``[CHECKPOINT_STORAGE.INVALID_ARGUMENT] Invalid ...``."""
        return "[%s] %s" % (self.CONDITION, self._text)

    def getSqlState(self) -> Optional[str]:
        """None: these errors carry no SQL state."""
        return None

    def __str__(self) -> str:
        return self.getMessage()


class IllegalCheckpointStorageArgumentException(CheckpointStorageException, ValueError):
    """A value or setting is out of range or of the wrong kind (JVM ``IllegalArgumentException``)."""

    CONDITION = "CHECKPOINT_STORAGE.INVALID_ARGUMENT"


class StateBackendNotSupportedException(IllegalCheckpointStorageArgumentException):
    """
    The query needs another state backend than the session names: Spark's Real-Time Mode
    (4.3) runs only on Spark's RocksDB provider and refuses every query, stateless ones
    included, while the hash-map backend (``HeapStateStoreProvider``) is set.

    Example:
    ::

        >>> from spark_checkpoint_storage.state_backend import EmbeddedRocksDBStateBackend
        >>> try:
        ...     query = df.writeStream.trigger(realTime="5 seconds").start()
        ... except StateBackendNotSupportedException:
        ...     get_checkpoint_config(spark).set_state_backend(EmbeddedRocksDBStateBackend())
        ...     query = df.writeStream.trigger(realTime="5 seconds").start()
    """

    CONDITION = "CHECKPOINT_STORAGE.STATE_BACKEND_NOT_SUPPORTED"


class StateSizeLimitException(CheckpointStorageException, IOError):
    """A state file exceeds what the checkpoint storage accepts."""

    CONDITION = "CHECKPOINT_STORAGE.STATE_SIZE_LIMIT"


class CorruptCheckpointException(CheckpointStorageException, IOError):
    """A pack or state file is corrupt, truncated, or belongs to another checkpoint."""

    CONDITION = "CHECKPOINT_STORAGE.CORRUPT_CHECKPOINT"


class UnsupportedFormatException(CheckpointStorageException, IOError):
    """A file of the checkpoint (marker, pack, state file, manifest) is in a format version this
    release does not read: the message names the file and the release to upgrade to."""

    CONDITION = "CHECKPOINT_STORAGE.UNSUPPORTED_FORMAT"


class CheckpointNotFoundException(CheckpointStorageException, FileNotFoundError):
    """No checkpoint (or no such file) at the given location."""

    CONDITION = "CHECKPOINT_STORAGE.NOT_FOUND"


class CheckpointStateException(CheckpointStorageException, RuntimeError):
    """The checkpoint cannot be used as asked (for example, its heap-only state is gone)."""

    CONDITION = "CHECKPOINT_STORAGE.ILLEGAL_STATE"


class SavepointException(CheckpointStorageException, IOError):
    """A savepoint cannot be taken: bad target, no committed batch, uncommitted batch, ..."""

    CONDITION = "CHECKPOINT_STORAGE.SAVEPOINT"


class MigrationException(CheckpointStorageException, IOError):
    """A migration cannot be done as asked: uncommitted batch, unreadable operator or provider,
    target inside the source or not empty, state checkpoint format version 2, ..."""

    CONDITION = "CHECKPOINT_STORAGE.MIGRATION"


class StaticConfigurationException(CheckpointStorageException, RuntimeError):
    """A setting that Spark reads only at start-up was set on a running session."""

    CONDITION = "CHECKPOINT_STORAGE.STATIC_CONFIGURATION"


class ClassicSessionRequiredException(CheckpointStorageException, RuntimeError):
    """The operation needs the driver JVM through py4j, which a Spark Connect client has not."""

    CONDITION = "CHECKPOINT_STORAGE.CLASSIC_SESSION_REQUIRED"


class ResultSchemaException(CheckpointStorageException, ValueError):
    """A result from the JVM lacks a field of its Python class (:mod:`spark_checkpoint_storage.results`)
    or has one it does not know: the jar is of another build than the Python package."""

    CONDITION = "CHECKPOINT_STORAGE.RESULT_SCHEMA"


# JVM exception classes, most specific first, and the Python error each becomes.
_JAVA_TO_PYTHON = [
    (jvm_names.JVM_PACKAGE + ".storage.IllegalCheckpointStorageArgumentException",
     IllegalCheckpointStorageArgumentException),
    (jvm_names.JVM_PACKAGE + ".savepoint.SavepointException", SavepointException),
    (jvm_names.JVM_PACKAGE + ".migration.MigrationException", MigrationException),
    (jvm_names.JVM_PACKAGE + ".storage.StateSizeLimitException", StateSizeLimitException),
    # Packs and state files alike (their JVM classes share this parent).
    (jvm_names.JVM_PACKAGE + ".storage.CorruptCheckpointException", CorruptCheckpointException),
    (jvm_names.JVM_PACKAGE + ".formats.UnsupportedFormatException", UnsupportedFormatException),
    ("java.io.FileNotFoundException", CheckpointNotFoundException),
    ("java.lang.IllegalArgumentException", IllegalCheckpointStorageArgumentException),
    ("java.lang.IllegalStateException", CheckpointStateException),
]


# Our own JVM errors: found anywhere in a chain of causes, they say what went wrong better
# than the generic Spark errors wrapped around them (a failed task, a failed query).
_OWN_PACKAGE = jvm_names.JVM_PACKAGE + "."


def convert_jvm_exception(error: BaseException) -> BaseException:
    """
    Turns a ``py4j.protocol.Py4JJavaError`` (or pyspark's own conversion of one, such as the
    ``StreamingQueryException`` of a failed query) into the matching
    :class:`CheckpointStorageException` carrying the JVM message; returns anything else
    unchanged.

    When the JVM error is Spark's own wrapper (a failed task or query) and one of its causes
    is an error of this package, the cause decides: a corrupt pack read by a task of a
    streaming query becomes a :class:`CorruptCheckpointException` naming the pack.

    Example:
    ::

        >>> try:
        ...     query.processAllAvailable()
        ... except StreamingQueryException as e:
        ...     raise convert_jvm_exception(e) from e
    """
    from py4j.java_gateway import JavaObject
    from py4j.protocol import Py4JJavaError

    if isinstance(error, Py4JJavaError):
        java = error.java_exception
    elif isinstance(getattr(error, "_origin", None), JavaObject):
        # In a classic session pyspark converts some JVM errors itself (IllegalArgumentException
        # becomes pyspark.errors.IllegalArgumentException): start again from the JVM error.
        java = error._origin  # type: ignore[attr-defined]
    else:
        return error
    return _from_java(_own_cause(java), fallback=error)


def _from_java(java: Any, fallback: Any = None) -> Any:
    """The Python error of the JVM error ``java`` (its class decides which), carrying its
    message, class and stack trace; ``fallback`` when the JVM can no longer be asked."""
    try:
        java_class = str(java.getClass().getName())
        message = java.getMessage()
        message = str(message) if message is not None else java_class
        stack = str(java.toString()) + "".join(
            "\n\tat %s" % str(e) for e in list(java.getStackTrace())[:20])
    except Exception:  # the JVM is gone: keep what py4j printed
        return fallback
    kind: Type[CheckpointStorageException] = CheckpointStorageException
    for name, python_class in _JAVA_TO_PYTHON:
        if _is_instance(java, name):
            kind = python_class
            break
    return kind(message, java_class=java_class, java_stack_trace=stack)


def _own_cause(java: Any) -> Any:
    """The first error of this package in the chain of causes of ``java``, else ``java``."""
    current, seen = java, 0
    while current is not None and seen < 20:
        if _is_own(current):
            return current
        current, seen = current.getCause(), seen + 1
    return java


def _is_own(java: Any) -> bool:
    cls = java.getClass()
    while cls is not None:
        if str(cls.getName()).startswith(_OWN_PACKAGE):
            return True
        cls = cls.getSuperclass()
    return False


def _is_instance(java: Any, class_name: str) -> bool:
    cls = java.getClass()
    while cls is not None:
        if str(cls.getName()) == class_name:
            return True
        cls = cls.getSuperclass()
    return False


F = TypeVar("F", bound=Callable[..., Any])


def jvm_errors(fn: F) -> F:
    """
    Decorator: JVM exceptions raised by ``fn`` reach the caller as Python errors.

    Example:
    ::

        >>> from spark_checkpoint_storage.errors import jvm_errors
        >>> @jvm_errors
        ... def threshold(storage):
        ...     return storage._j_checkpoint_storage.getMinFileSizeThreshold()
    """

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from py4j.protocol import Py4JJavaError

        try:
            return fn(*args, **kwargs)
        except Py4JJavaError as e:
            raise convert_jvm_exception(e) from None
        except PySparkException as e:
            if isinstance(e, CheckpointStorageException):
                raise
            converted = convert_jvm_exception(e)
            if converted is e:
                raise
            raise converted from None

    return wrapper  # type: ignore[return-value]


# Spark wraps what a JVM method called by reflection throws (a checkpoint file manager is
# created so): the error of ours is its cause.
_REFLECTION_WRAPPERS = ("java.lang.reflect.InvocationTargetException",
                        "java.lang.reflect.UndeclaredThrowableException")


def _own_error(java: Any) -> Any:
    """``java`` when it is an error of this package (itself, or behind a reflection wrapper),
    else None. Errors Spark wraps in its own (a failed task, a failed query) stay Spark's:
    their message already carries our words."""
    try:
        while str(java.getClass().getName()) in _REFLECTION_WRAPPERS and java.getCause() is not None:
            java = java.getCause()
        return java if _is_own(java) else None
    except Exception:
        return None


_REAL_TIME_MODE_CONFIGURATION = "STREAMING_REAL_TIME_MODE.SQL_CONFIGURATION_NOT_SUPPORTED"


def _real_time_mode_refusal(java: Any) -> Optional[StateBackendNotSupportedException]:
    """
    Spark 4.3 refuses a Real-Time Mode query at ``start()`` while the session names a
    provider other than its RocksDB one, and its words ask to "update or remove" a setting
    that this package's helpers set: with the hash-map backend in effect, say which backend
    to pick instead, keeping Spark's words after ours. None for any other error.
    """
    try:
        message = str(java.getMessage() or "")
        if _REAL_TIME_MODE_CONFIGURATION not in message or jvm_names.PROVIDER_CLASS_CONF not in message:
            return None
        from pyspark.sql import SparkSession

        session = SparkSession.getActiveSession()
        provider = session.conf.get(jvm_names.PROVIDER_CLASS_CONF, None) if session is not None else None
        if provider != jvm_names.HEAP_PROVIDER_CLASS:
            return None
        java_class = str(java.getClass().getName())
    except Exception:
        return None
    return StateBackendNotSupportedException(
        "Real-Time Mode needs the RocksDB state backend: Spark runs Real-Time Mode queries only on "
        "%s and refuses every one of them, stateless ones too, while %s names another provider, "
        "here the hash-map backend (%s). Set the RocksDB backend before start(), for the session "
        "or just for this query (Spark reads the provider when a query starts; the checkpoint "
        "storage stays as it is): get_checkpoint_config(spark).set_state_backend("
        "EmbeddedRocksDBStateBackend()), or configure_spark_with_checkpoint_storage(builder, "
        "state_backend=EmbeddedRocksDBStateBackend()), or %s=%s. Spark said: %s"
        % (jvm_names.ROCKSDB_PROVIDER_CLASS, jvm_names.PROVIDER_CLASS_CONF, jvm_names.HEAP_PROVIDER_CLASS,
           jvm_names.PROVIDER_CLASS_CONF, jvm_names.ROCKSDB_PROVIDER_CLASS, message),
        java_class=java_class)


def _of_spark_context(java: Any) -> bool:
    """Whether the JVM object ``java`` lives in the JVM of PySpark's SparkContext (the one
    PySpark's own error conversion asks)."""
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    return gateway is not None and getattr(java, "_gateway_client", None) is gateway._gateway_client


def install_error_conversion() -> None:
    """
    Makes PySpark raise this package's errors for the JVM errors of this package, in this
    Python process: PySpark's own conversion of JVM errors
    (``pyspark.errors.exceptions.captured.convert_exception``, on every supported line) is
    wrapped so that

    * an error of this package thrown by a JVM method PySpark calls (itself, or behind a
      reflection wrapper) becomes the matching :class:`CheckpointStorageException` (the
      table of ``convert_jvm_exception``): a wrong setting refused when a query starts
      (``writeStream.start()``) is an :class:`IllegalCheckpointStorageArgumentException`,
      not PySpark's generic ``IllegalArgumentException``;
    * Spark 4.3's refusal of a Real-Time Mode query while the session names the hash-map
      backend becomes a :class:`StateBackendNotSupportedException` saying which backend to
      set;
    * every other JVM error is converted by PySpark as before (a failed query stays a
      ``StreamingQueryException``: :func:`convert_jvm_exception` finds our error among its
      causes).

    Importing the package changes nothing in PySpark: ``configure_spark_with_checkpoint_storage``
    and ``get_checkpoint_config`` call this, and so do the functions that start a session of
    their own. Call it yourself when the session gets the plugin otherwise (``spark-submit
    --jars ...``, a notebook's preconfigured session). Idempotent: a second call, from any
    thread, changes nothing. A pyspark without the hook (a Spark Connect-only client) is left
    as it is.

    Example:
    ::

        >>> from spark_checkpoint_storage.errors import (
        ...     install_error_conversion, is_error_conversion_installed)
        >>> install_error_conversion()
        >>> is_error_conversion_installed()
        True
    """
    try:
        from pyspark.errors.exceptions import captured
    except ImportError:  # a pyspark without the module: its own conversion stays
        return
    with _INSTALL_LOCK:
        _wrap_convert_exception(captured)


def is_error_conversion_installed() -> bool:
    """
    Whether :func:`install_error_conversion` has wrapped PySpark's conversion of JVM errors in
    this Python process (False after a mere ``import spark_checkpoint_storage``).

    Example:
    ::

        >>> from pyspark.sql import SparkSession
        >>> from spark_checkpoint_storage import configure_spark_with_checkpoint_storage
        >>> from spark_checkpoint_storage.errors import is_error_conversion_installed
        >>> _ = configure_spark_with_checkpoint_storage(SparkSession.builder.master("local[1]"))
        >>> is_error_conversion_installed()
        True
    """
    try:
        from pyspark.errors.exceptions import captured
    except ImportError:
        return False
    return bool(getattr(getattr(captured, "convert_exception", None), _MARK, False))


# Set on the wrapper of PySpark's convert_exception: it is installed once.
_MARK = "_spark_checkpoint_storage"
_INSTALL_LOCK = threading.Lock()


def _wrap_convert_exception(captured: Any) -> None:
    """Replaces ``captured.convert_exception`` by our wrapper of it, unless it is ours."""
    original = getattr(captured, "convert_exception", None)
    if original is None or getattr(original, _MARK, False):
        return

    @functools.wraps(original)
    def convert_exception(e: Any) -> Any:
        if not _of_spark_context(e):
            # An error of the JVM get_gateway() launched beside a stopped SparkContext's:
            # PySpark's conversion would look its object id up in the context's JVM, where the
            # same id names another object. The raw Py4JJavaError goes on (PySpark re-raises
            # it for an UnknownException), and this package's wrappers convert it.
            return captured.UnknownException(desc=str(e), stackTrace="")
        own = _own_error(e)
        if own is not None:
            converted = _from_java(own)
            if converted is not None:
                return converted
        refusal = _real_time_mode_refusal(e)
        if refusal is not None:
            return refusal
        return original(e)

    setattr(convert_exception, _MARK, True)
    captured.convert_exception = convert_exception
