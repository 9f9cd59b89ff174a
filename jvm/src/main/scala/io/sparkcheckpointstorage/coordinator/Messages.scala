package io.sparkcheckpointstorage.coordinator

/** What executors ask the checkpoint coordinator (encoded by [[MessageCodec]]). */
sealed trait CoordinatorRequest {
  /** The checkpoint root the request is about. */
  def root: String
}

/**
 * Keep `bytes` as the content of `relPath` under checkpoint `root`.
 *
 * @param storage the storage's description, recorded with the checkpoint
 * @param persistent whether the root's inline files go into packs
 * @param keepInHeap whether the driver keeps the bytes in heap after packing them
 */
final case class PutInline(root: String, relPath: String, bytes: Array[Byte], storage: String,
    persistent: Boolean, keepInHeap: Boolean) extends CoordinatorRequest

final case class GetInline(root: String, relPath: String) extends CoordinatorRequest

final case class ExistsInline(root: String, relPath: String) extends CoordinatorRequest

/** Inline files directly inside directory `relDir`. */
final case class ListInline(root: String, relDir: String) extends CoordinatorRequest

/**
 * Every file directly inside store directory `relDir` (`state/<op>/<partition>[/<store>]`),
 * inline or not, asked by a provider whose every file goes through the file manager: the
 * driver answers its files of their own from what it knows ([[StoreListing]]).
 */
final case class ListStore(root: String, relDir: String) extends CoordinatorRequest

final case class DeleteInline(root: String, relPath: String) extends CoordinatorRequest

/**
 * `relPath` was written as a file of its own, `bytes` long: drops any inline version of it, as
 * [[DeleteInline]], and tells the coordinator the batch's file for the checkpoints tab (which
 * then never lists the checkpoint's state to find it).
 */
final case class OwnFileWritten(root: String, relPath: String, bytes: Long) extends CoordinatorRequest

/**
 * Executor `executorId` will write `relPath`, `bytes` long, as a file of its own in the
 * background, as write `writeId` (`asyncStateWrites`): the batch's commit waits for it. Drops
 * any inline version of the file, as [[OwnFileWritten]].
 */
final case class WritePending(root: String, relPath: String, writeId: String, executorId: String, bytes: Long)
  extends CoordinatorRequest

/** Background write `writeId` of `relPath` ended: durable when `error` is empty, else failed with it. */
final case class WriteDone(root: String, relPath: String, writeId: String, error: String) extends CoordinatorRequest

/**
 * A task of stage `stageId` (`numPartitions` tasks) that wrote state files of checkpoint
 * `root` for batch `batchId` ended: the task of partition `partitionId`. Once every partition
 * of the stage has ended, the batch's state the stage sent is made durable before the last
 * task may end ([[StageEndPending]]), so that nothing after the stage (a sink's commit, the
 * commit log) depends on the driver that holds it.
 */
final case class StageTaskDone(root: String, batchId: Long, stageId: Int, partitionId: Int, numPartitions: Int)
  extends CoordinatorRequest

/** Whether the durable write [[StageEndPending]] `id` announced is done (answered at once, never waited on). */
final case class AwaitStageEnd(root: String, id: Long) extends CoordinatorRequest

/**
 * `request`, sent by state store maintenance (a snapshot, a cleanup) rather than by a task or
 * the driver ([[StateMaintenanceScope]]). It is answered only while the checkpoint's query runs
 * in this driver, and refused otherwise: the maintenance of a stopped query's stores, which
 * executors run until they learn of the stop, would bring its state back into the driver heap,
 * and keep it there with no commit to pack it.
 */
final case class FromMaintenance(request: CoordinatorRequest) extends CoordinatorRequest {
  require(!request.isInstanceOf[FromMaintenance], "a maintenance request inside another")
  def root: String = request.root
}

/** The coordinator's answers. */
sealed trait CoordinatorReply
case object Done extends CoordinatorReply
case object NotInline extends CoordinatorReply
case object IsInline extends CoordinatorReply
final case class InlineBytes(bytes: Array[Byte]) extends CoordinatorReply
/** The file is in a pack on the checkpoint file system: read `length` bytes at `offset`. */
final case class InPack(pack: String, offset: Long, length: Int, crc: Int) extends CoordinatorReply
final case class Listing(files: Seq[(String, Long)]) extends CoordinatorReply
/**
 * The stage's state is being made durable as write `id` (a pack, the background writes it
 * waits for): the last task asks [[AwaitStageEnd]] until the answer is [[Done]] or [[Failed]].
 * The driver's one RPC thread never waits on the file system for it.
 */
final case class StageEndPending(id: Long) extends CoordinatorReply
/**
 * A store directory's inline files (relative paths) and, when the driver knows them, its
 * files of their own and subdirectories (names; a directory's length is -1); None: list the
 * file system.
 */
final case class StoreListing(inline: Seq[(String, Long)], onFileSystem: Option[Seq[(String, Long)]])
  extends CoordinatorReply
/**
 * The request failed on the driver. `kind` keeps the kind of error across the RPC (the
 * executor raises the same exception class), `message` is for the user, `file` names the
 * damaged file of a [[FailureKind.CorruptCheckpoint]] or the file of a [[FailureKind.UnsupportedFormat]]
 * (empty otherwise).
 */
final case class Failed(kind: FailureKind, message: String, file: String = "") extends CoordinatorReply

/** The kinds of error a coordinator reply carries; `code` is their wire value. */
sealed abstract class FailureKind(val code: Byte)
object FailureKind {
  /** An I/O error of the driver (`java.io.IOException`). */
  case object Io extends FailureKind(1)
  /** A damaged pack or state file (`CorruptCheckpointException`): the message names it. */
  case object CorruptCheckpoint extends FailureKind(2)
  /** The driver cannot hold more inline state (`StateSizeLimitException`). */
  case object StateSizeLimit extends FailureKind(3)
  /** The checkpoint cannot be used as asked, e.g. its heap-only state is gone (`IllegalStateException`). */
  case object IllegalState extends FailureKind(4)
  /** A value the request carried is not acceptable (`IllegalArgumentException`). */
  case object IllegalArgument extends FailureKind(5)
  /** The request could not be decoded (`MalformedMessageException`). */
  case object MalformedMessage extends FailureKind(6)
  /** No query runs on the checkpoint in this driver: maintenance leaves its state alone (`QueryNotRunningException`). */
  case object NotRunning extends FailureKind(7)
  /** A pack in a format version this release does not read (`UnsupportedFormatException`): the message names it. */
  case object UnsupportedFormat extends FailureKind(8)

  val all: Seq[FailureKind] = Seq(Io, CorruptCheckpoint, StateSizeLimit, IllegalState, IllegalArgument,
    MalformedMessage, NotRunning, UnsupportedFormat)
}
