"""
Errors of spark-checkpoint-storage, in the style of ``pyspark.errors``: every exception is a
:class:`pyspark.errors.PySparkException` with a condition (``getCondition()``), message
parameters and the plain message (``getMessage()``). Errors raised in the JVM reach Python
as one of these, carrying the JVM's message and exception class, instead of a raw
``py4j.protocol.Py4JJavaError``.

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
from typing import Any, Callable, Dict, Optional, Type, TypeVar

from pyspark.errors import PySparkException

__all__ = [
    "CheckpointStorageException",
    "IllegalCheckpointStorageArgumentException",
    "StateSizeLimitException",
    "CorruptCheckpointException",
    "CheckpointNotFoundException",
    "CheckpointStateException",
    "SavepointException",
    "MigrationException",
    "StaticConfigurationException",
    "ClassicSessionRequiredException",
    "convert_jvm_exception",
    "jvm_errors",
]


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
        super().__init__(message=message, errorClass=self.CONDITION,
                         messageParameters=parameters)
        self.java_class = java_class
        self.java_stack_trace = java_stack_trace

    def getSqlState(self) -> Optional[str]:
        """None: these errors carry no SQL state."""
        return None

    def __str__(self) -> str:
        return self.getMessage()


class IllegalCheckpointStorageArgumentException(CheckpointStorageException, ValueError):
    """A value or setting is out of range or of the wrong kind (JVM ``IllegalArgumentException``)."""

    CONDITION = "CHECKPOINT_STORAGE.INVALID_ARGUMENT"


class StateSizeLimitException(CheckpointStorageException, IOError):
    """A state file exceeds what the checkpoint storage accepts."""

    CONDITION = "CHECKPOINT_STORAGE.STATE_SIZE_LIMIT"


class CorruptCheckpointException(CheckpointStorageException, IOError):
    """A pack or state file is corrupt, truncated, or belongs to another checkpoint."""

    CONDITION = "CHECKPOINT_STORAGE.CORRUPT_CHECKPOINT"


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


# JVM exception classes, most specific first, and the Python error each becomes.
_JAVA_TO_PYTHON = [
    ("io.sparkcheckpointstorage.savepoint.SavepointException", SavepointException),
    ("io.sparkcheckpointstorage.migration.MigrationException", MigrationException),
    ("io.sparkcheckpointstorage.storage.StateSizeLimitException", StateSizeLimitException),
    # Packs and state files alike (their JVM classes share this parent).
    ("io.sparkcheckpointstorage.storage.CorruptCheckpointException", CorruptCheckpointException),
    ("java.io.FileNotFoundException", CheckpointNotFoundException),
    ("java.lang.IllegalArgumentException", IllegalCheckpointStorageArgumentException),
    ("java.lang.IllegalStateException", CheckpointStateException),
]


# Our own JVM errors: found anywhere in a chain of causes, they say what went wrong better
# than the generic Spark errors wrapped around them (a failed task, a failed query).
_OWN_PACKAGE = "io.sparkcheckpointstorage."


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
    try:
        java = _own_cause(java)
        java_class = str(java.getClass().getName())
        message = java.getMessage()
        message = str(message) if message is not None else java_class
        stack = str(java.toString()) + "".join(
            "\n\tat %s" % str(e) for e in list(java.getStackTrace())[:20])
    except Exception:  # the JVM is gone: keep what py4j printed
        return error
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
