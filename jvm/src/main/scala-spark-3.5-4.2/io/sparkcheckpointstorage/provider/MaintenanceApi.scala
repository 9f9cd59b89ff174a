package io.sparkcheckpointstorage.provider

/** Up to Spark 4.2, maintenance is `doMaintenance` alone. */
trait MaintenanceApi
