package io.sparkcheckpointstorage.formats

import java.io.IOException

/**
 * A file is in a format version this release does not read: newer (the message names the
 * release to upgrade to) or older than any it reads. `file` names it.
 */
class UnsupportedFormatException(val file: String, message: String) extends IOException(message)
