// Spark 4.2-4.3: the join suites dispatch each test by virtual column family mode.
package io.sparkcheckpointstorage.provider

import org.scalactic.source.Position
import org.scalatest.Tag

import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.streaming._

/**
 * Spark's join suites dispatch each test themselves (RocksDB with virtual column families,
 * or RocksDB and HDFS without): replace that dispatch with one run on our provider, with
 * join state format 2 (four state stores per partition, no column families).
 */
trait HeapStreamingJoinTest extends StreamingJoinSuite {
  override protected def testMode: Mode = Mode.WithoutVCF

  protected def notApplicable: Seq[(String, String)] = Nil

  override protected def test(testName: String, testTags: Tag*)(testBody: => Any)
      (implicit pos: Position): Unit =
    testWithoutVirtualColumnFamilyJoins(testName, testTags: _*)(testBody)

  override def testWithoutVirtualColumnFamilyJoins(testName: String, testTags: Tag*)
      (testBody: => Any): Unit =
    SparkTestCompat.registerOrSkip(notApplicable, testName, Some("HeapStateStore"))(
        name => ignore(name, testTags: _*)(())) { name =>
      super.testWithoutVirtualColumnFamilyJoins(name, testTags: _*) {
        withSQLConf(SQLConf.STATE_STORE_PROVIDER_CLASS.key -> HeapStateStoreProvider.ClassName) {
          SparkTestCompat.guard(testBody)
        }
      }
    }
}

class HeapStreamingInnerJoinSuite extends StreamingInnerJoinSuite with HeapStreamingJoinTest

class HeapStreamingOuterJoinSuite extends StreamingOuterJoinSuite with HeapStreamingJoinTest

class HeapStreamingFullOuterJoinSuite extends StreamingFullOuterJoinSuite with HeapStreamingJoinTest

class HeapStreamingLeftSemiJoinSuite extends StreamingLeftSemiJoinSuite with HeapStreamingJoinTest
