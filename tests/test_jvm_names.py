"""Every JVM name the Python package uses (spark_checkpoint_storage.jvm_names) exists in the jar
and in the running Spark: classes load, setting keys equal the JVM's, the static settings and
the migration targets are the JVM's own lists."""
import json

import pytest

from spark_checkpoint_storage import jvm_names

CLASSES = sorted(name for name in dir(jvm_names) if name.endswith("_CLASS"))


@pytest.fixture(scope="module")
def jvm(spark):
    return spark.sparkContext._jvm


def _load(jvm, class_name):
    loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
    return jvm.java.lang.Class.forName(class_name, False, loader)


@pytest.mark.parametrize("constant", CLASSES)
def test_every_class_name_loads(jvm, constant):
    class_name = getattr(jvm_names, constant)
    assert _load(jvm, class_name).getName() == class_name


def test_spark_file_manager_of_the_running_line_loads(jvm):
    class_name = jvm_names.spark_file_manager_class()
    assert _load(jvm, class_name).getName() == class_name
    spark_version = jvm.org.apache.spark.package.SPARK_VERSION()
    assert jvm_names.spark_file_manager_class(spark_version) == class_name


def test_setting_keys_are_the_jvm_ones(jvm):
    options = jvm_names.jvm_class(jvm, jvm_names.JVM_PACKAGE + ".storage.CheckpointStorageOptions")
    ours = {
        "STORAGE": "Storage", "CHECKPOINT_PATH": "CheckpointPath", "SAVEPOINT_PATH": "SavepointPath",
        "MAX_STATE_SIZE": "MaxStateSize", "FILE_STATE_SIZE_THRESHOLD": "FileStateSizeThreshold",
        "WRITE_BUFFER_SIZE": "WriteBufferSize", "EXTERNALIZED_CLEANUP": "ExternalizedCleanup",
        "DRIVER_MAX_TOTAL_INLINE_SIZE": "DriverMaxTotalInlineSize",
        "EXECUTOR_MAX_REQUEST_BATCH_SIZE": "ExecutorMaxRequestBatchSize", "APP_PREFIX": "AppPrefix",
        "ASYNC_STATE_WRITES": "AsyncStateWrites",
        "PREFIX": "Prefix",
    }
    for python_name, jvm_name in ours.items():
        assert getattr(jvm_names, python_name) == getattr(options, jvm_name)(), python_name
    # Spark's keys the JVM spells in one place (layout.SparkSettingKeys), and Spark itself.
    spark_keys = jvm_names.jvm_class(jvm, jvm_names.JVM_PACKAGE + ".layout.SparkSettingKeys")
    assert jvm_names.PROVIDER_CLASS_CONF == spark_keys.ProviderClass()
    assert jvm_names.FILE_MANAGER_CLASS_CONF == spark_keys.FileManagerClass()
    assert jvm_names.SPARK_CHECKPOINT_LOCATION == spark_keys.CheckpointLocation()
    sql = jvm.org.apache.spark.sql.internal.SQLConf
    assert jvm_names.PROVIDER_CLASS_CONF == sql.STATE_STORE_PROVIDER_CLASS().key()
    assert jvm_names.FILE_MANAGER_CLASS_CONF == sql.STREAMING_CHECKPOINT_FILE_MANAGER_CLASS().parent().key()
    assert jvm_names.MIN_BATCHES_TO_RETAIN == sql.MIN_BATCHES_TO_RETAIN().key()
    assert jvm_names.SPARK_CHECKPOINT_LOCATION == sql.CHECKPOINT_LOCATION().key()
    static_sql = jvm.org.apache.spark.sql.internal.StaticSQLConf
    assert jvm_names.QUERY_LISTENERS_CONF == static_sql.STREAMING_QUERY_LISTENERS().key()


def test_static_settings_are_the_jvm_ones(jvm):
    settings = jvm_names.jvm_class(jvm, jvm_names.JVM_PACKAGE + ".storage.CheckpointStorageSettings").all()
    static = {settings.apply(i).key() for i in range(settings.size()) if settings.apply(i).static()}
    known = {settings.apply(i).key() for i in range(settings.size())}
    assert {k for k in jvm_names.STATIC_CONFS if k.startswith(jvm_names.PREFIX)} == static
    assert {getattr(jvm_names, n) for n in dir(jvm_names)
            if isinstance(getattr(jvm_names, n), str) and getattr(jvm_names, n).startswith(jvm_names.PREFIX)
            and not getattr(jvm_names, n).endswith(".")} == known


def test_migration_targets_are_the_jvm_ones(jvm):
    targets = jvm_names.jvm_class(jvm, jvm_names.JVM_PACKAGE + ".migration.TargetProvider").ShortNames()
    jvm_targets = {k: targets.apply(k) for k in ("heap", "hdfs", "rocksdb")}
    assert jvm_targets == jvm_names.MIGRATION_TARGETS
    assert targets.size() == len(jvm_names.MIGRATION_TARGETS)


def test_rocksdb_setting_keys_are_the_ones_spark_reads(jvm):
    """Each RocksDB key, set to a value other than Spark's default, is what Spark's RocksDBConf
    parses from a session's settings: a misspelt key would leave the default in place."""
    state = jvm.org.apache.spark.sql.execution.streaming.state
    assert jvm_names.ROCKSDB_CONF_PREFIX == state.RocksDBConf.ROCKSDB_SQL_CONF_NAME_PREFIX() + "."
    defaults = state.RocksDBConf.apply()
    assert (defaults.enableChangelogCheckpointing(), defaults.boundedMemoryUsage(),
            defaults.compactOnCommit()) == (False, False, False)
    sql = jvm.org.apache.spark.sql.internal.SQLConf()
    values = {
        jvm_names.ROCKSDB_CHANGELOG_CHECKPOINTING_CONF: "true",
        jvm_names.ROCKSDB_BOUNDED_MEMORY_USAGE_CONF: "true",
        jvm_names.ROCKSDB_MAX_MEMORY_USAGE_MB_CONF: str(defaults.totalMemoryUsageMB() + 7),
        jvm_names.ROCKSDB_BLOCK_CACHE_SIZE_MB_CONF: str(defaults.blockCacheSizeMB() + 5),
        jvm_names.ROCKSDB_COMPACT_ON_COMMIT_CONF: "true",
    }
    for key, value in values.items():
        sql.setConfString(key, value)
    parsed = state.RocksDBConf.apply(state.StateStoreConf.apply(sql))
    assert parsed.enableChangelogCheckpointing() and parsed.boundedMemoryUsage() \
        and parsed.compactOnCommit()
    assert parsed.totalMemoryUsageMB() == defaults.totalMemoryUsageMB() + 7
    assert parsed.blockCacheSizeMB() == defaults.blockCacheSizeMB() + 5


def test_result_classes_have_the_fields_of_the_jvm_results(jvm):
    """Each result class of spark_checkpoint_storage.results has exactly the fields, in the
    order, of the case class of the same name that the jar's ResultCodec writes: a field added,
    renamed or removed on either side fails here, naming the type and both lists."""
    import json

    from spark_checkpoint_storage.results import RESULT_TYPES

    schema = json.loads(jvm_names.jvm_class(jvm, jvm_names.RESULT_CODEC_CLASS).schemaJson())
    python = {cls.__name__: cls.jvm_fields() for cls in RESULT_TYPES}
    assert sorted(python) == sorted(schema), "result types: Python %s, JVM %s" % (
        sorted(python), sorted(schema))
    for name, fields in schema.items():
        assert python[name] == fields, "%s: Python %s, JVM %s" % (name, python[name], fields)


def test_a_result_with_a_field_missing_or_unknown_is_refused_naming_it():
    from spark_checkpoint_storage.errors import ResultSchemaException
    from spark_checkpoint_storage.results import MigrationResult

    operators = [{"operatorId": 0, "operatorName": "stateStoreSave",
                  "stores": [{"store": "default", "rows": 3, "rowsPerPartition": [1, 2]}]}]
    data = {"source": "file:/cp", "batchId": 2, "sourceProvider": "a.P", "targetProvider": "b.P",
            "numPartitions": 2, "sourceNumPartitions": 4, "operators": operators, "rows": 3,
            "path": "file:/dst", "logFiles": 3, "logBytes": 30, "files": 9, "bytes": 900,
            "seconds": 2.5}
    result = MigrationResult.from_json(json.dumps(data))
    assert result.operators[0].stores[0].rows_per_partition == (1, 2)
    assert result.operators[0]["stores"][0]["rowsPerPartition"] == (1, 2)  # as when it was a dict
    assert result.to_dict() == data and result.canonical_savepoint is None
    restored = dict(data, canonicalSavepoint="file:/sp")
    assert MigrationResult.from_json(json.dumps(restored)).to_dict() == restored
    with pytest.raises(ResultSchemaException, match="unknown fields sourcePartitions and lacks rows$|"
                       "unknown fields sourcePartitions and lacks rows:"):
        MigrationResult.from_json(json.dumps(dict({k: v for k, v in data.items() if k != "rows"},
                                                  sourcePartitions=2)))
    nested = dict(data, operators=[dict(operators[0], stores=[{"store": "default", "rows": 3}])])
    with pytest.raises(ResultSchemaException, match=r"MigrationResult\.operators\[0\]\.stores\[0\] "
                       r"\(MigratedStore\) from the JVM lacks rowsPerPartition"):
        MigrationResult.from_json(json.dumps(nested))
