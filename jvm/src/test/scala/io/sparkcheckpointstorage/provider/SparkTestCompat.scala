package io.sparkcheckpointstorage.provider

import org.scalatest.Assertions

/**
 * Support for running Spark's own suites, compiled into Spark's 4.2.0 `tests` jars, on the
 * 4.3.0 runtime (the 4.3.0 `tests` jars are not published).
 *
 * Some test bodies call a Spark member whose binary signature changed in 4.3, such as
 * `new StateStoreCustomSizeMetric(String, String)` or
 * `StateStore.removeFromLoadedProvidersAndClose(id, Option)`. The JVM reports that as a
 * `LinkageError` (`NoSuchMethodError`, `AbstractMethodError`, ...), which ScalaTest treats
 * as fatal: it would abort the whole run. [[guard]] cancels such a test instead, naming the
 * missing member; it says nothing about our provider.
 */
object SparkTestCompat extends Assertions {
  def guard(testBody: => Any): Any =
    try testBody catch {
      case e: LinkageError => cancel(s"Spark 4.2.0 test code on the 4.3.0 runtime: $e", e)
    }

  /** HEAP_SPARK_SUITES_ALL=1: run the tests the suites would otherwise skip. */
  def runAll: Boolean = sys.env.get("HEAP_SPARK_SUITES_ALL").contains("1")

  /** Why `testName` is skipped: the reason of the first `(name prefix, reason)` it matches. */
  def skipReason(skips: Seq[(String, String)], testName: String): Option[String] =
    if (runAll) None else skips.collectFirst { case (prefix, why) if testName.startsWith(prefix) => why }
}
