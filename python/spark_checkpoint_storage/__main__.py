"""Command line: ``python -m spark_checkpoint_storage {version,jar,demo}``."""
import argparse
import sys
from typing import List, Optional


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m spark_checkpoint_storage")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("version", help="print the package and jar versions")
    sub.add_parser("jar", help="print the path of the bundled jar (for --jars)")
    demo = sub.add_parser("demo", help="run the demo streaming query")
    demo.add_argument("--batches", type=int, default=6)
    args = parser.parse_args(argv)

    if args.command == "jar":
        from spark_checkpoint_storage.bundled_jar import bundled_jar_path

        print(bundled_jar_path())
        return 0
    if args.command == "version":
        from spark_checkpoint_storage import __version__
        from spark_checkpoint_storage.java_gateway import get_gateway

        info = get_gateway().jvm.io.sparkcheckpointstorage.BuildInfo
        print("python package %s, jar %s (built for Spark %s), loaded from %s"
              % (__version__, info.version(), info.sparkVersion(), info.jarLocation()))
        return 0
    if args.command == "demo":
        from spark_checkpoint_storage.demo import run_demo

        return run_demo(batches=args.batches)
    return 2


if __name__ == "__main__":
    sys.exit(main())
