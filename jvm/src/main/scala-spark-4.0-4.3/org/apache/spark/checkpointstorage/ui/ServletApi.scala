package org.apache.spark.checkpointstorage.ui

/** Spark 4's web UI serves jakarta.servlet requests (3.5: javax.servlet). */
private[ui] object ServletApi {
  type Request = jakarta.servlet.http.HttpServletRequest
}
