package org.apache.spark.sql.streaming

import java.util.UUID

/** Spark's streaming query events, whose constructors are `private[sql]` on Spark 3.5. */
object QueryEventsForTests {
  def started(id: UUID, runId: UUID, name: String, timestamp: String): StreamingQueryListener.QueryStartedEvent =
    new StreamingQueryListener.QueryStartedEvent(id, runId, name, timestamp)

  def terminated(id: UUID, runId: UUID, exception: Option[String]): StreamingQueryListener.QueryTerminatedEvent =
    new StreamingQueryListener.QueryTerminatedEvent(id, runId, exception)
}
