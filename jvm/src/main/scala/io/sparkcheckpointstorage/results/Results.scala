package io.sparkcheckpointstorage.results

import com.fasterxml.jackson.annotation.{JsonInclude, JsonUnwrapped}

/*
 * What the JVM answers Python and the command line with, one case class per JSON object.
 * `ResultCodec` writes them and lists their fields for the Python result classes
 * (`spark_checkpoint_storage.results`), which a test checks against that list. A field's name
 * here is its JSON name; the fields' order is the JSON's.
 */

/** One store of one operator and partition of an inspected checkpoint. */
final case class InspectedStore(operator: Int, partition: Int, store: String, files: Int, inlineFiles: Int,
    inlineBytes: Long, fileBytes: Long, minVersion: Long, maxVersion: Long, latestSnapshotVersion: Option[Long],
    restorableFromVersion: Option[Long])

/** One pack file of an inspected checkpoint. */
final case class InspectedPack(name: String, batchId: Long, bytes: Long, entries: Int, deleted: Int, liveEntries: Int)

/** One batch of an inspected checkpoint's offset log. */
final case class InspectedBatch(batchId: Long, committed: Boolean, startedAtMs: Option[Long],
    committedAtMs: Option[Long], durationMs: Option[Long], stateFiles: Int, inlineBytes: Long, fileBytes: Long)

/** What a checkpoint holds ([[io.sparkcheckpointstorage.inspection.CheckpointInspector]]). */
final case class InspectionResult(checkpoint: String, queryId: Option[String], storage: Option[String],
    persistent: Option[Boolean], committedBatches: Seq[Long], uncommittedBatches: Seq[Long],
    lastCommittedBatch: Option[Long], stores: Seq[InspectedStore], otherStateFiles: Int,
    retainedFirstBatch: Option[Long], retainedLastBatch: Option[Long], packs: Seq[InspectedPack],
    batches: Seq[InspectedBatch], lastCompleteBatch: Option[Long], missingState: Seq[String])

/**
 * What a repair of a checkpoint did, or would do with `dryRun`
 * ([[io.sparkcheckpointstorage.repair.CheckpointRepair]]): the batches after the last complete
 * one removed from the offset and commit logs, and the state files of their versions.
 */
final case class RepairResult(checkpoint: String, lastCommittedBatch: Option[Long], lastCompleteBatch: Option[Long],
    removedBatches: Seq[Long], removedStateFiles: Int, dryRun: Boolean)

/** A savepoint's `_savepoint` file, as written since the first savepoint. */
final case class SavepointManifest(batchId: Long, queryId: Option[String], files: Int, bytes: Long, inlineFiles: Int,
    createdAtMs: Long)

/** A savepoint taken: its manifest and where it went. */
final case class SavepointResult(@JsonUnwrapped manifest: SavepointManifest, path: String)

/** One store of a canonical savepoint: its parquet rows' folder and schemas. */
final case class CanonicalStore(name: String, path: String, numColsPrefixKey: Int, numPartitions: Int,
    keySchema: String, valueSchema: String, rows: Long)

/** One operator of a canonical savepoint. */
final case class CanonicalOperator(operatorId: Long, operatorName: String, stores: Seq[CanonicalStore])

/** A canonical savepoint's `_savepoint` file. */
final case class CanonicalSavepointManifest(format: String, formatVersion: Int, batchId: Long, sourceProvider: String,
    numPartitions: Int, rows: Long, operators: Seq[CanonicalOperator], createdAtMs: Long)

/** A canonical savepoint taken: its manifest, where it went, what it holds and how long it took. */
final case class CanonicalSavepointResult(@JsonUnwrapped manifest: CanonicalSavepointManifest, path: String,
    files: Long, bytes: Long, seconds: Double)

/** The rows a migration wrote of one store (or transformWithState variable), per target partition. */
final case class MigratedStore(store: String, rows: Long, rowsPerPartition: Seq[Long])

/** The stores a migration wrote of one operator. */
final case class MigratedOperator(operatorId: Long, operatorName: String, stores: Seq[MigratedStore])

/**
 * A migrated checkpoint's `_migration` file. `canonicalSavepoint` names the canonical savepoint
 * restored; other migrations' files have never had the field, so it is left out when empty.
 */
final case class MigrationManifest(source: String, batchId: Long, sourceProvider: String, targetProvider: String,
    numPartitions: Int, sourceNumPartitions: Int, operators: Seq[MigratedOperator], rows: Long,
    @JsonInclude(JsonInclude.Include.NON_ABSENT) canonicalSavepoint: Option[String] = None)

/** A migration done: its manifest, where it went, what it holds and how long it took. */
final case class MigrationResult(@JsonUnwrapped manifest: MigrationManifest, path: String, logFiles: Long,
    logBytes: Long, files: Long, bytes: Long, seconds: Double)

/**
 * How far a running migration is; the store fields are empty between stores.
 * Named as Python names it: the JVM's tracker of it is `migration.MigrationTracker`.
 */
final case class MigrationProgress(phase: String, storesDone: Int, storesTotal: Int, rowsWritten: Long,
    operatorId: Option[Long], operatorName: Option[String], store: Option[String], partitionsWritten: Option[Long],
    partitions: Option[Int])
