package io.sparkcheckpointstorage.formats

import java.io.IOException

import io.sparkcheckpointstorage.BuildInfo

/**
 * A kind of file spark-checkpoint-storage writes, and the versions of it this release reads.
 *
 * Every such file names its format version: the binary ones in their magic bytes, the text
 * ones in a `formatVersion` field. A file of a newer version than this release knows is
 * refused before anything in it is used, in one sentence naming the release to upgrade to.
 * That release comes from the file itself, since an older release cannot know it: text
 * files carry it in a `minReaderVersion` field, and every later version of a binary format
 * must write it (Java's `writeUTF`) right after its magic bytes.
 *
 * @param name         what users call the file, for messages ("state pack")
 * @param current      the version this release writes
 * @param oldestRead   the oldest version this release reads
 * @param lastReaders  for versions before `oldestRead`: the last release that read each one
 */
final case class FileFormat(name: String, current: Int, oldestRead: Int, lastReaders: Map[Int, String] = Map.empty) {

  /** The version a text file's `formatVersion` field gives (None: written before it had one, version 1). */
  def versionIn(file: String, field: Option[String]): Int = field match {
    case None => 1
    case Some(v) => scala.util.Try(v.trim.toInt).getOrElse(throw new UnsupportedFormatException(file,
      s"$file names ${FileFormat.VersionField} '$v', not a number: it is damaged, or was not written by spark-checkpoint-storage."))
  }

  /**
   * Checks the format version `version` of `file`; `minReader` gives the oldest release that
   * reads it, as the file names it (read only when the version is newer than this release's).
   */
  def check(file: String, version: Int, minReader: => Option[String]): Unit = {
    if (version > current) {
      val release = try minReader catch { case _: IOException | _: RuntimeException => None }
      throw new UnsupportedFormatException(file, s"$file is a $name of format version $version, and " +
        s"spark-checkpoint-storage ${FileFormat.thisRelease} reads versions ${FileFormat.range(oldestRead, current)} " +
        s"of it: upgrade spark-checkpoint-storage to at least ${release.getOrElse(s"a release that reads version $version")}.")
    }
    if (version < oldestRead) {
      val migrate = lastReaders.get(version) match {
        case Some(r) => s"take a savepoint of it with spark-checkpoint-storage $r, the last release that reads it, " +
          "and restart from the savepoint"
        case None => "no release of spark-checkpoint-storage reads it: restart the query from a new checkpoint location"
      }
      throw new UnsupportedFormatException(file, s"$file is a $name of format version $version, and " +
        s"spark-checkpoint-storage ${FileFormat.thisRelease} reads versions ${FileFormat.range(oldestRead, current)} " +
        s"of it: $migrate.")
    }
  }
}

object FileFormat {
  /**
   * The oldest release that reads every file this release writes: what the files name as
   * their `minReaderVersion`. It moves only when a format version does.
   */
  val MinReaderVersion = "0.1.0"

  /** Our state files (`provider.StateFileFormat`): magic `SCSHEAP` and the version as one byte. */
  val StateFile: FileFormat = FileFormat("state file", current = 2, oldestRead = 2)
  /** Packs of inline state files (`packs.StatePack`): magic `SCSPACK` and the version as one ASCII digit. */
  val Pack: FileFormat = FileFormat("state pack", current = 1, oldestRead = 1)
  /** A checkpoint's `checkpoint-storage` marker (`layout.StorageMarker`). */
  val Marker: FileFormat = FileFormat("storage marker", current = 1, oldestRead = 1)
  /** A savepoint's `_savepoint` manifest. */
  val SavepointManifest: FileFormat = FileFormat("savepoint manifest", current = 1, oldestRead = 1)
  /** A canonical savepoint's `_savepoint` manifest. */
  val CanonicalSavepointManifest: FileFormat = FileFormat("canonical savepoint manifest", current = 1, oldestRead = 1)
  /** A migrated checkpoint's `_migration` manifest. */
  val MigrationManifest: FileFormat = FileFormat("migration manifest", current = 1, oldestRead = 1)

  val all: Seq[FileFormat] = Seq(StateFile, Pack, Marker, SavepointManifest, CanonicalSavepointManifest, MigrationManifest)

  /** The JSON and marker fields naming a text file's format. */
  val VersionField = "formatVersion"
  val MinReaderField = "minReaderVersion"

  private def thisRelease: String = try BuildInfo.version catch { case _: IllegalStateException => "(unknown version)" }

  private def range(from: Int, to: Int): String = if (from == to) s"$from only" else s"$from to $to"
}

