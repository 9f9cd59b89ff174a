package io.sparkcheckpointstorage.faults;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import java.util.Set;
import java.util.regex.Pattern;

import org.apache.hadoop.conf.Configuration;

/**
 * Which operations of {@link FaultInjectingFileSystem} fail, and how.
 *
 * <p>Two sources, read from the Hadoop configuration the file system is initialized with:
 * <ul>
 *   <li>{@code fs.faulty.rules.file}: a local text file of rules, read again whenever it
 *   changes, so a test can arm a fault between two batches of a running query. One rule a
 *   line: {@code <op> <kind> <path regex> [times]}, where op is one of {@link #OPS}, kind is
 *   {@code before} (fail without acting), {@code after} (act, then fail: the answer is lost)
 *   or {@code stall=<ms>} (act after a pause), the regex must match the whole path, and
 *   times is how often it fires in all (default 1, {@code *} for always). Lines starting
 *   with {@code #} are comments. A line {@code random <share> <seed> <kinds> <path regex>}
 *   fails that share of every operation on matching paths, in a kind drawn from the
 *   comma-separated kinds, from the seed: the random plan below, armed from the file.</li>
 *   <li>{@code fs.faulty.random.probability} (0 to 1): that share of all operations on paths
 *   matching {@code fs.faulty.random.paths} (default: all) fails, in a kind drawn from
 *   {@code fs.faulty.random.kinds} (default {@code before,after}), from the seed
 *   {@code fs.faulty.random.seed}; {@code fs.faulty.random.ops} limits the operations.</li>
 * </ul>
 *
 * <p>A rule fires at most its times over every JVM that shares {@code fs.faulty.state.dir}
 * (a local folder, default: the rules file's folder): each firing claims a marker file with
 * an atomic create, so a fault meant once happens once, in a driver or an executor, in this
 * application or the next. Every fault injected is appended to {@code fs.faulty.log}, one
 * line each (op, kind, path), for tests and benchmarks to count.
 */
public final class FaultPlan {
  /** The operations a fault can hit. */
  public static final List<String> OPS = Collections.unmodifiableList(Arrays.asList(
      "create", "close", "rename", "delete", "listStatus", "open", "mkdirs", "getFileStatus"));

  /** When a fault hits: before the operation acts, or after it acted (its answer lost). */
  public enum Kind { BEFORE, AFTER, STALL }

  /** What the file system does for one operation. */
  public static final class Fault {
    public final Kind kind;
    public final long stallMs;

    Fault(Kind kind, long stallMs) {
      this.kind = kind;
      this.stallMs = stallMs;
    }
  }

  private static final class Rule {
    final int index;
    final String op;
    final Kind kind;
    final long stallMs;
    final Pattern path;
    final int times;  // -1: always

    Rule(int index, String op, Kind kind, long stallMs, Pattern path, int times) {
      this.index = index;
      this.op = op;
      this.kind = kind;
      this.stallMs = stallMs;
      this.path = path;
      this.times = times;
    }
  }

  private final Path rulesFile;
  private final Path stateDir;
  private final Path log;
  private final double probability;
  private final Random random;
  private final Set<String> randomOps;
  private final List<Kind> randomKinds;
  private final Pattern randomPaths;

  private long rulesStamp = Long.MIN_VALUE;
  private String rulesText = "";
  private List<Rule> rules = Collections.emptyList();
  /** The rules file's random line: its share, draws, kinds and paths (no draws: none). */
  private double fileProbability;
  private Random fileRandom;
  private List<Kind> fileKinds;
  private Pattern filePaths;

  private FaultPlan(Configuration conf) {
    String file = conf.get("fs.faulty.rules.file", "");
    rulesFile = file.isEmpty() ? null : Paths.get(file);
    String state = conf.get("fs.faulty.state.dir", "");
    stateDir = !state.isEmpty() ? Paths.get(state) : rulesFile != null ? rulesFile.toAbsolutePath().getParent() : null;
    String logFile = conf.get("fs.faulty.log", "");
    log = logFile.isEmpty() ? null : Paths.get(logFile);
    probability = conf.getDouble("fs.faulty.random.probability", 0.0);
    random = new Random(conf.getLong("fs.faulty.random.seed", 1L));
    randomOps = new HashSet<>(Arrays.asList(conf.getTrimmedStrings("fs.faulty.random.ops", OPS.toArray(new String[0]))));
    for (String op : randomOps) checkOp(op);
    randomKinds = new ArrayList<>();
    for (String k : conf.getTrimmedStrings("fs.faulty.random.kinds", "before", "after")) randomKinds.add(parseKind(k));
    randomPaths = Pattern.compile(conf.get("fs.faulty.random.paths", ".*"));
  }

  private static final Object LOCK = new Object();
  private static FaultPlan shared;
  private static String sharedKey;

  /**
   * The plan of this JVM for `conf`. One per JVM and settings: Hadoop caches file system
   * instances per user and may create several, and a random plan must draw from one sequence.
   */
  public static FaultPlan forConf(Configuration conf) {
    String key = String.join("\u0000", conf.get("fs.faulty.rules.file", ""), conf.get("fs.faulty.state.dir", ""),
        conf.get("fs.faulty.log", ""), conf.get("fs.faulty.random.probability", ""), conf.get("fs.faulty.random.seed", ""),
        conf.get("fs.faulty.random.ops", ""), conf.get("fs.faulty.random.kinds", ""), conf.get("fs.faulty.random.paths", ""));
    synchronized (LOCK) {
      if (shared == null || !key.equals(sharedKey)) {
        shared = new FaultPlan(conf);
        sharedKey = key;
      }
      return shared;
    }
  }

  /** The fault for `op` on `path`, or null: the operation goes through untouched. */
  public Fault faultFor(String op, String path) throws IOException {
    synchronized (this) {
      for (Rule r : currentRules()) {
        if (r.op.equals(op) && r.path.matcher(path).matches() && claim(r)) {
          record(op, r.kind, path);
          return new Fault(r.kind, r.stallMs);
        }
      }
      if (probability > 0 && randomOps.contains(op) && randomPaths.matcher(path).matches()
          && random.nextDouble() < probability) {
        Kind kind = randomKinds.get(random.nextInt(randomKinds.size()));
        record(op, kind, path);
        return new Fault(kind, 0L);
      }
      if (fileRandom != null && filePaths.matcher(path).matches() && fileRandom.nextDouble() < fileProbability) {
        Kind kind = fileKinds.get(fileRandom.nextInt(fileKinds.size()));
        record(op, kind, path);
        return new Fault(kind, 0L);
      }
      return null;
    }
  }

  private List<Rule> currentRules() throws IOException {
    if (rulesFile == null) return rules;
    long stamp;
    try {
      stamp = Files.getLastModifiedTime(rulesFile).toMillis() ^ Files.size(rulesFile);
    } catch (java.nio.file.NoSuchFileException e) {
      rules = Collections.emptyList();
      rulesText = "";
      return rules;
    }
    if (stamp != rulesStamp) {
      String text = new String(Files.readAllBytes(rulesFile), StandardCharsets.UTF_8);
      if (!text.equals(rulesText)) {
        rules = parse(text);
        rulesText = text;
        fileRandom = null;
        for (String line : text.split("\n")) {
          String[] f = line.trim().split("\\s+");
          if (f.length == 5 && f[0].equals("random")) {
            fileProbability = Double.parseDouble(f[1]);
            fileRandom = new Random(Long.parseLong(f[2]));
            fileKinds = new ArrayList<>();
            for (String k : f[3].split(",")) fileKinds.add(parseKind(k));
            filePaths = Pattern.compile(f[4]);
          }
        }
      }
      rulesStamp = stamp;
    }
    return rules;
  }

  /** Whether rule `r` may fire once more; claims that firing for every JVM sharing the state folder. */
  private boolean claim(Rule r) throws IOException {
    if (r.times < 0) return true;
    if (stateDir == null) throw new IOException("fs.faulty.state.dir is needed for a rule fired a given number of times");
    Files.createDirectories(stateDir);
    // The rule's text names its markers: a new set of rules starts counting anew.
    String id = Integer.toHexString((rulesText.hashCode() * 31) + r.index);
    for (int n = 0; n < r.times; n++) {
      try {
        Files.createFile(stateDir.resolve("fired-" + id + "-" + n));
        return true;
      } catch (FileAlreadyExistsException e) {
        // fired already: try the next slot
      }
    }
    return false;
  }

  private void record(String op, Kind kind, String path) throws IOException {
    if (log == null) return;
    String line = op + "\t" + kind.name().toLowerCase(Locale.ROOT) + "\t" + path + "\n";
    Files.write(log, line.getBytes(StandardCharsets.UTF_8), StandardOpenOption.CREATE, StandardOpenOption.APPEND);
  }

  static List<Rule> parse(String text) {
    List<Rule> parsed = new ArrayList<>();
    String[] lines = text.split("\n");
    for (int i = 0; i < lines.length; i++) {
      String line = lines[i].trim();
      if (line.isEmpty() || line.startsWith("#") || line.startsWith("random ")) continue;
      String[] f = line.split("\\s+");
      if (f.length < 3 || f.length > 4) {
        throw new IllegalArgumentException("fault rule " + (i + 1) + " is not '<op> <kind> <path regex> [times]': " + line);
      }
      checkOp(f[0]);
      Kind kind = parseKind(f[1]);
      long stall = kind == Kind.STALL ? Long.parseLong(f[1].substring("stall=".length())) : 0L;
      int times = f.length < 4 ? 1 : f[3].equals("*") ? -1 : Integer.parseInt(f[3]);
      parsed.add(new Rule(i, f[0], kind, stall, Pattern.compile(f[2]), times));
    }
    return parsed;
  }

  private static Kind parseKind(String k) {
    if (k.equals("before")) return Kind.BEFORE;
    if (k.equals("after")) return Kind.AFTER;
    if (k.startsWith("stall=")) return Kind.STALL;
    throw new IllegalArgumentException("fault kind must be before, after or stall=<ms>: " + k);
  }

  private static void checkOp(String op) {
    if (!OPS.contains(op)) throw new IllegalArgumentException("fault op must be one of " + OPS + ": " + op);
  }
}
