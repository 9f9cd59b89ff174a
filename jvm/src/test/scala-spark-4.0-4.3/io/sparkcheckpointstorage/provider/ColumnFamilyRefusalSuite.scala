// Spark 4.0-4.3: column families and multiple values per key exist, and are refused.
package io.sparkcheckpointstorage.provider

import java.nio.file.Files

import org.apache.hadoop.conf.Configuration
import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.sql.execution.streaming.state._

import io.sparkcheckpointstorage.provider.StateRows._

/** Spark 4's column families and multiple values per key: refused, naming the provider to use. */
class ColumnFamilyRefusalSuite extends AnyFunSuite {
  private def initWith(columnFamilies: Boolean, multipleValues: Boolean): UnsupportedOperationException = {
    val root = Files.createTempDirectory("heap-cf").toFile
    try {
      intercept[UnsupportedOperationException] {
        new HeapStateStoreProvider().init(StateStoreId(root.getAbsolutePath, 0, 0), keySchema, valueSchema,
          NoPrefixKeyStateEncoderSpec(keySchema), useColumnFamilies = columnFamilies, new StateStoreConf(),
          new Configuration(), useMultipleValuesPerKey = multipleValues, stateSchemaProvider = None)
      }
    } finally org.apache.commons.io.FileUtils.deleteQuietly(root)
  }

  test("unsupported features name the provider to use instead") {
    for ((e, what) <- Seq(initWith(columnFamilies = true, multipleValues = false) -> "column families",
        initWith(columnFamilies = false, multipleValues = true) -> "multiple values per key")) {
      assert(e.getMessage.contains(what), e.getMessage)
      assert(e.getMessage.contains("RocksDBStateStoreProvider"), e.getMessage)
      assert(e.getMessage.contains("spark.sql.streaming.stateStore.providerClass"), e.getMessage)
    }
  }
}
