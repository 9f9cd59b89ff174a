"""Real-Time Mode (Spark 4.3, ``trigger(realTime=...)``) on the RocksDB state backend through
both checkpoint storages (FileSystemCheckpointStorage, DriverCheckpointStorage with a
checkpoint path), Kafka to Kafka, across a driver restart: a real Kafka broker
(tests/support/realfs.py's KafkaBroker) and Spark's Kafka connector of the running line
(dev/realfs/pom-kafka-spark<line>.xml), as in tests/test_kafka.py.

Per storage, three queries run concurrently in one driver per phase: a stateless one (every
input record, tagged), an aggregation (``groupBy(k).count()``, update mode) and a
deduplication (``dropDuplicates``) on a column whose values the second wave repeats in part. The first
driver reads one wave of input, waits until every query's output shows it, and stops them; the
second resumes over the same checkpoints, reads a second wave, waits the same way, and reads
the topics back with batch queries.

A Real-Time Mode batch runs for its whole duration, its records reaching Kafka as they come,
and commits at its end; stopping a query interrupts the open batch, which the next driver
replays. Output records may therefore repeat across the restart (Spark's Kafka sink is
at-least-once), so the test asserts what stays exact: the set of records the stateless query
wrote; per key the last count the aggregation wrote, equal to the batch count over the whole
input topic (the state carried across the restart); and the deduplication's records, the
first input record of each value, none of the second wave for a value the first one had.
"""
import json
import os
from collections import defaultdict
from typing import Dict, List

import pytest

from conftest import assert_ok
from support.realfs import kafka_connector_missing, run_kafka_driver, spark_line

pytestmark = [
    pytest.mark.skipif(tuple(int(p) for p in spark_line().split(".")) < (4, 3),
                       reason="Real-Time Mode (trigger(realTime=...)) is Spark 4.3's"),
    pytest.mark.skipif(kafka_connector_missing() is not None,
                       reason=str(kafka_connector_missing())),
]

STORAGES = ("filesystem", "driver")

DRIVER = r"""
import json, os, sys, time
from collections import defaultdict
from pyspark.sql import functions as F
from spark_checkpoint_storage import EmbeddedRocksDBStateBackend, get_checkpoint_config, jvm_names

spec = json.loads(%r)
root, topics, bootstrap = spec["root"], spec["topics"], spec["bootstrap"]

# A Real-Time Mode stage group needs a slot per task of all its stages at once (source
# partitions plus shuffle partitions): the six queries (14 tasks) and the read-backs polling
# the output topic get slots to spare. Spark's admission check before each group counted 0
# of 32 slots free with four such queries in one driver and failed the query, so it is off.
sys.path.insert(0, spec["tests"])
from support.realfs import kafka_driver_session, read_topic
spark = kafka_driver_session(spec, "local[20]", "768m",
                             {"spark.scheduler.pipelinedGroup.slotCheck.enabled": "false"})
config = get_checkpoint_config(spark)
config.set_state_backend(EmbeddedRocksDBStateBackend())


def start(kind, storage):
    name = "%%s-%%s" %% (kind, storage)
    folder = os.path.join(root, name)
    spark.conf.set(jvm_names.STORAGE, storage)
    spark.conf.set(jvm_names.STORAGE + ".checkpointPath", os.path.join(folder, "storage"))
    rows = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", topics["events"]).option("startingOffsets", "earliest").load()
            .select(F.col("key").cast("string").alias("k"), F.col("value").cast("string").alias("id")))
    if kind == "stateless":
        out = rows.select(F.concat_ws("|", F.lit(name), "id").alias("key"),
                          F.to_json(F.struct(F.lit(name).alias("variant"), "id")).alias("value"))
    elif kind == "deduplication":
        out = rows.withColumn("d", F.split("id", "-")[1]).dropDuplicates(["d"]).select(
            F.concat_ws("|", F.lit(name), "d").alias("key"),
            F.to_json(F.struct(F.lit(name).alias("variant"), "d", "id")).alias("value"))
    else:
        out = rows.groupBy("k").count().select(
            F.concat_ws("|", F.lit(name), "k").alias("key"),
            F.to_json(F.struct(F.lit(name).alias("variant"), "k", F.col("count").alias("n"))).alias("value"))
    query = (out.writeStream.format("kafka").outputMode("update")
             .option("kafka.bootstrap.servers", bootstrap).option("topic", topics["out"])
             .option("checkpointLocation", os.path.join(folder, "checkpoint"))
             .queryName(name).trigger(realTime="5 seconds").start())
    return name, query


def topic(name):
    return read_topic(spark, bootstrap, topics[name])


def caught_up(expected):
    # Per variant, the ids the stateless query wrote and each key's last count (a key's
    # records are in one partition, so partition and offset order them).
    ids, last, distinct = defaultdict(set), defaultdict(dict), defaultdict(set)
    for _, _, _, value in topic("out").orderBy("partition", "offset").collect():
        row = json.loads(value)
        if "d" in row:
            distinct[row["variant"]].add(row["d"])
        elif "id" in row:
            ids[row["variant"]].add(row["id"])
        else:
            last[row["variant"]][row["k"]] = row["n"]
    return all(ids["stateless-" + s] == expected["ids"] and last["aggregation-" + s] == expected["counts"]
               and distinct["deduplication-" + s] == expected["distinct"] for s in spec["storages"])


queries = [start(kind, storage) for storage in spec["storages"]
           for kind in ("stateless", "aggregation", "deduplication")]
(spark.createDataFrame(spec["wave"], "key string, value string")
 .write.format("kafka").option("kafka.bootstrap.servers", bootstrap)
 .option("topic", topics["events"]).save())
expected = {"ids": set(spec["expected"]["ids"]), "counts": spec["expected"]["counts"],
            "distinct": set(spec["expected"]["distinct"])}
deadline = time.time() + 600
while not caught_up(expected):
    for _, query in queries:
        if query.exception() is not None:
            raise query.exception()
    assert time.time() < deadline, [q.lastProgress for _, q in queries]
    time.sleep(2)
for _, query in queries:
    query.stop()

if spec.get("read_back"):
    with open(os.path.join(root, "read-back.json"), "w") as f:
        events = topic("events")
        json.dump({
            "events": [list(r) for r in events.orderBy("partition", "offset").collect()],
            "out": [list(r) for r in topic("out").orderBy("partition", "offset").collect()],
            "counts": {r["key"]: r["count"] for r in events.groupBy("key").count().collect()},
        }, f)
print("PHASE DONE")
spark.stop()
"""


def wave(number: int) -> List[List[str]]:
    """150 input records over 8 keys, unevenly (key k<j> gets about j+1 shares), each value a
    distinct id ``w<wave>-<d>``, d from 50 * wave on: the second wave repeats 100 of the first
    one's d and brings 50 new ones."""
    weights = [j + 1 for j in range(8)]
    keys = [("k%d" % j) for j, w in enumerate(weights) for _ in range(w)]
    return [[keys[(number * 31 + i * 7) % len(keys)], "w%d-%d" % (number, 50 * number + i)] for i in range(150)]


def expected_after(waves: List[List[List[str]]]) -> Dict:
    counts: Dict[str, int] = defaultdict(int)
    for records in waves:
        for key, _ in records:
            counts[key] += 1
    return {"ids": sorted(v for records in waves for _, v in records), "counts": dict(counts),
            "distinct": sorted({v.split("-")[1] for records in waves for _, v in records})}


def checkpoint(root: str, name: str) -> str:
    return os.path.join(root, name, "checkpoint")


@pytest.fixture(scope="module")
def restarted(kafka_broker, connector_jars, tmp_path_factory):
    """Two drivers over the same checkpoints, one wave of input each; the second reads the
    topics back. Returns the checkpoints' folder and what the second driver read."""
    root = str(tmp_path_factory.mktemp("rtm"))
    topics = {"events": "rtm-events", "out": "rtm-out"}
    kafka_broker.create_topics({topics["events"]: 1, topics["out"]: 2})
    waves = [wave(0), wave(1)]
    for phase in (1, 2):
        spec = {"root": root, "bootstrap": kafka_broker.bootstrap, "topics": topics,
                "jars": connector_jars, "storages": STORAGES, "wave": waves[phase - 1],
                "expected": expected_after(waves[:phase]), "read_back": phase == 2}
        folder = tmp_path_factory.mktemp("rtm-phase%d" % phase)
        result = run_kafka_driver(DRIVER, folder, spec)
        assert "PHASE DONE" in assert_ok(result)
    with open(os.path.join(root, "read-back.json")) as f:
        return root, json.load(f)


def test_stateless_query_writes_every_input_record(restarted):
    """On either storage, the stateless query's output holds every input id of both drivers
    and nothing else."""
    _, data = restarted
    inputs = sorted(value for _, _, _, value in data["events"])
    assert len(inputs) == 300 == len(set(inputs))
    written: Dict[str, set] = defaultdict(set)
    for _, _, _, value in data["out"]:
        row = json.loads(value)
        if "id" in row and "d" not in row:
            written[row["variant"]].add(row["id"])
    assert sorted(written) == ["stateless-%s" % s for s in sorted(STORAGES)]
    for variant, ids in written.items():
        assert sorted(ids) == inputs, variant


def written_by_variant(data: Dict, key: str, field: str) -> Dict[str, Dict[str, list]]:
    """The output topic's records with a field ``key``: variant -> that field's value ->
    the records' ``field`` values, in the topic's order."""
    written: Dict[str, Dict[str, list]] = defaultdict(lambda: defaultdict(list))
    for _, _, _, value in data["out"]:
        row = json.loads(value)
        if key in row:
            written[row["variant"]][row[key]].append(row[field])
    return written


def test_aggregation_counts_carry_across_the_restart(restarted):
    """On either storage, each key's last count in the output equals the batch count over the
    whole input topic, both waves: the second driver resumed from the first one's state (a
    lost state would count the second wave alone). Every count written lies in 1..that."""
    _, data = restarted
    assert len(data["counts"]) == 8 and sum(data["counts"].values()) == 300
    written = written_by_variant(data, "k", "n")
    assert sorted(written) == ["aggregation-%s" % s for s in sorted(STORAGES)]
    for variant, per_key in written.items():
        assert {k: counts[-1] for k, counts in per_key.items()} == data["counts"], variant
        for key, counts in per_key.items():
            assert all(1 <= n <= data["counts"][key] for n in counts), (variant, key, counts)


@pytest.mark.parametrize("storage", STORAGES)
def test_checkpoints_record_rocksdb_format_v2_and_the_storage(restarted, storage):
    """Each query ran on Spark's RocksDB provider (the offset log's recorded provider); the
    aggregation and the deduplication through the storage of their variant (the marker the
    storage writes into the checkpoint of a query with state), with state checkpoint format
    version 2, which Spark sets for Real-Time Mode (the commit log is v2, carrying the state
    stores' checkpoint ids; the offset log does not record the format), and their state
    changelogs packed into the checkpoint's state packs."""
    root, _ = restarted
    kind = "DriverCheckpointStorage" if storage == "driver" else "FileSystemCheckpointStorage"
    rocksdb = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
    for query in ("stateless", "aggregation", "deduplication"):
        folder = checkpoint(root, "%s-%s" % (query, storage))
        with open(os.path.join(folder, "offsets", "0")) as f:
            assert '"spark.sql.streaming.stateStore.providerClass":"%s"' % rocksdb in f.read()
    for query in ("aggregation", "deduplication"):
        folder = checkpoint(root, "%s-%s" % (query, storage))
        with open(os.path.join(folder, "checkpoint-storage")) as f:
            assert "\nstorage=%s (" % kind in f.read(), folder
        commits = sorted(int(n) for n in os.listdir(os.path.join(folder, "commits")) if n.isdigit())
        assert len(commits) >= 2, (folder, commits)
        for batch in commits:
            with open(os.path.join(folder, "commits", str(batch))) as f:
                version, body = f.read().splitlines()[:2]
            assert version == "v2", (folder, batch, version)
            ids = json.loads(body)["stateUniqueIds"]["0"]
            assert len(ids) == 2 and all(len(i) == 1 for i in ids), (folder, batch, ids)
        packs = os.listdir(os.path.join(folder, "state-packs"))
        assert packs and all(p.endswith(".pack") for p in packs), (folder, packs)
        changelogs = [f for _, _, files in os.walk(os.path.join(folder, "state"))
                      for f in files if f.endswith(".changelog")]
        assert not changelogs, (folder, changelogs)


def test_deduplication_keeps_each_value_first_record_across_the_restart(restarted):
    """On either storage, the deduplication wrote every distinct value of d (200), each with
    the first input record carrying it: for the 100 values both waves carry, the first wave's
    record, though the second driver read the second wave (a lost state would let it through)."""
    _, data = restarted
    first: Dict[str, str] = {}
    for _, _, _, value in data["events"]:
        first.setdefault(value.split("-")[1], value)
    assert len(first) == 200 and sum(v.startswith("w0-") for v in first.values()) == 150
    written = written_by_variant(data, "d", "id")
    assert sorted(written) == ["deduplication-%s" % s for s in sorted(STORAGES)]
    for variant, per_value in written.items():
        assert {d: sorted(set(ids)) for d, ids in per_value.items()} == \
            {d: [v] for d, v in first.items()}, variant
