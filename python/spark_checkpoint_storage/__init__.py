"""
spark-checkpoint-storage: Flink's checkpoint storages (heap-to-driver and file system) for
Spark Structured Streaming state, as a Spark plugin reached from Python through py4j, and
Flink's state backends (heap and RocksDB) as a choice of state store provider.

Importing the package changes nothing in PySpark. The session helpers
(:func:`~spark_checkpoint_storage.session.configure_spark_with_checkpoint_storage`,
:func:`~spark_checkpoint_storage.checkpoint_config.get_checkpoint_config`) install this
package's conversion of JVM errors; :func:`~spark_checkpoint_storage.errors.install_error_conversion`
installs it for a session built otherwise.
"""
from spark_checkpoint_storage._version import __version__
from spark_checkpoint_storage.bundled_jar import (
    JarNotOnClasspathError,
    JarVersionMismatchError,
    bundled_jar_path,
)
from spark_checkpoint_storage.checkpoint_config import (
    CheckpointConfig,
    ExternalizedCheckpointCleanup,
    get_checkpoint_config,
)
from spark_checkpoint_storage.checkpoint_storage import (
    CheckpointStorage,
    CustomCheckpointStorage,
    DriverCheckpointStorage,
    FileSystemCheckpointStorage,
)
from spark_checkpoint_storage.errors import install_error_conversion
from spark_checkpoint_storage.java_gateway import get_gateway
from spark_checkpoint_storage.session import configure_spark_with_checkpoint_storage
from spark_checkpoint_storage.state_backend import (
    CustomStateBackend,
    EmbeddedRocksDBStateBackend,
    HashMapStateBackend,
    StateBackend,
)

__all__ = [
    "__version__",
    "bundled_jar_path",
    "CheckpointConfig",
    "CheckpointStorage",
    "configure_spark_with_checkpoint_storage",
    "CustomCheckpointStorage",
    "CustomStateBackend",
    "DriverCheckpointStorage",
    "EmbeddedRocksDBStateBackend",
    "ExternalizedCheckpointCleanup",
    "FileSystemCheckpointStorage",
    "get_checkpoint_config",
    "get_gateway",
    "HashMapStateBackend",
    "install_error_conversion",
    "JarNotOnClasspathError",
    "JarVersionMismatchError",
    "StateBackend",
]
