"""Kafka as source and sink of stateful queries, on both state backends (HashMapStateBackend,
EmbeddedRocksDBStateBackend) through both checkpoint storages (FileSystemCheckpointStorage,
DriverCheckpointStorage with a checkpoint path), across a driver restart: a real Kafka broker
(tests/support/realfs.py's KafkaBroker, session-scoped), Spark's Kafka connector of the running line
(dev/realfs/pom-kafka-spark<line>.xml, on the drivers' class path through ``spark.jars``).

Two queries, each in the four backend x storage variants, run concurrently in one driver per
phase (each phase a process of its own; the clean restart's and the killed driver's
scenarios, each on topics and checkpoints of its own, share their two drivers):

- an aggregation: Kafka -> ``groupBy(k)`` count and sum, update mode -> Kafka. Every output
  record carries its key's running count, so a record written twice shows as a repeated
  (key, count);
- a deduplication: Kafka -> ``dropDuplicates(id)`` -> Kafka, fed ids that repeat within a
  batch, across batches and across the restart.

The last driver reads both topics back with batch ``spark.read.format("kafka")`` and computes
the same results as batch queries over the input topics.

Spark's Kafka sink is at-least-once: a driver that dies after a batch's records reached Kafka
but before the batch's commit replays the batch, records included. So exactly-once is
asserted where Spark promises it, across a clean stop (``processAllAvailable``, then
``stop``) and a new driver; across a killed driver the test asserts at-least-once: nothing
lost, the state right, and repeats only of the batch the kill interrupted.
"""
import json
import os
from collections import defaultdict
from typing import Dict, List, Tuple

import pytest

from conftest import assert_ok
from support.realfs import kafka_connector_missing, run_kafka_driver

pytestmark = pytest.mark.skipif(kafka_connector_missing() is not None,
                                reason=str(kafka_connector_missing()))

#: (state backend, checkpoint storage) of every variant each driver runs
VARIANTS = [(backend, storage) for backend in ("hashmap", "rocksdb")
            for storage in ("filesystem", "driver")]

DRIVER = r"""
import json, os, signal, sys, time
from pyspark.sql import functions as F
from spark_checkpoint_storage import (
    EmbeddedRocksDBStateBackend, HashMapStateBackend, get_checkpoint_config, jvm_names)

spec = json.loads(%r)
bootstrap = spec["bootstrap"]

sys.path.insert(0, spec["tests"])
from support import executors
from support.realfs import kafka_driver_session, read_topic
spark = kafka_driver_session(spec, spec.get("master", "local[2]"), "512m")
config = get_checkpoint_config(spark)


def kafka_stream(topic):
    return (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", topic).option("startingOffsets", "earliest")
            # Small batches: a wave of input spans several micro-batches.
            .option("maxOffsetsPerTrigger", 25).load()
            .select(F.col("value").cast("string").alias("json")))


def batches(checkpoint, folder):
    return {int(n) for n in os.listdir(os.path.join(checkpoint, folder)) if n.isdigit()}


def source_offsets(checkpoint, batch):
    with open(os.path.join(checkpoint, "offsets", str(batch))) as f:
        return json.loads(f.read().splitlines()[2])


def executor_pids():
    # Executor id -> pid of this driver's executor JVMs (local-cluster: its children).
    return executors.executor_pids(executors.driver_pid(spark))


class Scenario:
    # The queries of one scenario (spec["scenarios"]): both kinds in every variant, on the
    # scenario's topics, their checkpoints under its root.

    def __init__(self, s):
        self.spec, self.name, self.root, self.topics = s, s["name"], s["root"], s["topics"]
        self.queries = [self.start(kind, backend, storage) for kind in ("aggregation", "deduplication")
                        for backend, storage in spec["variants"]]

    def aggregation(self, name):
        rows = kafka_stream(self.topics["events"]).select(F.from_json("json", "k string, v long").alias("e"))
        counts = rows.groupBy("e.k").agg(F.count("*").alias("n"), F.sum("e.v").alias("total"))
        return counts.select(
            F.concat_ws("|", F.lit(name), "k").alias("key"),
            F.to_json(F.struct(F.lit(name).alias("variant"), "k", "n", "total")).alias("value"))

    def deduplication(self, name):
        rows = kafka_stream(self.topics["ids"]).select(F.from_json("json", "id long, wave int").alias("e"))
        return rows.select("e.*").dropDuplicates(["id"]).select(
            F.concat_ws("|", F.lit(name), F.col("id").cast("string")).alias("key"),
            F.to_json(F.struct(F.lit(name).alias("variant"), "id")).alias("value"))

    def start(self, kind, backend, storage):
        name = "%%s-%%s" %% (backend, storage)
        folder = os.path.join(self.root, kind, name)
        config.set_state_backend(HashMapStateBackend() if backend == "hashmap"
                                 else EmbeddedRocksDBStateBackend())
        # The storage's settings, as spark-submit --conf would give them: every line reads them.
        spark.conf.set(jvm_names.STORAGE, storage)
        spark.conf.set(jvm_names.STORAGE + ".checkpointPath", os.path.join(folder, "storage"))
        df = self.aggregation(name) if kind == "aggregation" else self.deduplication(name)
        query = (df.writeStream.format("kafka").outputMode("update")
                 .option("kafka.bootstrap.servers", bootstrap)
                 .option("topic", self.topics[kind + "-out"])
                 .option("checkpointLocation", os.path.join(folder, "checkpoint"))
                 .queryName("%%s-%%s-%%s" %% (self.name, kind, name)).start())
        return query, os.path.join(folder, "checkpoint")

    def produce(self, wave):
        events = spark.createDataFrame([(k, v) for k, v in wave["events"]], "k string, v long")
        (events.select(F.col("k").alias("key"), F.to_json(F.struct("k", "v")).alias("value"))
         .write.format("kafka").option("kafka.bootstrap.servers", bootstrap)
         .option("topic", self.topics["events"]).save())
        ids = spark.createDataFrame([(i, wave["number"]) for i in wave["ids"]], "id long, wave int")
        (ids.select(F.col("id").cast("string").alias("key"), F.to_json(F.struct("id", "wave")).alias("value"))
         .write.format("kafka").option("kafka.bootstrap.servers", bootstrap)
         .option("topic", self.topics["ids"]).save())

    def process(self):
        for query, _ in self.queries:
            query.processAllAvailable()

    def interrupt(self, kill, spare):
        # More input arrives; `kill` runs once every query has planned a batch of it and one
        # at least has not committed its batch. A wave more arrives whenever all are between
        # batches. Returns the waves left and, per query, the first batch the kill may reach:
        # the one open at the check, else the next one (between the check and the kill a
        # batch may commit and the next one start).
        spare = list(spare)
        planned = {c: max(batches(c, "offsets")) for _, c in self.queries}
        self.produce(spare.pop(0))
        while True:
            for query, _ in self.queries:
                if query.exception() is not None:
                    raise query.exception()
            open_batches = {c: batches(c, "offsets") - batches(c, "commits") for _, c in self.queries}
            if all(max(batches(c, "offsets")) > planned[c] for c in planned):
                if any(open_batches.values()):
                    break
                planned = {c: max(batches(c, "offsets")) for _, c in self.queries}
                self.produce(spare.pop(0))
            time.sleep(0.05)
        first = {c: min(open_batches[c]) if open_batches[c] else max(batches(c, "offsets")) + 1
                 for _, c in self.queries}
        kill()
        return spare, first

    def kill_an_executor(self):
        # An executor JVM dies inside the open batches; Spark runs their tasks again on the
        # executors left and on the one the cluster starts in its place, in this driver.
        killed = {}

        def kill_executor():
            pids = executor_pids()
            executor = min(pids, key=int)
            os.kill(pids[executor], signal.SIGKILL)
            killed.update(executor=executor, pid=pids[executor], before=sorted(pids))

        rest, first = self.interrupt(kill_executor, self.spec["kill_executor"])
        # The kill may reach each query's batches from `first` to the one running when the
        # driver learns the executor is lost: a task sent to it until then fails too, and
        # runs again. Those spans go to interrupted.json.
        deadline = time.time() + 120
        while spark.sparkContext._jsc.sc().getExecutorIds().contains(killed["executor"]):
            assert time.time() < deadline, "the driver never learnt executor %%s was lost" %% killed["executor"]
            time.sleep(0.05)
        spans = {os.path.relpath(os.path.dirname(c), self.root): [first[c], max(batches(c, "offsets"))]
                 for _, c in self.queries if max(batches(c, "offsets")) >= first[c]}
        with open(os.path.join(self.root, "interrupted.json"), "w") as f:
            json.dump(spans, f)
        self.process()
        for wave in rest:
            self.produce(wave)
            self.process()
        killed["after"] = sorted(executor_pids())
        with open(os.path.join(self.root, "executor-killed.json"), "w") as f:
            json.dump(killed, f)

    def stop(self):
        # Each query ran on the backend (the provider Spark recorded in its offset log) and
        # the storage (the marker the storage writes into the checkpoint) of its variant.
        for query, checkpoint in self.queries:
            query.stop()
            with open(os.path.join(checkpoint, "offsets", "0")) as f:
                recorded = f.read()
            expected = (jvm_names.HEAP_PROVIDER_CLASS if "/hashmap-" in checkpoint
                        else jvm_names.ROCKSDB_PROVIDER_CLASS)
            assert expected in recorded, (checkpoint, recorded)
            with open(os.path.join(checkpoint, "checkpoint-storage")) as f:
                marker = f.read()
            kind = "DriverCheckpointStorage" if "-driver/" in checkpoint else "FileSystemCheckpointStorage"
            assert "\nstorage=%%s (" %% kind in marker, (checkpoint, marker)

    def read_back(self):
        def topic(name):
            return read_topic(spark, bootstrap, self.topics[name])
        records = {name: [tuple(r) for r in topic(name).orderBy("partition", "offset").collect()]
                   for name in ("events", "ids", "aggregation-out", "deduplication-out")}
        events = topic("events").select(F.from_json("value", "k string, v long").alias("e"))
        batch_aggregation = {r["k"]: [r["n"], r["total"]] for r in events.groupBy("e.k").agg(
            F.count("*").alias("n"), F.sum("e.v").alias("total")).collect()}
        ids = topic("ids").select(F.from_json("value", "id long, wave int").alias("e"))
        batch_ids = sorted(r["id"] for r in ids.select("e.id").distinct().collect())
        with open(os.path.join(self.root, "read-back.json"), "w") as f:
            json.dump({"records": records, "aggregation": batch_aggregation, "ids": batch_ids}, f)


scenarios = [Scenario(s) for s in spec["scenarios"]]
# Every scenario's waves, one wave of each at a time: all queries run side by side.
for i in range(max(len(s.spec["waves"]) for s in scenarios)):
    waved = [s for s in scenarios if i < len(s.spec["waves"])]
    for s in waved:
        s.produce(s.spec["waves"][i])
    for s in waved:
        s.process()
for s in scenarios:
    if s.spec.get("kill_executor"):
        s.kill_an_executor()
# The scenarios whose driver is not killed stop cleanly first: their checkpoints are whole
# before the kill of another's.
for s in scenarios:
    if not s.spec.get("kill"):
        s.stop()
        if s.spec.get("read_back"):
            s.read_back()
        print("SCENARIO DONE %%s" %% s.name, flush=True)
for s in scenarios:
    if s.spec.get("kill"):
        # The driver dies, JVM first; the next driver resumes by replaying the open batches
        # (the test reads them off the checkpoints once this process ended).
        jvm = executors.driver_pid(spark)
        s.interrupt(lambda: os.kill(jvm, signal.SIGKILL), s.spec["kill"])
        os._exit(0)
print("PHASE DONE")
spark.stop()
"""


def waves(first: int, count: int) -> List[Dict]:
    """``count`` waves of input from wave number ``first`` on: 40 events over 8 keys, and 30
    ids of which about a third were already sent (in this wave or an earlier one)."""
    out = []
    for number in range(first, first + count):
        events = [("k%d" % ((number * 7 + i) % 8), (number * 40 + i) % 13 + 1) for i in range(40)]
        fresh = list(range(number * 20, number * 20 + 20))
        repeated = [fresh[i] for i in range(0, 20, 4)] + [max(0, number * 20 - 1 - 3 * i) for i in range(5)]
        out.append({"number": number, "events": events, "ids": fresh + repeated})
    return out


def run_driver(folder, spec: Dict):
    """Runs one driver process with ``spec``; its output stays in ``folder``."""
    return run_kafka_driver(DRIVER, folder, spec)


def open_batches(root: str) -> Dict[str, List[int]]:
    """Query folder (relative to ``root``) -> [batch, batch] of the batch its checkpoint
    planned and did not commit (Spark plans a batch only once the one before committed), for
    each query of ``root`` with one: the batches a killed driver interrupted."""
    spans = {}
    for kind in ("aggregation", "deduplication"):
        for variant in os.listdir(os.path.join(root, kind)):
            checkpoint = os.path.join(root, kind, variant, "checkpoint")
            entries = {folder: {int(n) for n in os.listdir(os.path.join(checkpoint, folder)) if n.isdigit()}
                       for folder in ("offsets", "commits")}
            uncommitted = entries["offsets"] - entries["commits"]
            assert len(uncommitted) <= 1, (checkpoint, entries)
            for batch in uncommitted:
                spans["%s/%s" % (kind, variant)] = [batch, batch]
    return spans


def interrupted_batches(root: str, spans: Dict[str, List[int]]) -> Dict[str, Dict]:
    """Query folder -> what the batches of its span [first, last] read, from the offset log:
    {"first", "last", "start": the source offsets the first one started at, "ends": where
    each one ended, "end": where the last one ended}."""
    def offsets(folder: str, batch: int) -> Dict:
        with open(os.path.join(root, folder, "checkpoint", "offsets", str(batch))) as f:
            return json.loads(f.read().splitlines()[2])
    return {folder: {"first": first, "last": last, "start": offsets(folder, first - 1),
                     "ends": [offsets(folder, b) for b in range(first, last + 1)],
                     "end": offsets(folder, last)}
            for folder, (first, last) in spans.items()}


def read_back(root: str) -> Dict:
    with open(os.path.join(root, "read-back.json")) as f:
        return json.load(f)


def variant_names() -> List[str]:
    return sorted("%s-%s" % v for v in VARIANTS)


def aggregation_outputs(data: Dict) -> Dict[str, Dict[str, List[Tuple[int, int]]]]:
    """Per variant, per key: the (count, sum) records the query wrote, in the order Kafka holds
    them (all of a key's records are in one partition: the partitioner hashes the key)."""
    out: Dict[str, Dict[str, List[Tuple[int, int]]]] = defaultdict(lambda: defaultdict(list))
    for _, _, _, value in data["records"]["aggregation-out"]:
        row = json.loads(value)
        out[row["variant"]][row["k"]].append((row["n"], row["total"]))
    return out


def prefix_sums(data: Dict) -> Dict[str, List[int]]:
    """Per key, the sum of its first n input events for every n, in the order the source reads
    them (a key's events are in one partition of the input topic)."""
    sums: Dict[str, List[int]] = defaultdict(lambda: [0])
    for _, _, _, value in data["records"]["events"]:
        row = json.loads(value)
        sums[row["k"]].append(sums[row["k"]][-1] + row["v"])
    return sums


def dedup_outputs(data: Dict) -> Dict[str, List[int]]:
    out: Dict[str, List[int]] = defaultdict(list)
    for _, _, _, value in data["records"]["deduplication-out"]:
        row = json.loads(value)
        out[row["variant"]].append(row["id"])
    return out


def topics_for(broker, prefix: str) -> Dict[str, str]:
    topics = {"events": prefix + "-events", "ids": prefix + "-ids",
              "aggregation-out": prefix + "-aggregation-out",
              "deduplication-out": prefix + "-deduplication-out"}
    broker.create_topics({topics["events"]: 3, topics["ids"]: 2, topics["aggregation-out"]: 2,
                          topics["deduplication-out"]: 2})
    return topics


@pytest.fixture(scope="module")
def restarts(kafka_broker, connector_jars, tmp_path_factory):
    """Two drivers over the same checkpoints, each running two scenarios' queries side by
    side (each scenario its own topics and checkpoints):

    - ``clean``: the first driver runs two waves of input, then stops its queries cleanly
      (every batch committed); the second resumes them, runs two more waves, stops them and
      reads both topics back;
    - ``killed``: the first driver runs two waves of input, then gets more and is killed
      (SIGKILL to its JVM, once the clean scenario's queries stopped) while one query at least
      has a batch planned but not committed; the second resumes every query, runs one more
      wave, stops them cleanly and reads both topics back.

    Returns, per scenario, the folder its driver wrote what it read into."""
    base = {"bootstrap": kafka_broker.bootstrap, "jars": connector_jars, "variants": VARIANTS}
    roots = {name: str(tmp_path_factory.mktemp("kafka-" + name)) for name in ("clean", "killed")}
    topics = {name: topics_for(kafka_broker, name) for name in roots}

    def scenario(name, **how):
        return dict(how, name=name, root=roots[name], topics=topics[name])
    folder = tmp_path_factory.mktemp("kafka-restarts-phase1")
    first = run_driver(folder, dict(base, scenarios=[
        scenario("clean", waves=waves(0, 2)),
        scenario("killed", waves=waves(0, 2), kill=waves(2, 4))]))
    assert first.returncode == 0 and "PHASE DONE" not in first.stdout, first.stderr[-5000:]
    assert "SCENARIO DONE clean" in first.stdout, first.stderr[-5000:]
    with open(os.path.join(roots["killed"], "interrupted.json"), "w") as f:
        json.dump(open_batches(roots["killed"]), f)
    folder = tmp_path_factory.mktemp("kafka-restarts-phase2")
    assert "PHASE DONE" in assert_ok(run_driver(folder, dict(base, scenarios=[
        scenario("clean", waves=waves(2, 2), read_back=True),
        scenario("killed", waves=waves(6, 1), read_back=True)])))
    return roots


@pytest.fixture(scope="module")
def clean_restart(restarts):
    """What the clean scenario's second driver read back (see ``restarts``)."""
    return read_back(restarts["clean"])


def test_aggregation_exactly_once_across_a_clean_restart(clean_restart):
    """Every variant's output topic holds, per key, each running (count, sum) exactly once,
    counts rising in the topic's order, every sum the sum of the key's first `count` input
    events (the state carried across the restart), and the last record per key equal to the
    batch aggregation of the whole input topic."""
    data = clean_restart
    outputs = aggregation_outputs(data)
    sums = prefix_sums(data)
    assert sorted(outputs) == variant_names()
    assert len(data["aggregation"]) == 8
    for variant, per_key in outputs.items():
        assert sorted(per_key) == sorted(data["aggregation"]), variant
        for key, records in per_key.items():
            counts = [n for n, _ in records]
            assert counts == sorted(set(counts)), (variant, key, records)
            assert all(total == sums[key][n] for n, total in records), (variant, key, records)
            assert list(records[-1]) == data["aggregation"][key], (variant, key, records)


def test_deduplication_exactly_once_across_a_clean_restart(clean_restart):
    """Every variant's output topic holds every distinct input id exactly once, though ids
    repeat within a wave, across waves and across the restart."""
    data = clean_restart
    outputs = dedup_outputs(data)
    assert sorted(outputs) == variant_names()
    inputs = [json.loads(v)["id"] for _, _, _, v in data["records"]["ids"]]
    assert len(inputs) > len(set(inputs)) + 20  # the input repeats, also across the restart
    for variant, ids in outputs.items():
        assert sorted(ids) == data["ids"], variant


@pytest.fixture(scope="module")
def killed_restart(restarts):
    """What the killed scenario's second driver read back (see ``restarts``), and the batches
    the kill interrupted."""
    with open(os.path.join(restarts["killed"], "interrupted.json")) as f:
        interrupted = interrupted_batches(restarts["killed"], json.load(f))
    return read_back(restarts["killed"]), interrupted


@pytest.fixture(scope="module")
def executor_killed(kafka_broker, connector_jars, tmp_path_factory):
    """One driver on local-cluster: two waves of input, then more, and an executor JVM
    SIGKILLed while one query at least has a batch planned but not committed; the queries go
    on in the same driver (Spark runs the lost tasks again), take the rest of the input, stop
    cleanly and read both topics back. Returns what it read, the batches open at the kill,
    and the executors before and after."""
    root = str(tmp_path_factory.mktemp("kafka-executor-killed"))
    spec = {"bootstrap": kafka_broker.bootstrap, "jars": connector_jars, "variants": VARIANTS,
            "master": "local-cluster[2,1,1024]", "scenarios": [{
                "name": "executor-killed", "root": root,
                "topics": topics_for(kafka_broker, "executor-killed"),
                "waves": waves(0, 2), "kill_executor": waves(2, 4), "read_back": True}]}
    folder = tmp_path_factory.mktemp("kafka-executor-killed-driver")
    assert "PHASE DONE" in assert_ok(run_driver(folder, spec))
    with open(os.path.join(root, "interrupted.json")) as f:
        interrupted = interrupted_batches(root, json.load(f))
    with open(os.path.join(root, "executor-killed.json")) as f:
        killed = json.load(f)
    return read_back(root), interrupted, killed


def in_batch(record: List, batch: Dict) -> bool:
    """Whether an input record ([partition, offset, key, value]) is one an interrupted batch
    (of a span, see ``interrupted_batches``) read: its offset in [start, end) of its partition."""
    partition, offset = str(record[0]), record[1]
    (start,), (end,) = batch["start"].values(), batch["end"].values()
    return start.get(partition, 0) <= offset < end.get(partition, 0)


def test_a_killed_driver_loses_nothing_and_repeats_only_the_interrupted_batch(killed_restart):
    """At-least-once, as Spark's Kafka sink promises across a crash: after the driver is
    killed mid-batch and a new one resumes, every variant's output still holds every distinct
    input id and, per key, every running (count, sum) it emits is the sum of the key's first
    `count` events, ending at the batch aggregation of the whole input. Records repeat only
    where the batch the kill interrupted was replayed: ids that batch read, and per key the
    one count that batch emitted, each at most twice."""
    data, interrupted = killed_restart
    # One query at least was between a batch's plan and its commit when the driver died.
    assert interrupted and all(i["first"] >= 1 for i in interrupted.values()), interrupted
    check_at_least_once(data, interrupted)


@pytest.mark.cluster
def test_a_killed_executor_loses_nothing_and_repeats_only_the_interrupted_batch(executor_killed):
    """The same on local-cluster with an executor JVM killed mid-batch: the lost tasks run
    again (Spark's Kafka sink may then write their records twice), in the same driver, on
    every backend and storage; nothing is lost, the state is right, and only records of the
    batches open at the kill repeat."""
    data, interrupted, killed = executor_killed
    assert interrupted and all(i["first"] >= 1 for i in interrupted.values()), interrupted
    assert killed["executor"] in killed["before"] and len(killed["before"]) == 2, killed
    assert not os.path.exists("/proc/%d" % killed["pid"])
    # The queries finished on the executors alive at the end, the killed one not among them.
    assert killed["executor"] not in killed["after"] and killed["after"], killed
    check_at_least_once(data, interrupted)


def check_at_least_once(data: Dict, interrupted: Dict) -> None:
    """Every variant's output holds every distinct input id and, per key, running (count,
    sum) records ending at the batch aggregation; only records the `interrupted` batches
    emitted repeat, at most twice."""
    sums = prefix_sums(data)
    outputs = aggregation_outputs(data)
    assert sorted(outputs) == variant_names()
    for variant, per_key in outputs.items():
        assert sorted(per_key) == sorted(data["aggregation"]), variant
        batch = interrupted.get("aggregation/" + variant)
        # Per key, the counts the interrupted batches emitted: the count the key reached at
        # the end of each batch that read an event of it (a key's events are in one
        # partition, in order).
        replayed: Dict[str, set] = defaultdict(set)
        if batch is not None:
            for start, end in zip([batch["start"]] + batch["ends"][:-1], batch["ends"]):
                (start,), (end,) = start.values(), end.values()
                reached: Dict[str, int] = defaultdict(int)
                touched = set()
                for record in data["records"]["events"]:
                    partition, offset, key = str(record[0]), record[1], record[2]
                    if offset < end.get(partition, 0):
                        reached[key] += 1
                        if offset >= start.get(partition, 0):
                            touched.add(key)
                for key in touched:
                    replayed[key].add(reached[key])
        for key, records in per_key.items():
            counts = [n for n, _ in records]
            assert counts == sorted(counts), (variant, key, records)
            assert all(total == sums[key][n] for n, total in records), (variant, key, records)
            assert list(records[-1]) == data["aggregation"][key], (variant, key, records)
            for n in set(counts):
                times = counts.count(n)
                assert times == 1 or (times == 2 and n in replayed[key]), \
                    (variant, key, n, records, batch)

    inputs = data["records"]["ids"]
    for variant, ids in dedup_outputs(data).items():
        assert sorted(set(ids)) == data["ids"], variant
        batch = interrupted.get("deduplication/" + variant)
        replayable = {json.loads(r[3])["id"] for r in inputs if batch and in_batch(r, batch)}
        repeated = {i for i in ids if ids.count(i) > 1}
        assert repeated <= replayable, (variant, sorted(repeated - replayable), batch)
        assert all(ids.count(i) <= 2 for i in repeated), variant
    assert sorted(dedup_outputs(data)) == variant_names()
