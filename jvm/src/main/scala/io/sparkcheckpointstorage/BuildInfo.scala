package io.sparkcheckpointstorage

import java.util.Properties

/** What this jar is: its version and the Spark it was compiled against. */
object BuildInfo {
  val ResourceName = "spark-checkpoint-storage-version.properties"

  private lazy val props: Properties = {
    val p = new Properties()
    val in = getClass.getClassLoader.getResourceAsStream(ResourceName)
    if (in == null) {
      throw new IllegalStateException(s"$ResourceName is missing from the spark-checkpoint-storage jar")
    }
    try p.load(in) finally in.close()
    p
  }

  def version: String = props.getProperty("version")
  def sparkVersion: String = props.getProperty("spark.version")
  def scalaBinaryVersion: String = props.getProperty("scala.binary.version")
  /** The Spark minor line the jar is built for ("4.3"): a class of another line's jar fails. */
  def sparkLine: String = props.getProperty("spark.line")

  /**
   * Why this jar cannot run on the Spark and Scala of this JVM, or null when it can: Spark's
   * state store API changes in every minor line, so a jar of another line fails later with
   * `AbstractMethodError` instead.
   */
  def sparkLineMismatch: String = {
    val running = org.apache.spark.SPARK_VERSION
    val runningLine = running.split('.').take(2).mkString(".")
    val runningScala = scala.util.Properties.versionNumberString.split('.').take(2).mkString(".")
    if (runningLine == sparkLine && runningScala == scalaBinaryVersion) null
    else s"The spark-checkpoint-storage jar at $jarLocation is built for Spark $sparkLine " +
      s"(Scala $scalaBinaryVersion), but this JVM runs Spark $running (Scala $runningScala). Use " +
      s"the jar of that line: --packages io.sparkcheckpointstorage:spark-checkpoint-storage-spark" +
      s"${runningLine}_$runningScala:$version, or the pip package, which picks it by itself."
  }

  /** Fails with [[sparkLineMismatch]] when this jar is of another Spark line. */
  def checkSparkLine(): Unit = Option(sparkLineMismatch).foreach(m => throw new IllegalStateException(m))

  /** Where the classes were loaded from, so a user can tell which jar is in use. */
  def jarLocation: String =
    Option(getClass.getProtectionDomain.getCodeSource).map(_.getLocation.toString).getOrElse("unknown")
}
