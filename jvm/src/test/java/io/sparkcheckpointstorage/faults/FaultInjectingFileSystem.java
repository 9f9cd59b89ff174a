package io.sparkcheckpointstorage.faults;

import java.io.IOException;
import java.net.URI;
import java.util.EnumSet;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.CreateFlag;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.util.Progressable;

/**
 * The local file system under the {@code faulty:} scheme ({@code faulty:///tmp/x} is
 * {@code /tmp/x}), failing the operations its {@link FaultPlan} names: before acting, after
 * acting with the answer lost (as when an object store's PUT succeeded and its response never
 * arrived), or after a stall. Not local to Spark or to the checkpoint storages (its scheme is
 * not {@code file}), so everything goes through Hadoop, with a rename that is atomic.
 *
 * <p>Register it with {@code fs.faulty.impl=io.sparkcheckpointstorage.faults.FaultInjectingFileSystem}
 * and, for {@code FileContext} (Spark's checkpoint file manager),
 * {@code fs.AbstractFileSystem.faulty.impl=io.sparkcheckpointstorage.faults.FaultInjectingFs};
 * the plan's settings are in {@link FaultPlan}.
 */
public class FaultInjectingFileSystem extends RawLocalFileSystem {
  public static final String SCHEME = "faulty";
  private static final URI NAME = URI.create(SCHEME + ":///");
  /** An operation calling another of this file system (create through createNonRecursive) faults once. */
  private static final ThreadLocal<Integer> DEPTH = ThreadLocal.withInitial(() -> 0);

  private FaultPlan plan;

  @Override
  public void initialize(URI uri, Configuration conf) throws IOException {
    super.initialize(uri, conf);
    plan = FaultPlan.forConf(conf);
  }

  @Override
  public URI getUri() {
    return NAME;
  }

  @Override
  public String getScheme() {
    return SCHEME;
  }

  /** One operation of this file system, with its fault (if any) around it. */
  private interface Op<T> {
    T run() throws IOException;
  }

  private <T> T around(String op, Path path, Op<T> body) throws IOException {
    if (DEPTH.get() > 0) return body.run();
    FaultPlan.Fault fault = plan.faultFor(op, path.toUri().getPath());
    DEPTH.set(DEPTH.get() + 1);
    try {
      if (fault == null) return body.run();
      switch (fault.kind) {
        case BEFORE:
          throw new InjectedFaultException(op, "before acting", path);
        case STALL:
          sleep(fault.stallMs);
          return body.run();
        default:
          T result = body.run();
          if (result instanceof java.io.Closeable) ((java.io.Closeable) result).close();
          throw new InjectedFaultException(op, "after acting, its answer lost", path);
      }
    } finally {
      DEPTH.set(DEPTH.get() - 1);
    }
  }

  private static void sleep(long ms) throws IOException {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new java.io.InterruptedIOException("interrupted in an injected stall");
    }
  }

  /** A created file's stream: its close can fail too. */
  private FSDataOutputStream closeFaulting(Path path, FSDataOutputStream out) throws IOException {
    return new FSDataOutputStream(out, null) {
      private boolean closed;

      @Override
      public void close() throws IOException {
        if (closed) return;
        FaultPlan.Fault fault = plan.faultFor("close", path.toUri().getPath());
        if (fault != null && fault.kind == FaultPlan.Kind.BEFORE) {
          // The bytes written so far stay where an interrupted upload or a crash leaves them.
          out.flush();
          throw new InjectedFaultException("close", "before acting", path);
        }
        if (fault != null && fault.kind == FaultPlan.Kind.STALL) sleep(fault.stallMs);
        closed = true;
        out.close();
        if (fault != null && fault.kind == FaultPlan.Kind.AFTER) {
          throw new InjectedFaultException("close", "after acting, its answer lost", path);
        }
      }
    };
  }

  @Override
  public FSDataOutputStream create(Path f, FsPermission permission, boolean overwrite, int bufferSize,
      short replication, long blockSize, Progressable progress) throws IOException {
    return closeFaulting(f, around("create", f,
        () -> super.create(f, permission, overwrite, bufferSize, replication, blockSize, progress)));
  }

  @Override
  public FSDataOutputStream create(Path f, boolean overwrite, int bufferSize, short replication, long blockSize,
      Progressable progress) throws IOException {
    return closeFaulting(f, around("create", f,
        () -> super.create(f, overwrite, bufferSize, replication, blockSize, progress)));
  }

  @Override
  public FSDataOutputStream createNonRecursive(Path f, FsPermission permission, EnumSet<CreateFlag> flags,
      int bufferSize, short replication, long blockSize, Progressable progress) throws IOException {
    return closeFaulting(f, around("create", f,
        () -> super.createNonRecursive(f, permission, flags, bufferSize, replication, blockSize, progress)));
  }

  @Override
  public FSDataOutputStream createNonRecursive(Path f, FsPermission permission, boolean overwrite, int bufferSize,
      short replication, long blockSize, Progressable progress) throws IOException {
    return closeFaulting(f, around("create", f,
        () -> super.createNonRecursive(f, permission, overwrite, bufferSize, replication, blockSize, progress)));
  }

  @Override
  public FSDataInputStream open(Path f, int bufferSize) throws IOException {
    return around("open", f, () -> super.open(f, bufferSize));
  }

  @Override
  public boolean rename(Path src, Path dst) throws IOException {
    return around("rename", src, () -> super.rename(src, dst));
  }

  @Override
  public boolean delete(Path p, boolean recursive) throws IOException {
    return around("delete", p, () -> super.delete(p, recursive));
  }

  @Override
  public FileStatus[] listStatus(Path p) throws IOException {
    return around("listStatus", p, () -> {
      FileStatus[] listed = super.listStatus(p);
      FileStatus[] plain = new FileStatus[listed.length];
      for (int i = 0; i < listed.length; i++) plain[i] = plain(listed[i]);
      return plain;
    });
  }

  /**
   * `status` without the local file system's lazily read permissions, which it reads through a
   * `java.io.File` of the path's URI: one of this scheme is no `file:` URI.
   */
  private static FileStatus plain(FileStatus status) {
    FsPermission permission = status.isDirectory() ? FsPermission.getDirDefault() : FsPermission.getFileDefault();
    return new FileStatus(status.getLen(), status.isDirectory(), status.getReplication(), status.getBlockSize(),
        status.getModificationTime(), status.getAccessTime(), permission, "", "", status.getPath());
  }

  @Override
  public boolean mkdirs(Path p, FsPermission permission) throws IOException {
    return around("mkdirs", p, () -> super.mkdirs(p, permission));
  }

  @Override
  public boolean mkdirs(Path p) throws IOException {
    return around("mkdirs", p, () -> super.mkdirs(p));
  }

  @Override
  public FileStatus getFileStatus(Path p) throws IOException {
    return around("getFileStatus", p, () -> plain(super.getFileStatus(p)));
  }
}
