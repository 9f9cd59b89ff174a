package org.apache.spark.checkpointstorage.ui

import org.apache.spark.{SparkConf, SparkContext}
import org.apache.spark.scheduler.{SparkListener, SparkListenerEvent}
import org.apache.spark.status.{AppHistoryServerPlugin, ElementTrackingStore}
import org.apache.spark.ui.SparkUI
import org.apache.spark.util.kvstore.KVStore

import io.sparkcheckpointstorage.monitoring.{CheckpointsStatusListener, QueryCheckpoints}

/**
 * The bridge between the checkpoints tab and Spark's `private[spark]` UI: the live driver's
 * listener bus, status store and web UI. Everything else of the tab is in
 * `io.sparkcheckpointstorage.monitoring`.
 */
object CheckpointsUi {
  /** Posts `event` on the driver's listener bus (and so into its event log). */
  def post(sc: SparkContext, event: SparkListenerEvent): Unit = sc.listenerBus.post(event)

  /**
   * Keeps the tab's facts in the live driver's status store through `listener` (made here
   * around that store), and adds the tab to its web UI when it has one; `driverHeld` gives
   * the inline bytes the driver holds now and their bound.
   */
  def attach(sc: SparkContext, listener: KVStore => CheckpointsStatusListener,
      driverHeld: () => (Long, Long)): CheckpointsStatusListener = {
    val l = listener(sc.statusStore.store)
    sc.listenerBus.addToStatusQueue(l)
    sc.ui.foreach(ui => ui.attachTab(new CheckpointsTab(ui, Some(driverHeld))))
    l
  }
}

/**
 * Rebuilds the checkpoints tab in Spark's History Server from the events of the event log
 * (registered in `META-INF/services/org.apache.spark.status.AppHistoryServerPlugin`).
 */
class CheckpointsHistoryServerPlugin extends AppHistoryServerPlugin {
  override def createListeners(conf: SparkConf, store: ElementTrackingStore): Seq[SparkListener] =
    Seq(new CheckpointsStatusListener(store, conf))

  override def setupUI(ui: SparkUI): Unit = {
    // Only applications that ran streaming queries get the tab.
    if (ui.store.store.count(classOf[QueryCheckpoints]) > 0) ui.attachTab(new CheckpointsTab(ui, None))
  }
}
