"""The state store set-ups a benchmark compares: Spark's built-ins and ours."""
from typing import Dict

HDFS = "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"
ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
HEAP = "io.sparkcheckpointstorage.provider.HeapStateStoreProvider"
SPARK_FILE_MANAGER = ("org.apache.spark.sql.execution.streaming.checkpointing."
                      "FileContextBasedCheckpointFileManager")
OUR_FILE_MANAGER = "io.sparkcheckpointstorage.filemanager.StorageCheckpointFileManager"
CHANGELOG = "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"
STORAGE = "spark.sql.streaming.checkpointStorage"

#: name -> (description, SQL confs); "built-in" variants are what ours is compared against.
VARIANTS: Dict[str, Dict] = {
    "hdfs": {"label": "HDFSBacked (Spark default)", "builtin": True,
             "conf": {"spark.sql.streaming.stateStore.providerClass": HDFS,
                      "spark.sql.streaming.checkpointFileManagerClass": SPARK_FILE_MANAGER}},
    "rocksdb": {"label": "RocksDB", "builtin": True,
                "conf": {"spark.sql.streaming.stateStore.providerClass": ROCKSDB, CHANGELOG: "false",
                         "spark.sql.streaming.checkpointFileManagerClass": SPARK_FILE_MANAGER}},
    "rocksdb-changelog": {"label": "RocksDB + changelog", "builtin": True,
                          "conf": {"spark.sql.streaming.stateStore.providerClass": ROCKSDB,
                                   CHANGELOG: "true",
                                   "spark.sql.streaming.checkpointFileManagerClass": SPARK_FILE_MANAGER}},
    # Our provider alone, writing through Spark's own file manager (issue: provider).
    "heap": {"label": "Heap provider", "builtin": False,
             "conf": {"spark.sql.streaming.stateStore.providerClass": HEAP,
                      "spark.sql.streaming.checkpointFileManagerClass": SPARK_FILE_MANAGER}},
    # Our provider with our file manager and each checkpoint storage.
    "heap-fs": {"label": "Heap + FileSystemCheckpointStorage", "builtin": False,
                "conf": {"spark.sql.streaming.stateStore.providerClass": HEAP,
                         "spark.sql.streaming.checkpointFileManagerClass": OUR_FILE_MANAGER,
                         STORAGE: "filesystem"}},
    "heap-driver": {"label": "Heap + DriverCheckpointStorage (with path)", "builtin": False,
                    "conf": {"spark.sql.streaming.stateStore.providerClass": HEAP,
                             "spark.sql.streaming.checkpointFileManagerClass": OUR_FILE_MANAGER,
                             STORAGE: "driver"}},
}
