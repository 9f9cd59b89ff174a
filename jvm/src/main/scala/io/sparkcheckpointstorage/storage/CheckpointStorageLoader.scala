package io.sparkcheckpointstorage.storage

import io.sparkcheckpointstorage.layout.SparkSettingKeys
import io.sparkcheckpointstorage.storage.CheckpointStorageOptions._

/**
 * Picks the checkpoint storage of a session, with Flink's precedence
 * (`CheckpointStorageLoader.load`):
 *  1. a storage set in code (encoded under `spark.sql.streaming.checkpointStorage.app.*`),
 *     completed from configuration where it left values unset;
 *  2. the storage named in `spark.sql.streaming.checkpointStorage`: `driver`, `filesystem`
 *     or the class name of a [[CheckpointStorageFactory]];
 *  3. the default: `filesystem` when a checkpoint directory is known
 *     (`spark.sql.streaming.checkpointStorage.checkpointPath`,
 *     `spark.sql.streaming.checkpointLocation`, or the checkpoint location of the query whose
 *     state is being written), else `driver`.
 */
object CheckpointStorageLoader {

  /**
   * @param queryCheckpoint the checkpoint location of the query the storage serves, when known
   */
  def load(conf: String => Option[String], queryCheckpoint: Option[String] = None): CheckpointStorage = {
    val clean: String => Option[String] = k => conf(k).map(_.trim).filter(_.nonEmpty)
    val dir = checkpointDir(clean).orElse(queryCheckpoint)
    fromApplication(clean).map(_.configure(clean))
      .orElse(clean(Storage).map(fromName(_, clean, dir)))
      .getOrElse(default(clean, dir))
  }

  def load(conf: Map[String, String]): CheckpointStorage = load(conf.get _)

  /**
   * For Python, whose py4j passes a `java.util.Map`: building a Scala function there would tie
   * the caller to one Scala binary (Spark 3.5's PyPI build is Scala 2.12, 4.x's 2.13).
   *
   * @param queryCheckpoint the checkpoint location of the query the storage serves; null if none
   */
  def loadFromJava(conf: java.util.Map[String, String], queryCheckpoint: String): CheckpointStorage =
    load(k => Option(conf.get(k)), Option(queryCheckpoint))

  private def fromApplication(conf: String => Option[String]): Option[CheckpointStorage] = {
    def app(k: String) = conf(AppPrefix + k)
    app("kind").map {
      case DriverCheckpointStorage.Name =>
        DriverCheckpointStorage(app("checkpointPath"), app("maxStateSize").map(_.toInt), app("savepointPath"))
      case FileSystemCheckpointStorage.Name =>
        FileSystemCheckpointStorage(app("checkpointPath").getOrElse(throw new IllegalArgumentException(
          s"${AppPrefix}checkpointPath is missing for the file system checkpoint storage set in code")),
          app("fileStateSizeThreshold").map(_.toInt), app("writeBufferSize").map(_.toInt), app("savepointPath"))
      case className => fromName(className, conf, checkpointDir(conf))
    }
  }

  private def fromName(name: String, conf: String => Option[String], dir: Option[String]): CheckpointStorage =
    name.toLowerCase(java.util.Locale.ROOT) match {
      case DriverCheckpointStorage.Name | "jobmanager" => DriverCheckpointStorage().configure(conf)
      case FileSystemCheckpointStorage.Name =>
        val path = dir.getOrElse(CheckpointStorageSettings.StorageName.refuse(name,
          s"the file system storage needs a checkpoint directory: set $CheckpointPath, " +
            s"${SparkSettingKeys.CheckpointLocation}, or the query's checkpointLocation"))
        FileSystemCheckpointStorage(path).configure(conf)
      case _ => fromClass(name, conf)
    }

  /** The class named in [[CheckpointStorageOptions.Storage]], loaded, or the error saying what is allowed. */
  def storageClass(className: String): Class[_] = {
    val loader = Option(Thread.currentThread.getContextClassLoader).getOrElse(getClass.getClassLoader)
    val cls = try Class.forName(className, true, loader) catch {
      case e: ClassNotFoundException =>
        CheckpointStorageSettings.StorageName.refuse(className, "no such class on the classpath", e)
    }
    if (!classOf[CheckpointStorageFactory].isAssignableFrom(cls) && !classOf[CheckpointStorage].isAssignableFrom(cls)) {
      CheckpointStorageSettings.StorageName.refuse(className, "the class implements neither")
    }
    cls
  }

  private def fromClass(className: String, conf: String => Option[String]): CheckpointStorage =
    storageClass(className).getDeclaredConstructor().newInstance() match {
      case f: CheckpointStorageFactory => f.createFromConfig(conf)
      case s: CheckpointStorage => s.configure(conf)
    }

  private def default(conf: String => Option[String], dir: Option[String]): CheckpointStorage =
    dir match {
      case Some(dir) => FileSystemCheckpointStorage(dir).configure(conf)
      case None => DriverCheckpointStorage().configure(conf)
    }

  private def checkpointDir(conf: String => Option[String]): Option[String] =
    conf(CheckpointPath).orElse(conf(SparkSettingKeys.CheckpointLocation))
}
