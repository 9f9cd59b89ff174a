package io.sparkcheckpointstorage.faults;

import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.DelegateToFileSystem;

/**
 * {@link FaultInjectingFileSystem} for Hadoop's {@code FileContext}, which Spark's checkpoint
 * file manager and the storages' rename-based writes use:
 * {@code fs.AbstractFileSystem.faulty.impl=io.sparkcheckpointstorage.faults.FaultInjectingFs}.
 */
public class FaultInjectingFs extends DelegateToFileSystem {
  public FaultInjectingFs(URI uri, Configuration conf) throws IOException, URISyntaxException {
    super(uri, new FaultInjectingFileSystem(), conf, FaultInjectingFileSystem.SCHEME, false);
  }

  @Override
  public int getUriDefaultPort() {
    return -1;
  }
}
