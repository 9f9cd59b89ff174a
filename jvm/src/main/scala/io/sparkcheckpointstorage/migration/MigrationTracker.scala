package io.sparkcheckpointstorage.migration

import java.util.concurrent.ConcurrentHashMap

import org.apache.spark.SparkContext
import org.apache.spark.util.LongAccumulator

import io.sparkcheckpointstorage.results.{MigrationProgress, ResultCodec}

/**
 * How far a running migration is, for a caller that polls it from another thread (the
 * Python API and the command line): the stores of all operators, the store being written,
 * its partitions written and the rows written so far. Partitions and rows are counted by
 * accumulators, so they advance as each partition's task finishes. What it reports is a
 * `results.MigrationProgress`, the name Python gives it.
 */
final class MigrationTracker private[migration] (sc: SparkContext, val totalStores: Int) {
  @volatile private var storesDone = 0
  @volatile private var current: Option[(Long, String, String, Int)] = None
  @volatile private var rowsBefore = 0L
  @volatile private var phase = "reading the checkpoint"
  private[migration] val partitionsWritten: LongAccumulator = sc.longAccumulator("migration partitions written")
  private[migration] val rowsWritten: LongAccumulator = sc.longAccumulator("migration rows written")

  private[migration] def startStore(operatorId: Long, operatorName: String, store: String, partitions: Int): Unit = {
    partitionsWritten.reset()
    current = Some((operatorId, operatorName, store, partitions))
    phase = "writing state"
  }

  private[migration] def finishStore(): Unit = {
    rowsBefore += rowsWritten.value
    rowsWritten.reset()
    partitionsWritten.reset()
    storesDone += 1
    current = None
  }

  private[migration] def finishing(): Unit = phase = "copying the logs and publishing"

  def json: String = {
    val store = current // read once: the migration's thread moves it on meanwhile
    ResultCodec.toJson(MigrationProgress(phase, storesDone, totalStores, rowsBefore + rowsWritten.value, store.map(_._1),
      store.map(_._2), store.map(_._3), store.map(_ => partitionsWritten.value), store.map(_._4)))
  }
}

object MigrationTracker {
  private val running = new ConcurrentHashMap[String, MigrationTracker]()

  /** The progress of the migration started with `id`, as JSON; null when none runs under it. */
  def snapshot(id: String): String = Option(running.get(id)).map(_.json).orNull

  /** Runs `body` with a new progress, visible under `id` (if any) while it runs. */
  private[migration] def track[T](id: Option[String], sc: SparkContext, totalStores: Int)(
      body: MigrationTracker => T): T = {
    val progress = new MigrationTracker(sc, totalStores)
    id.foreach(running.put(_, progress))
    try body(progress) finally id.foreach(running.remove)
  }
}
