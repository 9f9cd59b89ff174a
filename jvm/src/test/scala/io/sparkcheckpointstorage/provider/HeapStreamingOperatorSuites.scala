package io.sparkcheckpointstorage.provider

import org.scalactic.source.Position
import org.scalatest.Tag

import org.apache.spark.sql.QueryTest
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.streaming._

/**
 * Spark's streaming operator suites (the line's spark-sql `tests` jar) with
 * [[HeapStateStoreProvider]] as the state store provider, the way Spark runs them on RocksDB
 * (`RocksDBStateStoreTest`): every test body runs inside
 * `withSQLConf(spark.sql.streaming.stateStore.providerClass -> HeapStateStoreProvider)`.
 * A test that sets the provider itself (an HDFS- or RocksDB-specific test) keeps its own.
 */
trait HeapStateStoreTest extends QueryTest {

  /**
   * Tests to skip: (prefix of the base suite's test name, reason). Override with a `def`
   * (tests are registered while the base class is constructed).
   */
  protected def notApplicable: Seq[(String, String)] = Nil

  override protected def test(testName: String, testTags: Tag*)(testBody: => Any)
      (implicit pos: Position): Unit =
    SparkTestCompat.registerOrSkip(notApplicable, testName, Some("HeapStateStore"))(
        name => super.ignore(name, testTags: _*)(())) { name =>
      super.test(name, testTags: _*) {
        withSQLConf(SQLConf.STATE_STORE_PROVIDER_CLASS.key -> HeapStateStoreProvider.ClassName) {
          SparkTestCompat.guard(testBody)
        }
      }
    }
}

class HeapStreamingAggregationSuite extends StreamingAggregationSuite with HeapStateStoreTest {
  override protected def notApplicable: Seq[(String, String)] = Seq(
    // With the schema check off, the 4.2.0 test expects the restarted query to fail; on the
    // 4.3.0 runtime it runs on, and the test times out after 120 s waiting for the failure,
    // with Spark's own StreamingAggregationSuite on its HDFS provider as well.
    "changing schema of state when restarting query - schema check off - state format version 1" ->
      "4.2.0 test on the 4.3.0 runtime; fails with Spark's HDFS provider as well")
}

class HeapStreamingDeduplicationSuite extends StreamingDeduplicationSuite with HeapStateStoreTest

class HeapFlatMapGroupsWithStateSuite extends FlatMapGroupsWithStateSuite with HeapStateStoreTest {
  override protected def notApplicable: Seq[(String, String)] = Seq(
    // The test sets RocksDB's provider itself, on Spark's default file manager, so it runs
    // nothing of ours: its failure (it has failed on 3.5.9) would fail our build on a
    // provider we do not ship.
    "SPARK-38320 - flatMapGroupsWithState state with data should not timeout" ->
      "sets RocksDB's provider itself: tests RocksDB, not ours")
}
