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

  /** Where the classes were loaded from, so a user can tell which jar is in use. */
  def jarLocation: String =
    Option(getClass.getProtectionDomain.getCodeSource).map(_.getLocation.toString).getOrElse("unknown")
}
