// Spark 4.0-4.3: `init` takes a key encoder spec; checkpoint info and error classes exist.
package org.apache.spark.sql.checkpointstorage.shim

import org.apache.hadoop.conf.Configuration
import org.scalatest.Assertions._

import org.apache.spark.SparkThrowable
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.types.StructType

/** Spark 4's provider API for the line-neutral provider tests. */
object ProviderTestShim {
  def init(p: StateStoreProvider, id: StateStoreId, keySchema: StructType, valueSchema: StructType,
      prefixCols: Option[Int], storeConf: StateStoreConf, hadoopConf: Configuration): Unit = {
    val spec = prefixCols match {
      case Some(n) => PrefixKeyScanStateEncoderSpec(keySchema, n)
      case None => NoPrefixKeyStateEncoderSpec(keySchema)
    }
    p.init(id, keySchema, valueSchema, spec, useColumnFamilies = false, storeConf, hadoopConf,
      useMultipleValuesPerKey = false, stateSchemaProvider = None)
  }

  /** The version a committed store reports to Spark's checkpoint info. */
  def checkpointInfoVersion(store: StateStore): Option[Long] = Some(store.getStateStoreCheckpointInfo().batchVersion)

  /** `e` is Spark's error of `condition`, with parameters that pass their checks. */
  def assertCondition(e: Throwable, condition: String, params: (String, String => Boolean)*): Unit = {
    val spark = e.asInstanceOf[SparkThrowable]
    assert(spark.getCondition == condition, e.getMessage)
    params.foreach { case (name, ok) =>
      val v = spark.getMessageParameters.get(name)
      assert(v != null && ok(v), s"$name = $v in ${e.getMessage}")
    }
  }
}
