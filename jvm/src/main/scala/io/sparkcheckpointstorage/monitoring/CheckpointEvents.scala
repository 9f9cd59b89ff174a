package io.sparkcheckpointstorage.monitoring

import org.apache.spark.scheduler.SparkListenerEvent

/*
 * The facts of the checkpoints tab, posted by the driver's [[CheckpointMonitor]] on Spark's
 * listener bus. Spark writes every event of the bus to the event log (as Jackson JSON, its
 * class name in the "Event" field), so the History Server rebuilds the tab from the same
 * events. Plain fields only (numbers, strings, sequences of case classes): -1 stands for
 * "none", so the events read back with any Jackson.
 */

/** One setting of ours as a query runs with it, and where its value came from. */
final case class CheckpointSetting(key: String, value: String, source: String)

/**
 * A query on our file manager started (or restarted) on its checkpoint.
 *
 * @param restoredBatchId            the last committed batch it resumed after; -1 for a new query
 * @param restoredBatchCommittedAtMs when that batch committed (its commit log file's time); -1 if none
 */
final case class CheckpointQueryStarted(
    queryId: String,
    checkpoint: String,
    storage: String,
    provider: String,
    statePartitions: Int,
    restoredBatchId: Long,
    restoredBatchCommittedAtMs: Long,
    startedAtMs: Long,
    settings: Seq[CheckpointSetting]) extends SparkListenerEvent

/** The state one operator's stores wrote for a batch. */
final case class OperatorCommit(operator: Int, stateFiles: Int, inlineBytes: Long, fileBytes: Long)

/**
 * A batch of a query on our file manager committed: its row of the tab's history (the state
 * files of its version `batchId + 1`, inline (packed) and in files of their own, and the pack
 * written for it), and the driver's inline bytes as it committed.
 */
final case class CheckpointBatchCommitted(
    queryId: String,
    checkpoint: String,
    batch: CheckpointBatchRow,
    driverInlineBytesHeld: Long,
    driverMaxTotalInlineSize: Long) extends SparkListenerEvent

/** A state commit of a query failed: a state file refused, or its batch's pack not written. */
final case class CheckpointCommitFailed(
    queryId: String,
    checkpoint: String,
    batchId: Long,
    timeMs: Long,
    kind: String,
    message: String) extends SparkListenerEvent

/** A savepoint of a checkpoint was taken through this package in this driver. */
final case class CheckpointSavepointTaken(
    queryId: String,
    checkpoint: String,
    batchId: Long,
    path: String,
    timeMs: Long) extends SparkListenerEvent
