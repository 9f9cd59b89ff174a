package io.sparkcheckpointstorage.coordinator

import java.io.IOException

import io.sparkcheckpointstorage.formats.UnsupportedFormatException
import io.sparkcheckpointstorage.packs.CorruptPackException
import io.sparkcheckpointstorage.storage.{CorruptCheckpointException, StateSizeLimitException}

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
