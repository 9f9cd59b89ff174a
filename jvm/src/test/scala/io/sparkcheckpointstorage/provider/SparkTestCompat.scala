package io.sparkcheckpointstorage.provider

import org.scalatest.Assertions

/**
 * Support for running Spark's own suites, compiled into Spark's `tests` jars, on a runtime of
 * another version: Spark 4.3.0's `tests` jars are not published, so that line's tests use
 * 4.2.0's (project/SparkLines.scala, `testVersion`).
 *
 * Some test bodies call a Spark member whose binary signature changed in between, such as
 * `new StateStoreCustomSizeMetric(String, String)` or
 * `StateStore.removeFromLoadedProvidersAndClose(id, Option)`. The JVM reports that as a
 * `LinkageError` (`NoSuchMethodError`, `AbstractMethodError`, ...), which ScalaTest treats
 * as fatal: it would abort the whole run. [[guard]] cancels such a test instead, naming the
 * missing member; it says nothing about our provider. Where the `tests` jars are the
 * runtime's own version, a `LinkageError` is a bug of our shims and fails the test.
 */
object SparkTestCompat extends Assertions {
  /** The version of Spark's `tests` jars, set by the build (build.sbt). */
  val testsVersion: Option[String] = sys.props.get("spark-checkpoint-storage.spark-tests-version")

  /** Spark's `tests` jars are of another version than the Spark classes they run on. */
  val testsJarsDiffer: Boolean = testsVersion.exists(_ != org.apache.spark.SPARK_VERSION)

  def guard(testBody: => Any): Any =
    if (!testsJarsDiffer) testBody
    else try testBody catch {
      case e: LinkageError =>
        cancel(s"Spark ${testsVersion.get} test code on the ${org.apache.spark.SPARK_VERSION} runtime: $e", e)
    }

  /** HEAP_SPARK_SUITES_ALL=1: run the tests the suites would otherwise skip. */
  def runAll: Boolean = sys.env.get("HEAP_SPARK_SUITES_ALL").contains("1")

  /** Why `testName` is skipped: the reason of the first `(name prefix, reason)` it matches. */
  def skipReason(skips: Seq[(String, String)], testName: String): Option[String] =
    if (runAll) None else skips.collectFirst { case (prefix, why) if testName.startsWith(prefix) => why }

  /**
   * Registers one of Spark's tests in our suite under its name and ` (label)`: through
   * `skip`, with the reason in its name, when `skips` names it, else through `register`.
   */
  def registerOrSkip(skips: Seq[(String, String)], testName: String, label: Option[String])(
      skip: String => Unit)(register: String => Unit): Unit = {
    val name = label.fold(testName)(l => s"$testName ($l)")
    skipReason(skips, testName) match {
      case Some(reason) => skip(s"$name [skipped: $reason]")
      case None => register(name)
    }
  }
}
