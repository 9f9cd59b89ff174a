"""Delta Lake's streaming sink meets a failed pack write: Delta's sink skips a batch id its log
already holds (its commits are idempotent by the query's id and batch id), so a batch whose
sink committed is never run again, its stateful tasks with it. The pack holding a batch's state
is written when the batch's stateful stage ends, before the sink runs: a pack's ``create`` that
fails, or its ``close`` that acted and lost its answer, fails the batch before Delta commits it,
and the batch run again in a new application, after the first ended with the error, gives
exactly the batch computation's keys (the restart in the same application is
tests/test_storage_faults.py's, behind a foreachBatch function that skips as Delta does).
Both storages, with Spark's default provider on Spark's file manager as the anchor (a fault on
its own state file of that batch).

Delta 4.0.0 is the release for Spark 4.0: the module runs on that line (pyspark 4.0.5), its
jars from Maven Central (dev/realfs/pom-delta.xml, dev/realfs-jars delta), and skips elsewhere.
"""
import pyspark
import pytest

from support import realfs
from support.fault_queries import SPARK_DEFAULT
from test_storage_faults import PACK, assert_no_state_lost, run_faults_then_resume

pytestmark = pytest.mark.skipif(
    not pyspark.__version__.startswith("4.0."),
    reason="Delta Lake 4.0.0 runs on Spark 4.0 (this is %s); later Delta releases' jars are not "
           "on Maven Central as reached here" % pyspark.__version__)

#: the pack of the third batch fails to be created, or its close acts and loses its answer
PACK_FAULTS = [
    {"name": "pack-create-before", "sink": "delta", "checkpoints": ["new-app"],
     "rules": ["create before " + PACK]},
    {"name": "pack-close-after", "sink": "delta", "checkpoints": ["new-app"],
     "rules": ["close after " + PACK]},
]
#: Spark's default provider: the same batch's state file of partition 1 fails to be created
#: (the batch's version is its id plus one)
SPARK_DEFAULT_FAULTS = [
    {"name": "state-file-create-before", "sink": "delta", "checkpoints": ["new-app"],
     "rules": [r"create before {cp}/checkpoint/state/0/1/\.?3\.delta.*"]},
]
SCENARIOS = {"filesystem": PACK_FAULTS, "driver": PACK_FAULTS, SPARK_DEFAULT: SPARK_DEFAULT_FAULTS}


@pytest.fixture(scope="module")
def delta_runs(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("delta")
    delta = {"spark.jars": ",".join(realfs.jar_list("delta")),
             "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
             "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog"}
    return tmp_path, run_faults_then_resume(tmp_path, SCENARIOS, spark_conf=delta)


@pytest.mark.timeout(600)
@pytest.mark.parametrize("storage", sorted(SCENARIOS))
def test_delta_sink_loses_no_state_when_a_pack_write_fails(delta_runs, storage):
    tmp_path, runs = delta_runs
    assert_no_state_lost(tmp_path, runs, storage, SCENARIOS[storage])
