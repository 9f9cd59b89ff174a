package io.sparkcheckpointstorage.coordinator

import java.net.URI
import java.util.concurrent.{CountDownLatch, TimeUnit}

import org.apache.hadoop.fs.{FSDataInputStream, FSDataOutputStream, Path, RawLocalFileSystem}
import org.apache.hadoop.fs.permission.FsPermission
import org.apache.hadoop.util.Progressable

/**
 * The local file system under the `s3a://pausing/` scheme (an object store to the checkpoint
 * storage: no rename, plain Hadoop calls), where a test can hold a create or an open of
 * chosen files until it lets go: a slow file system on demand.
 */
class PausingFileSystem extends RawLocalFileSystem {
  override def getUri: URI = URI.create("s3a://pausing/")

  override def create(f: Path, permission: FsPermission, overwrite: Boolean, bufferSize: Int,
      replication: Short, blockSize: Long, progress: Progressable): FSDataOutputStream = {
    PausingFileSystem.pauseIfAsked(f)
    super.create(f, permission, overwrite, bufferSize, replication, blockSize, progress)
  }

  override def create(f: Path, overwrite: Boolean, bufferSize: Int, replication: Short, blockSize: Long,
      progress: Progressable): FSDataOutputStream = {
    PausingFileSystem.pauseIfAsked(f)
    super.create(f, overwrite, bufferSize, replication, blockSize, progress)
  }

  override def open(f: Path, bufferSize: Int): FSDataInputStream = {
    PausingFileSystem.pauseIfAsked(f)
    super.open(f, bufferSize)
  }
}

object PausingFileSystem {
  /** Settings that route `s3a://pausing/...` here. */
  val conf: Seq[(String, String)] = Seq(
    "fs.s3a.impl" -> classOf[PausingFileSystem].getName, "fs.s3a.impl.disable.cache" -> "true")

  def root(localDir: java.io.File): String = s"s3a://pausing${localDir.getAbsolutePath}"

  /** One pause: files matching `matches` wait on `release` after counting down `entered`. */
  final class Pause(val matches: Path => Boolean) {
    val entered = new CountDownLatch(1)
    val release = new CountDownLatch(1)
    /** Waits (up to a minute, a guard against a hung test) until a matching call is held. */
    def awaitEntered(): Boolean = entered.await(60, TimeUnit.SECONDS)
  }

  @volatile var pause: Option[Pause] = None

  private def pauseIfAsked(f: Path): Unit = pause.filter(_.matches(f)).foreach { p =>
    p.entered.countDown()
    p.release.await()
  }
}
