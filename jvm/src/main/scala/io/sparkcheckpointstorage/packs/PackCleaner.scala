package io.sparkcheckpointstorage.packs

import java.util.concurrent.{Executors, ThreadFactory, TimeoutException, TimeUnit}

import scala.collection.mutable
import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.slf4j.LoggerFactory

import io.sparkcheckpointstorage.fileio.FileSystemOperations

/**
 * Deletes packs that no longer hold live state, on a background thread, so the commit path
 * only writes (on an object store a delete is a network round trip per pack).
 *
 * Packs of one checkpoint are deleted strictly oldest first, and a failed delete stops that
 * checkpoint's queue until the next [[schedule]] retries it: a restore treats a gap in the
 * pack numbering as a lost pack, so a newer pack must never go while an older one stays.
 */
final class PackCleaner(hadoopConf: Configuration) {
  import PackCleaner._

  /** Checkpoint root -> its obsolete packs, oldest first, not yet deleted. */
  private val queues = mutable.HashMap[String, mutable.Queue[Path]]()

  private val executor = Executors.newSingleThreadExecutor(new ThreadFactory {
    override def newThread(r: Runnable): Thread = {
      val t = new Thread(r, "checkpoint-storage-pack-cleaner")
      t.setDaemon(true)
      t
    }
  })

  /** Queues `packs` (oldest first) of `root` for deletion and starts a pass over `root`. */
  def schedule(root: String, packs: Seq[Path]): Unit = {
    queues.synchronized(queues.getOrElseUpdate(root, mutable.Queue()) ++= packs)
    executor.execute(() => drain(root))
  }

  /** Waits until every pass scheduled so far has run; true if it did within the timeout. */
  def awaitIdle(timeoutMs: Long): Boolean =
    try {
      executor.submit(new Runnable { def run(): Unit = () }).get(timeoutMs, TimeUnit.MILLISECONDS)
      true
    } catch {
      case _: TimeoutException => false
    }

  /**
   * Deletes, in the background, the hidden temporary files that failed writes of packs up to
   * `upTo` left under `root`'s packs (a lost answer, a crash between write and rename). They
   * never shadow a pack (readers take `<n>.pack` only), but they take space. A failed delete
   * is logged and left for the next pass.
   */
  def removeLeftovers(root: String, upTo: Long): Unit = executor.execute { () =>
    try {
      val dir = PackDirectory.dir(root)
      FileSystemOperations.listNames(dir, hadoopConf).filter(n => StatePack.leftoverSeq(n).exists(_ <= upTo))
        .foreach(n => FileSystemOperations.delete(new Path(dir, n), hadoopConf))
    } catch {
      case NonFatal(e) => log.warn(s"Could not delete the leftovers of failed pack writes of $root: $e")
    }
  }

  /** Forgets `root`'s queue: its checkpoint is being deleted as a whole. */
  def forget(root: String): Unit = queues.synchronized(queues.remove(root))

  private def drain(root: String): Unit = {
    var next = queues.synchronized(queues.get(root).flatMap(_.headOption))
    while (next.isDefined) {
      val pack = next.get
      try FileSystemOperations.delete(pack, hadoopConf) catch {
        case NonFatal(e) =>
          log.warn(s"Could not delete obsolete state pack $pack (retried after the next commit): $e")
          return
      }
      next = queues.synchronized {
        queues.get(root).flatMap { q =>
          if (q.headOption.contains(pack)) q.dequeue()
          if (q.isEmpty) { queues.remove(root); None } else q.headOption
        }
      }
    }
  }
}

private object PackCleaner {
  private val log = LoggerFactory.getLogger(classOf[PackCleaner])
}
