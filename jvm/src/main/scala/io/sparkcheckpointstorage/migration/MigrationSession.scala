package io.sparkcheckpointstorage.migration

import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.checkpointstorage.shim.MigrationShim
import org.apache.spark.sql.internal.SQLConf

/**
 * The settings a migration reads and writes with, from the session's state. A Spark Connect
 * session (Spark 4) has none in this JVM, so a migration on it is refused.
 */
private[migration] object MigrationSession {
  def sqlConf(spark: SparkSession): SQLConf = MigrationShim.sqlConf(spark).getOrElse(throw notClassic(spark))

  def hadoopConf(spark: SparkSession): Configuration = MigrationShim.hadoopConf(spark).getOrElse(throw notClassic(spark))

  private def notClassic(spark: SparkSession): MigrationException =
    new MigrationException(s"A migration runs on a classic SparkSession, not ${spark.getClass.getName} (Spark Connect).")
}
