// Spark 4.0-4.3: the web UI serves jakarta.servlet requests.
package org.apache.spark.sql.checkpointstorage.shim

/** Spark 4's web UI serves jakarta.servlet requests (3.5: javax.servlet). */
private[spark] object ServletShim {
  type Request = jakarta.servlet.http.HttpServletRequest
}
