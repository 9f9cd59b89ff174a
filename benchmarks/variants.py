"""
The state store set-ups ("variants") a benchmark compares: Spark's built-in providers and
ours, each a name mapped to the Spark settings that select it.

More variants come from the command line, so that later storages can be measured without
editing this file:

    --variant NAME:key=value,key=value            a new variant (ours, unless it selects a
                                                  built-in provider with Spark's file manager)
    --variant NAME=BASE:key=value,...             BASE's settings plus these
    --variant NAME=BASE                           an alias of BASE under another name

A value may itself contain commas: a segment without '=' is glued to the previous value.
A variant that names no checkpoint file manager gets Spark's own, as in a plain session.
In values, ``{checkpoint}`` stands for the query's checkpoint folder and ``{run_dir}`` for the
folder of the variant's run.
"""
from typing import Dict, List, Optional

from spark_checkpoint_storage import jvm_names

HDFS = jvm_names.HDFS_PROVIDER_CLASS
ROCKSDB = jvm_names.ROCKSDB_PROVIDER_CLASS
HEAP = jvm_names.HEAP_PROVIDER_CLASS
SPARK_FILE_MANAGER = jvm_names.spark_file_manager_class()
OUR_FILE_MANAGER = jvm_names.FILE_MANAGER_CLASS
#: the benchmarks' stateful floor, in the benchmarks jar (jvm/src/bench/.../FloorStateStoreProvider.scala)
FLOOR_PROVIDER = jvm_names.JVM_PACKAGE + ".benchmarks.FloorStateStoreProvider"

PROVIDER = jvm_names.PROVIDER_CLASS_CONF
FILE_MANAGER = jvm_names.FILE_MANAGER_CLASS_CONF
CHANGELOG = jvm_names.ROCKSDB_CHANGELOG_CHECKPOINTING_CONF
STORAGE = jvm_names.STORAGE

BUILTIN_PROVIDERS = (HDFS, ROCKSDB)

# configure_spark_with_checkpoint_storage() (run for every variant: it adds our jar, plugin
# and query listener) sets our provider and file manager unless the session names others,
# so every variant names both explicitly: the built-ins then run exactly as in plain Spark.
VARIANTS: Dict[str, Dict] = {
    "hdfs": {"label": "HDFSBacked (Spark default)", "builtin": True,
             "conf": {PROVIDER: HDFS, FILE_MANAGER: SPARK_FILE_MANAGER}},
    "rocksdb": {"label": "RocksDB", "builtin": True,
                "conf": {PROVIDER: ROCKSDB, CHANGELOG: "false", FILE_MANAGER: SPARK_FILE_MANAGER}},
    "rocksdb-changelog": {"label": "RocksDB + changelog", "builtin": True,
                          "conf": {PROVIDER: ROCKSDB, CHANGELOG: "true",
                                   FILE_MANAGER: SPARK_FILE_MANAGER}},
    # Our provider alone, its files written through Spark's own file manager.
    "heap": {"label": "Heap provider", "builtin": False,
             "conf": {PROVIDER: HEAP, FILE_MANAGER: SPARK_FILE_MANAGER}},
    # Our provider with our file manager and each checkpoint storage.
    "heap-fs": {"label": "Heap + FileSystemCheckpointStorage", "builtin": False,
                "conf": {PROVIDER: HEAP, FILE_MANAGER: OUR_FILE_MANAGER, STORAGE: "filesystem"}},
    # The same, its state files above the threshold written in the background (asyncStateWrites).
    "heap-fs-async": {"label": "Heap + FileSystemCheckpointStorage, asyncStateWrites", "builtin": False,
                      "conf": {PROVIDER: HEAP, FILE_MANAGER: OUR_FILE_MANAGER, STORAGE: "filesystem",
                               jvm_names.ASYNC_STATE_WRITES: "true"}},
    # {checkpoint} is replaced by the query's checkpoint folder (see measure.py): without a
    # checkpoint path the driver storage keeps state in driver heap only, and refuses restarts.
    "heap-driver": {"label": "Heap + DriverCheckpointStorage (with path)", "builtin": False,
                    "conf": {PROVIDER: HEAP, FILE_MANAGER: OUR_FILE_MANAGER, STORAGE: "driver",
                             STORAGE + ".checkpointPath": "{checkpoint}"}},
    # W7: Spark's RocksDB provider (the RocksDB state backend, changelog on) on our file
    # manager and each checkpoint storage, against "rocksdb-changelog" on Spark's own.
    "rocksdb-fs": {"label": "RocksDB + changelog + FileSystemCheckpointStorage", "builtin": False,
                   "conf": {PROVIDER: ROCKSDB, CHANGELOG: "true", FILE_MANAGER: OUR_FILE_MANAGER,
                            STORAGE: "filesystem"}},
    "rocksdb-driver": {"label": "RocksDB + changelog + DriverCheckpointStorage (with path)",
                       "builtin": False,
                       "conf": {PROVIDER: ROCKSDB, CHANGELOG: "true", FILE_MANAGER: OUR_FILE_MANAGER,
                                STORAGE: "driver", STORAGE + ".checkpointPath": "{checkpoint}"}},
    # The stateful floor: the same query on a provider that keeps each partition's state in a
    # plain in-memory map and writes nothing (FloorStateStoreProvider, from the benchmarks jar; never
    # shipped). Spark's own stateful machinery runs as for any provider: a provider's batch
    # above this one's is what its own state handling costs.
    "floor": {"label": "Stateful floor (in-memory map, writes nothing; reference)", "builtin": False,
              "reference": "stateful", "benchmarks_jar": True,
              "conf": {PROVIDER: FLOOR_PROVIDER, FILE_MANAGER: SPARK_FILE_MANAGER}},
    # Not a provider: the same source, shuffle (by key, into the same partitions) and sink with
    # no state and no aggregation: what Spark spends per batch without any stateful operator.
    "no-state": {"label": "No state (same source, shuffle and sink; reference)", "builtin": False,
                 "reference": "stateless", "query": "stateless",
                 # As in the stateful query, where Spark turns adaptive execution off.
                 "conf": {PROVIDER: HDFS, FILE_MANAGER: SPARK_FILE_MANAGER,
                          "spark.sql.adaptive.enabled": "false"}},
}

DEFAULT = ["hdfs", "rocksdb", "rocksdb-changelog", "heap", "heap-fs", "heap-driver", "floor", "no-state"]
#: W4 (checkpoint on S3): the built-ins on Spark's own file manager, and our two storages.
#: W3 restarts its queries, which the stateful floor (state in one JVM's heap only) cannot.
DEFAULT_BY_WORKLOAD = {"W4": ["hdfs", "rocksdb", "rocksdb-changelog", "heap-fs", "heap-driver"],
                       "W3": [v for v in DEFAULT if v != "floor"]}


def parse_confs(text: str) -> Dict[str, str]:
    """'a=1,b=x,y' -> {'a': '1', 'b': 'x,y'} (a segment without '=' continues the last value)."""
    confs: Dict[str, str] = {}
    last: Optional[str] = None
    for seg in text.split(","):
        if "=" in seg:
            k, v = seg.split("=", 1)
            k = k.strip()
            if not k:
                raise ValueError("empty setting name in %r" % text)
            confs[k], last = v.strip(), k
        elif seg.strip():
            if last is None:
                raise ValueError("expected key=value in %r" % text)
            confs[last] += "," + seg.strip()
    return confs


def is_builtin(conf: Dict[str, str]) -> bool:
    """A built-in set-up: Spark's own provider through Spark's own file manager."""
    return conf.get(PROVIDER, HEAP) in BUILTIN_PROVIDERS and conf.get(FILE_MANAGER) in (None, SPARK_FILE_MANAGER)


def define(spec: str, variants: Dict[str, Dict]) -> str:
    """Adds the variant of one ``--variant`` argument to ``variants``; returns its name."""
    head, _, confs_text = spec.partition(":")
    name, _, base = head.partition("=")
    name, base = name.strip(), base.strip()
    if not name or not all(c.isalnum() or c in "-_." for c in name):
        raise ValueError("bad variant name in %r (letters, digits, - _ .)" % spec)
    if base and base not in variants:
        raise ValueError("unknown base variant %r in %r (known: %s)" % (base, spec, ", ".join(variants)))
    conf = dict(variants[base]["conf"]) if base else {}
    conf.update(parse_confs(confs_text))
    if PROVIDER not in conf:
        raise ValueError("variant %r sets no %s (give it, or a base: NAME=BASE:...)" % (name, PROVIDER))
    # As in a plain Spark session (configure_spark_with_checkpoint_storage would otherwise put ours).
    conf.setdefault(FILE_MANAGER, SPARK_FILE_MANAGER)
    variants[name] = {"label": name + (" (%s + settings)" % base if base and confs_text else
                                       " (= %s)" % base if base else ""),
                      "builtin": is_builtin(conf), "conf": conf, "spec": spec}
    return name


def resolve(names: List[str], specs: List[str]) -> Dict[str, Dict]:
    """The predefined variants plus those of ``specs``; checks that every name in ``names`` exists."""
    variants = {k: dict(v) for k, v in VARIANTS.items()}
    for spec in specs:
        define(spec, variants)
    unknown = [n for n in names if n not in variants]
    if unknown:
        raise ValueError("unknown provider variant(s) %s (known: %s)" % (", ".join(unknown), ", ".join(variants)))
    return variants
