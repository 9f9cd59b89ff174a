package io.sparkcheckpointstorage.coordinator

import java.util.UUID
import java.util.concurrent.{Executors, ThreadFactory}
import java.util.concurrent.atomic.AtomicInteger

import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.SparkEnv
import org.slf4j.LoggerFactory

import io.sparkcheckpointstorage.fileio.FileSystemOperations

/**
 * The writer of an executor's state files in the background (`asyncStateWrites`; Flink: the
 * asynchronous part of a snapshot), beside the client whose messages it sends: the executor
 * plugin waits for it before the executor stops. A task hands it a finished file's bytes and returns once
 * the driver knows the file is on its way; a few threads of the executor write it, and tell
 * the driver when it is durable or why it is not. The batch's commit waits for that.
 *
 * The bytes waiting here are bounded ([[MaxBytesInFlight]]): a task handing over more waits
 * until earlier files are written, so a slow file system slows the tasks down instead of
 * filling the executor's heap.
 */
object BackgroundStateWriter {
  private val log = LoggerFactory.getLogger(getClass)

  /** The most bytes waiting to be written in one JVM: an eighth of its heap, at most 256 MiB. */
  val MaxBytesInFlight: Long = math.min(256L << 20, Runtime.getRuntime.maxMemory / 8)

  /**
   * The largest file handed over; a larger one the task writes itself, as without the setting
   * (holding it whole in memory would cost more than writing it through a buffer).
   */
  val MaxFileBytes: Int = math.min(64L << 20, MaxBytesInFlight).toInt

  /** Writes are I/O-bound (an object store's PUT is mostly waiting): more threads than cores. */
  private val Threads = 4

  private var bytesInFlight = 0L
  private var writesInFlight = 0

  private lazy val pool = Executors.newFixedThreadPool(Threads, new ThreadFactory {
    private val n = new AtomicInteger()
    override def newThread(r: Runnable): Thread = {
      val t = new Thread(r, s"checkpoint-state-writer-${n.incrementAndGet()}")
      t.setDaemon(true)
      t
    }
  })

  /**
   * Writes `bytes` as `path` (state file `relPath` of checkpoint `root`) in the background,
   * after telling the driver to expect it. Throws only if the driver cannot be told: the task
   * fails then, as it would have failed writing the file itself.
   */
  def write(root: String, relPath: String, path: Path, overwrite: Boolean, conf: Configuration,
      bytes: Array[Byte]): Unit = {
    reserve(bytes.length)
    val id = UUID.randomUUID().toString
    try CoordinatorClient.ask(WritePending(root, relPath, id, executorId, bytes.length.toLong)) catch {
      case NonFatal(e) =>
        release(bytes.length)
        ended()
        throw e
    }
    pool.execute(() => {
      val error = try {
        FileSystemOperations.writeAtomic(path, overwrite, conf)(_.write(bytes))
        ""
      } catch {
        case NonFatal(e) =>
          log.warn(s"Could not write the state file $path in the background; its batch will not commit", e)
          String.valueOf(e)
      } finally release(bytes.length)
      try CoordinatorClient.ask(WriteDone(root, relPath, id, error)) catch {
        case NonFatal(e) =>
          log.error(s"Could not tell the driver that the state file $path was ${if (error.isEmpty) "written" else "not written"}", e)
      } finally ended()
    })
  }

  /**
   * Waits up to `timeoutMs` until every file handed over is written or failed and the driver
   * told; whether they all are.
   */
  def awaitIdle(timeoutMs: Long): Boolean = synchronized {
    val deadline = System.currentTimeMillis() + timeoutMs
    while (writesInFlight > 0 && System.currentTimeMillis() < deadline) {
      wait(math.max(1L, deadline - System.currentTimeMillis()))
    }
    writesInFlight == 0
  }

  private def reserve(n: Long): Unit = synchronized {
    // One file larger than the bound on its own still goes, alone.
    while (bytesInFlight > 0 && bytesInFlight + n > MaxBytesInFlight) wait()
    bytesInFlight += n
    writesInFlight += 1
  }

  private def release(n: Long): Unit = synchronized {
    bytesInFlight -= n
    notifyAll()
  }

  /** A write is over: written or failed, and the driver told (or told it could not be). */
  private def ended(): Unit = synchronized {
    writesInFlight -= 1
    notifyAll()
  }

  private def executorId: String = Option(SparkEnv.get).map(_.executorId).getOrElse("driver")
}
