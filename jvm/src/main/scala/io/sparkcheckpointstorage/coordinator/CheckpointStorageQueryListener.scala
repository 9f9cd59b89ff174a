package io.sparkcheckpointstorage.coordinator

import org.apache.hadoop.fs.Path

import org.apache.spark.SparkConf
import org.apache.spark.sql.streaming.StreamingQueryListener

import io.sparkcheckpointstorage.fileio.FileSystemOperations
import io.sparkcheckpointstorage.storage.{CheckpointStorageOptions, CheckpointStorageSettings}

/**
 * Tells the coordinator when a query ends, so that its driver memory is freed, and with
 * `spark.sql.streaming.checkpointStorage.externalizedCleanup=DELETE_ON_CANCELLATION` deletes
 * the checkpoint of a query stopped by the user (Flink's externalized checkpoint cleanup).
 * Registered through `spark.sql.streaming.streamingQueryListeners`.
 */
class CheckpointStorageQueryListener(conf: SparkConf) extends StreamingQueryListener {
  import CheckpointStorageQueryListener._

  private val deleteOnCancellation: Boolean = conf.getOption(CheckpointStorageOptions.ExternalizedCleanup)
    .map(CheckpointStorageSettings.ExternalizedCleanupSetting.parse).contains(DeleteOnCancellation)

  override def onQueryStarted(event: StreamingQueryListener.QueryStartedEvent): Unit = ()
  override def onQueryProgress(event: StreamingQueryListener.QueryProgressEvent): Unit = ()

  override def onQueryTerminated(event: StreamingQueryListener.QueryTerminatedEvent): Unit =
    DriverRuntime.coordinator.foreach { coordinator =>
      val roots = coordinator.queryTerminated(event.id.toString)
      // Stopped by the user (no exception): the cancellation DELETE_ON_CANCELLATION is about.
      if (event.exception.isEmpty && deleteOnCancellation) roots.foreach { root =>
        coordinator.cancelPackCleanup(root)
        coordinator.discard(root)
        FileSystemOperations.deleteRecursively(new Path(root), coordinator.hadoopConf)
        CheckpointCoordinator.log.info(s"Deleted the checkpoint $root of stopped query ${event.id} " +
          s"($DeleteOnCancellation)")
      }
    }
}

object CheckpointStorageQueryListener {
  val ClassName: String = classOf[CheckpointStorageQueryListener].getName
  val RetainOnCancellation = "RETAIN_ON_CANCELLATION"
  val DeleteOnCancellation = "DELETE_ON_CANCELLATION"
}
