package io.sparkcheckpointstorage.coordinator

import org.apache.spark.SparkConf
import org.apache.spark.sql.streaming.StreamingQueryListener

import io.sparkcheckpointstorage.storage.{CheckpointStorageOptions, CheckpointStorageSettings}

/**
 * Tells the coordinator when a query ends, so that its driver memory is freed and, with
 * `spark.sql.streaming.checkpointStorage.externalizedCleanup=DELETE_ON_CANCELLATION`, the
 * checkpoint of a query stopped by the user is deleted. Registered through
 * `spark.sql.streaming.streamingQueryListeners`.
 */
class CheckpointStorageQueryListener(conf: SparkConf) extends StreamingQueryListener {
  import CheckpointStorageQueryListener._

  private val deleteOnCancellation: Boolean = conf.getOption(CheckpointStorageOptions.ExternalizedCleanup)
    .map(CheckpointStorageSettings.ExternalizedCleanupSetting.parse).contains(DeleteOnCancellation)

  override def onQueryStarted(event: StreamingQueryListener.QueryStartedEvent): Unit = ()
  override def onQueryProgress(event: StreamingQueryListener.QueryProgressEvent): Unit = ()

  override def onQueryTerminated(event: StreamingQueryListener.QueryTerminatedEvent): Unit =
    CheckpointCoordinator.driverInstance.foreach(
      _.queryTerminated(event.id.toString, event.exception.isEmpty, deleteOnCancellation))
}

object CheckpointStorageQueryListener {
  val ClassName: String = classOf[CheckpointStorageQueryListener].getName
  val RetainOnCancellation = "RETAIN_ON_CANCELLATION"
  val DeleteOnCancellation = "DELETE_ON_CANCELLATION"
}
