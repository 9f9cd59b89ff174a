"""Command line: ``python -m spark_checkpoint_storage {version,jar,demo,inspect,repair,savepoint,migrate}``."""
import argparse
import sys
from typing import List, Optional


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m spark_checkpoint_storage")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("version", help="print the package and jar versions")
    sub.add_parser("jar", help="print the path of the bundled jar (for --jars)")
    demo = sub.add_parser("demo", help="run the demo streaming query")
    demo.add_argument("--batches", type=int, default=6, help="micro-batches per run (default 6)")
    demo.add_argument("--partitions", type=int, default=200,
                      help="state partitions, spark.sql.shuffle.partitions (default 200)")
    inspect = sub.add_parser("inspect", help="show what a streaming query's checkpoint holds")
    inspect.add_argument("checkpoint", help="the query's checkpoint location")
    inspect.add_argument("--plot", metavar="PNG", help="also write a plot of state size and "
                         "commit time over batches to this PNG file (needs matplotlib: "
                         "pip install 'spark-checkpoint-storage[inspection]')")
    inspect.add_argument("--json", action="store_true", help="print JSON instead of tables "
                         "(times as epoch milliseconds; the tables show local times)")
    repair = sub.add_parser("repair", help="bring a stopped query's checkpoint whose last "
                            "batches lack their state back to its last complete batch")
    repair.add_argument("checkpoint", help="the query's checkpoint location")
    repair.add_argument("--dry-run", action="store_true", help="only say what would be removed")
    save = sub.add_parser("savepoint", help="copy a stopped query's checkpoint at its last "
                          "committed batch into a self-contained, relocatable savepoint")
    save.add_argument("checkpoint", help="the query's checkpoint location")
    save.add_argument("target", help="the savepoint directory (must not exist or be empty)")
    save.add_argument("--batch", type=int, default=None, help="the committed batch to save")
    save.add_argument("--format", choices=["native", "canonical"], default="native",
                      help="native (default: resumes directly) or canonical (provider-neutral "
                      "parquet rows; restore with: migrate SAVEPOINT DST --to PROVIDER)")
    mig = sub.add_parser("migrate", help="write a new checkpoint of a stopped query whose state "
                         "is written by another state store provider; the query resumes on it")
    mig.add_argument("source", help="the query's checkpoint location (SRC, never modified)")
    mig.add_argument("target", help="the new checkpoint (DST: must not exist or be empty)")
    mig.add_argument("--to", required=True, metavar="PROVIDER",
                     help="the provider to write with: heap (ours), hdfs, rocksdb, or a class name")
    mig.add_argument("--batch", type=int, default=None,
                     help="the committed batch to migrate (default: the last)")
    mig.add_argument("--partitions", type=int, default=None, metavar="N",
                     help="redistribute the state over N partitions (default: the source's)")
    mig.add_argument("--quiet", action="store_true", help="do not show progress on stderr")
    mig.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args(argv)

    if args.command == "jar":
        from spark_checkpoint_storage.bundled_jar import bundled_jar_path

        print(bundled_jar_path())
        return 0
    if args.command == "version":
        from spark_checkpoint_storage import __version__
        from spark_checkpoint_storage.java_gateway import get_gateway

        from spark_checkpoint_storage.jvm_names import BUILD_INFO_CLASS, jvm_class

        info = jvm_class(get_gateway().jvm, BUILD_INFO_CLASS)
        print("python package %s, jar %s (built for Spark %s, Scala %s), loaded from %s"
              % (__version__, info.version(), info.sparkVersion(), info.scalaBinaryVersion(),
                 info.jarLocation()))
        return 0
    if args.command == "demo":
        from spark_checkpoint_storage.demo import run_demo

        return run_demo(batches=args.batches, partitions=args.partitions)
    if args.command == "inspect":
        return _inspect(args.checkpoint, args.plot, args.json)
    if args.command == "repair":
        return _repair(args.checkpoint, args.dry_run)
    if args.command == "savepoint":
        from spark_checkpoint_storage.errors import CheckpointStorageException
        from spark_checkpoint_storage.savepoints import savepoint

        try:
            print(savepoint(args.checkpoint, args.target, batch_id=args.batch,
                            format=args.format))
        except CheckpointStorageException as e:
            print("error: %s" % e, file=sys.stderr)
            return 1
        return 0
    if args.command == "migrate":
        import json

        from spark_checkpoint_storage.errors import CheckpointStorageException
        from spark_checkpoint_storage.migration import migrate

        try:
            def show(p):
                print("progress: %s" % p, file=sys.stderr, flush=True)

            result = migrate(args.source, args.target, to=args.to, batch_id=args.batch,
                             num_partitions=args.partitions,
                             progress=None if args.quiet else show)
        except CheckpointStorageException as e:
            print("error: %s" % e, file=sys.stderr)
            return 1
        if args.json:
            print(json.dumps(result.to_dict(), indent=2))
        else:
            print("migrated batch %d of %s (%s, %d partitions) to %s (%s, %d partitions): %d "
                  "state rows, %d files, %d bytes, %.1f s"
                  % (result.batch_id, args.source, result.source_provider,
                     result.source_num_partitions, result.path, result.target_provider,
                     result.num_partitions, result.rows, result.files, result.bytes,
                     result.seconds))
        return 0
    return 2


def _repair(checkpoint: str, dry_run: bool) -> int:
    """The ``repair`` command: what it did (or would do) on stdout, errors on stderr."""
    from spark_checkpoint_storage.errors import CheckpointStorageException
    from spark_checkpoint_storage.inspection import repair_checkpoint

    try:
        r = repair_checkpoint(checkpoint, dry_run=dry_run)
    except CheckpointStorageException as e:
        print("error: %s" % e, file=sys.stderr)
        return 1
    if not r.removed_batches:
        print("%s is complete: its last committed batch, %s, has all its state; nothing to repair"
              % (r.checkpoint, "none" if r.last_committed_batch is None else r.last_committed_batch))
        return 0
    resumes = ("after batch %d" % r.last_complete_batch if (r.last_complete_batch or -1) >= 0
               else "from its first batch")
    print("%s %s: batches %s removed from the offset and commit logs, %d state files of their "
          "versions deleted; the query resumes %s and runs the rest again from its source"
          % ("would repair" if r.dry_run else "repaired", r.checkpoint,
             ", ".join(str(b) for b in r.removed_batches), r.removed_state_files, resumes))
    return 0


def _inspect(checkpoint: str, plot: Optional[str], as_json: bool) -> int:
    """The ``inspect`` command: tables (or JSON) on stdout, errors in one line on stderr."""
    import json

    from spark_checkpoint_storage.errors import CheckpointStorageException
    from spark_checkpoint_storage.inspection import (
        MatplotlibNotInstalledError,
        require_matplotlib,
        inspect_checkpoint,
    )

    if plot:
        # Before the checkpoint is read: that starts a JVM, a wait for nothing if the plot
        # cannot be drawn.
        try:
            require_matplotlib()
        except MatplotlibNotInstalledError as e:
            print("error: --plot: %s" % e, file=sys.stderr)
            return 1
    try:
        info = inspect_checkpoint(checkpoint)
    except CheckpointStorageException as e:
        print("error: %s" % e, file=sys.stderr)
        return 1
    # The JSON is exactly to_dict(): scripts parse it, so nothing else goes to stdout then.
    if as_json:
        print(json.dumps(info.to_dict(), indent=2))
    else:
        print(info.to_text(), end="")
    if plot:
        try:
            info.plot(plot)
        except OSError as e:
            print("error: cannot write the plot to %s: %s" % (plot, e.strerror or e),
                  file=sys.stderr)
            return 1
        print("plot written to %s" % plot, file=sys.stderr if as_json else sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
