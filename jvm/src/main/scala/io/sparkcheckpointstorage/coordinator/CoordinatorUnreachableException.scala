package io.sparkcheckpointstorage.coordinator

import java.io.IOException

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
