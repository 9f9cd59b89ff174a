// Spark 3.5-4.2: maintenance is `doMaintenance` alone, which the provider overrides itself.
package org.apache.spark.sql.checkpointstorage.shim

/** Up to Spark 4.2, maintenance is `doMaintenance` alone. */
trait MaintenanceShim
