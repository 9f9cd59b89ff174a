package org.apache.spark.checkpointstorage.ui

import org.apache.spark.SparkConf
import org.apache.spark.status.KVUtils
import org.apache.spark.util.JsonProtocol
import org.scalatest.funsuite.AnyFunSuite

import io.sparkcheckpointstorage.monitoring._

/**
 * The tab's events go through Spark's event log (JsonProtocol) and its facts through the
 * History Server's disk store serializer unchanged: the History Server rebuilds the same tab.
 */
class CheckpointEventsJsonSuite extends AnyFunSuite {
  private val events = Seq(
    CheckpointQueryStarted("q", "file:/cp", "S", "P", 4, 3L, 10L, 20L, Seq(CheckpointSetting("k", "v", "default"))),
    CheckpointBatchCommitted("q", "file:/cp", CheckpointBatchRow(4L, 30L, 7L, 2, 100L, 5000L, 180L, "5.pack",
      Seq(OperatorCommit(0, 1, 100L, 0L), OperatorCommit(1, 1, 0L, 5000L))), 1L, 2L),
    CheckpointCommitFailed("q", "file:/cp", 5L, 40L, "StateSizeLimit", "too big"),
    CheckpointSavepointTaken("q", "file:/cp", 4L, "file:/sp", 50L))

  test("every event reads back from the event log's JSON as it was written") {
    events.foreach { e =>
      val json = JsonProtocol.sparkEventToJsonString(e)
      assert(json.contains(e.getClass.getName))
      assert(JsonProtocol.sparkEventFromJson(json) == e)
    }
  }

  test("the facts of a query read back from the History Server's disk store serializer") {
    val store = new org.apache.spark.util.kvstore.InMemoryStore
    val l = new CheckpointsStatusListener(store, historySize = 10)
    events.foreach(l.onOtherEvent)
    val q = store.read(classOf[QueryCheckpoints], "q")
    val serializer = KVUtils.serializerForHistoryServer(new SparkConf())
    val back = serializer.deserialize(serializer.serialize(q), classOf[QueryCheckpoints])
    assert(back == q)
    assert(back.history.head.operators.map(_.fileBytes) == Seq(0L, 5000L))
  }
}
