"""What several test modules and their driver processes share, kept in one place:

- :mod:`support.stateful_operators`: the catalogue of stateful operators and the driver
  process that runs them (tests/test_stateful_operators.py, test_migration.py,
  test_rescale.py, test_real_filesystems.py);
- :mod:`support.realfs`: the real file system servers (HDFS, S3) and the Kafka broker, one
  each per pytest run, and the driver processes of the Kafka modules;
- :mod:`support.remote_storage_checks`: the driver of the remote storage checks
  (tests/test_real_filesystems.py);
- :mod:`support.counting`: the counting query of the migration and rescale tests, run in the
  test's own session, and a command killed while it writes;
- :mod:`support.executors`: the executor JVMs of a ``local-cluster`` driver.

Test modules import it as ``support`` (pytest puts tests/ on the import path); a driver
process puts tests/ on its path first. Python workers get it from
:func:`add_to_python_workers`.
"""
import os
import tempfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))


def add_to_python_workers(spark_context):
    """Ships this package to the Python workers of ``spark_context``: they unpickle a pandas
    function or a stateful processor by reference to the module that defines it
    (``support.stateful_operators``), which they must import under the same name."""
    folder = tempfile.mkdtemp(prefix="test-support-")
    path = os.path.join(folder, "support.zip")
    with zipfile.ZipFile(path, "w") as z:
        for name in sorted(os.listdir(HERE)):
            if name.endswith(".py"):
                z.write(os.path.join(HERE, name), "support/" + name)
    spark_context.addPyFile(path)
