// Spark 3.5: the web UI serves javax.servlet requests.
package org.apache.spark.sql.checkpointstorage.shim

/** Spark 3.5's web UI serves javax.servlet requests (4.0+: jakarta.servlet). */
private[spark] object ServletShim {
  type Request = javax.servlet.http.HttpServletRequest
}
