package org.apache.spark.checkpointstorage.ui

/** Spark 3.5's web UI serves javax.servlet requests (4.0+: jakarta.servlet). */
private[ui] object ServletApi {
  type Request = javax.servlet.http.HttpServletRequest
}
