package io.sparkcheckpointstorage.coordinator

import java.io.IOException

import io.sparkcheckpointstorage.formats.UnsupportedFormatException
import io.sparkcheckpointstorage.packs.CorruptPackException
import io.sparkcheckpointstorage.storage.{CorruptCheckpointException, StateSizeLimitException}

/** A coordinator message that cannot be decoded: refused, never half-read. */
class MalformedMessageException(message: String) extends IOException(message)

/**
 * State store maintenance asked about a checkpoint that no query runs on in this driver: its
 * query stopped, or has not committed a batch since the driver started. The maintenance
 * leaves that state alone; a query started on the checkpoint commits, and maintains, again.
 */
class QueryNotRunningException(message: String) extends IllegalStateException(message)

/**
 * The driver did not answer an executor's message to the coordinator in time. The task that
 * sent it fails and Spark retries it; nothing of the failure is kept, so the retry looks the
 * driver up again.
 */
class CoordinatorUnreachableException(message: String, cause: Throwable) extends IOException(message, cause)

object CoordinatorUnreachableException {
  private def advice(raise: String): String = "The driver may be stalled (a long garbage " +
    "collection pause, an overloaded driver, many executors registering at once) or cut off " +
    "from this executor: check the driver's GC log and load, and the network between executors " +
    s"and the driver; if such pauses are expected, raise $raise. This task fails and Spark " +
    "retries it (up to spark.task.maxFailures); the next message looks the driver up again."

  private def cause(e: Throwable): String = s" (${e.getClass.getName}: ${e.getMessage})"

  def noLookup(lookupTimeout: String, e: Throwable): CoordinatorUnreachableException =
    new CoordinatorUnreachableException("The checkpoint coordinator on the driver could not be " +
      s"reached: the driver did not answer this executor's lookup within $lookupTimeout${cause(e)}. " +
      advice(lookupTimeout.takeWhile(_ != '=')), e)

  def noAnswer(askTimeout: String, e: Throwable): CoordinatorUnreachableException = {
    val what = e match {
      case _: java.util.concurrent.TimeoutException => s"did not answer this executor's message within $askTimeout"
      case _ => "could not be reached: this executor's message failed on its way"
    }
    new CoordinatorUnreachableException(s"The checkpoint coordinator on the driver $what${cause(e)}. " +
      advice(askTimeout.takeWhile(_ != '=')), e)
  }
}

/**
 * Errors across the RPC: the driver turns an exception into a [[Failed]] reply of its kind,
 * the asking side raises the same kind again, so that a corrupt pack reaches the task (and
 * the user, and Python) as the corrupt-checkpoint error it is, not as a bare `IOException`.
 */
object CoordinatorFailures {
  def toReply(e: Throwable): Failed = {
    val message = Option(e.getMessage).getOrElse(e.toString)
    e match {
      case c: CorruptCheckpointException => Failed(FailureKind.CorruptCheckpoint, message, c.file)
      case u: UnsupportedFormatException => Failed(FailureKind.UnsupportedFormat, message, u.file)
      case _: StateSizeLimitException => Failed(FailureKind.StateSizeLimit, message)
      case _: MalformedMessageException => Failed(FailureKind.MalformedMessage, message)
      case _: QueryNotRunningException => Failed(FailureKind.NotRunning, message)
      case _: IllegalStateException => Failed(FailureKind.IllegalState, message)
      case _: IllegalArgumentException => Failed(FailureKind.IllegalArgument, message)
      case _ => Failed(FailureKind.Io, message)
    }
  }

  def toException(f: Failed): Exception = f.kind match {
    // Packs are the only files the coordinator reads; their errors keep the pack's class.
    case FailureKind.CorruptCheckpoint => new CorruptPackException(f.file, f.message)
    case FailureKind.StateSizeLimit => new StateSizeLimitException(f.message)
    case FailureKind.MalformedMessage => new MalformedMessageException(f.message)
    case FailureKind.IllegalState => new IllegalStateException(f.message)
    case FailureKind.IllegalArgument => new IllegalArgumentException(f.message)
    case FailureKind.NotRunning => new QueryNotRunningException(f.message)
    case FailureKind.UnsupportedFormat => new UnsupportedFormatException(f.file, f.message)
    case FailureKind.Io => new IOException(f.message)
  }
}
