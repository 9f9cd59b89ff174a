package io.sparkcheckpointstorage.migration

import org.apache.spark.sql.execution.streaming.state.StateStoreProvider

import io.sparkcheckpointstorage.layout.SparkSettingKeys

/** The state store providers a migration writes with, by their short names. */
object TargetProvider {
  val Heap = "io.sparkcheckpointstorage.provider.HeapStateStoreProvider"
  val Hdfs: String = SparkSettingKeys.DefaultProvider
  val RocksDb = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"

  val ShortNames: Map[String, String] = Map("heap" -> Heap, "hdfs" -> Hdfs, "rocksdb" -> RocksDb)

  /** The class of `nameOrClass` (`heap`, `hdfs`, `rocksdb` or a class name), checked loadable. */
  def resolve(nameOrClass: String): String = {
    val className = ShortNames.getOrElse(nameOrClass.trim.toLowerCase(java.util.Locale.ROOT), nameOrClass.trim)
    checkLoadable(className, "target")
    className
  }

  /** A provider class this JVM can instantiate, or an error naming it and its role. */
  def checkLoadable(className: String, role: String): Unit = {
    val loader = Option(Thread.currentThread().getContextClassLoader).getOrElse(getClass.getClassLoader)
    val cls = try Class.forName(className, false, loader) catch {
      case _: ClassNotFoundException => throw new MigrationException(
        s"The $role state store provider $className is not on the classpath, so its state cannot " +
          s"be ${if (role == "source") "read" else "written"}. Use one of " +
          s"${ShortNames.keys.toSeq.sorted.mkString(", ")} or add the provider's jar to spark.jars.")
    }
    if (!classOf[StateStoreProvider].isAssignableFrom(cls)) {
      throw new MigrationException(s"The $role state store provider $className is not a " +
        "org.apache.spark.sql.execution.streaming.state.StateStoreProvider.")
    }
  }
}
