/*
 * The Hive 2.3 Metastore Thrift server of pyspark's jars, listening on one address.
 *
 * Hive 2.3's HiveMetaStore.main always listens on every interface (its server socket is made with a
 * null host, and hive.metastore.thrift.bind.host only exists from Hive 4). This program does what
 * HiveMetaStore.main does in the unsecured mode sqlext's hive-site.xml configures -- the same handler,
 * processor, transports, protocols, thread pool and background threads -- with the server socket bound
 * to the address given. sqlext runs it with Java's source-file launcher (java BoundHiveMetaStore.java).
 *
 *   java -cp <conf>:<pyspark jars>/* BoundHiveMetaStore.java --host 127.0.0.1 -p 9083
 */

import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.net.InetSocketAddress;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.ReentrantLock;
import org.apache.hadoop.hive.conf.HiveConf;
import org.apache.hadoop.hive.conf.HiveConf.ConfVars;
import org.apache.hadoop.hive.metastore.HiveMetaStore;
import org.apache.hadoop.hive.metastore.HiveMetaStore.HMSHandler;
import org.apache.hadoop.hive.metastore.IHMSHandler;
import org.apache.hadoop.hive.metastore.TServerSocketKeepAlive;
import org.apache.hadoop.hive.metastore.TSetIpAddressProcessor;
import org.apache.hadoop.hive.metastore.TUGIBasedProcessor;
import org.apache.hadoop.hive.thrift.TUGIContainingTransport;
import org.apache.hive.common.util.HiveStringUtils;
import org.apache.thrift.TProcessor;
import org.apache.thrift.protocol.TBinaryProtocol;
import org.apache.thrift.protocol.TCompactProtocol;
import org.apache.thrift.protocol.TProtocol;
import org.apache.thrift.protocol.TProtocolFactory;
import org.apache.thrift.server.ServerContext;
import org.apache.thrift.server.TServer;
import org.apache.thrift.server.TServerEventHandler;
import org.apache.thrift.server.TThreadPoolServer;
import org.apache.thrift.transport.TServerSocket;
import org.apache.thrift.transport.TTransport;
import org.apache.thrift.transport.TTransportException;
import org.apache.thrift.transport.TTransportFactory;
import org.apache.thrift.transport.layered.TFramedTransport;

public class BoundHiveMetaStore {

  public static void main(String[] args) throws Throwable {
    String host = null;
    int port = -1;
    for (int i = 0; i + 1 < args.length; i += 2) {
      if (args[i].equals("--host")) {
        host = args[i + 1];
      } else if (args[i].equals("-p")) {
        port = Integer.parseInt(args[i + 1]);
      } else {
        throw new IllegalArgumentException("Unknown argument " + args[i] + "; expected --host HOST -p PORT");
      }
    }
    if (host == null || port < 0) {
      throw new IllegalArgumentException("Usage: BoundHiveMetaStore --host HOST -p PORT");
    }
    HiveConf.setLoadMetastoreConfig(true);
    HiveConf conf = new HiveConf(HMSHandler.class);
    HiveStringUtils.startupShutdownMessage(HiveMetaStore.class, args, HiveMetaStore.LOG);
    refuseSecureModes(conf);
    HiveMetaStore.LOG.info("Starting hive metastore on " + host + ":" + port);

    Lock startLock = new ReentrantLock();
    Condition startCondition = startLock.newCondition();
    AtomicBoolean startedServing = new AtomicBoolean();
    // The JVM pause monitor and, when configured, the compactor threads, as HiveMetaStore.main starts them.
    hiveMetaStoreMethod("startMetaStoreThreads", HiveConf.class, Lock.class, Condition.class, AtomicBoolean.class)
        .invoke(null, conf, startLock, startCondition, startedServing);
    TServer server = server(conf, new InetSocketAddress(host, port));
    hiveMetaStoreMethod("signalOtherThreadsToStart", TServer.class, Lock.class, Condition.class, AtomicBoolean.class)
        .invoke(null, server, startLock, startCondition, startedServing);
    HiveMetaStore.LOG.info("Started the new metaserver on " + host + ":" + port + "...");
    server.serve();
  }

  /** Kerberos (SASL) and SSL need keytabs and keystores sqlext never configures: refused, not half-served. */
  private static void refuseSecureModes(HiveConf conf) {
    if (conf.getBoolVar(ConfVars.METASTORE_USE_THRIFT_SASL) || conf.getBoolVar(ConfVars.HIVE_METASTORE_USE_SSL)) {
      throw new IllegalStateException(
          "hive.metastore.sasl.enabled and hive.metastore.use.SSL are not supported by sqlext's embedded metastore;"
              + " run your own Hive Metastore for them and set spark.sqlext.metastore.uris.");
    }
  }

  private static TServer server(HiveConf conf, InetSocketAddress address) throws Throwable {
    Field remote = HiveMetaStore.class.getDeclaredField("isMetaStoreRemote");
    remote.setAccessible(true);
    remote.setBoolean(null, true);

    long maxMessageSize = conf.getLongVar(ConfVars.METASTORESERVERMAXMESSAGESIZE);
    boolean framed = conf.getBoolVar(ConfVars.METASTORE_USE_THRIFT_FRAMED_TRANSPORT);
    TProtocolFactory protocolFactory;
    TProtocolFactory inputProtocolFactory;
    if (conf.getBoolVar(ConfVars.METASTORE_USE_THRIFT_COMPACT_PROTOCOL)) {
      protocolFactory = new TCompactProtocol.Factory();
      inputProtocolFactory = new TCompactProtocol.Factory(maxMessageSize, maxMessageSize);
    } else {
      protocolFactory = new TBinaryProtocol.Factory();
      inputProtocolFactory = new TBinaryProtocol.Factory(true, true, maxMessageSize, maxMessageSize);
    }
    HMSHandler baseHandler = new HMSHandler("new db based metaserver", conf, false);
    IHMSHandler handler = HiveMetaStore.newRetryingHMSHandler(baseHandler, conf);
    TProcessor processor;
    TTransportFactory transportFactory;
    if (conf.getBoolVar(ConfVars.METASTORE_EXECUTE_SET_UGI)) {
      processor = new TUGIBasedProcessor<IHMSHandler>(handler);
      TTransportFactory ugi = new TUGIContainingTransport.Factory();
      transportFactory = framed ? new Chained(new TFramedTransport.Factory(), ugi) : ugi;
    } else {
      processor = new TSetIpAddressProcessor<IHMSHandler>(handler);
      transportFactory = framed ? new TFramedTransport.Factory() : new TTransportFactory();
    }
    TServerSocket socket = new TServerSocket(address);
    if (conf.getBoolVar(ConfVars.METASTORE_TCP_KEEP_ALIVE)) {
      socket = new TServerSocketKeepAlive(socket);
    }
    TThreadPoolServer.Args serverArgs = new TThreadPoolServer.Args(socket)
        .minWorkerThreads(conf.getIntVar(ConfVars.METASTORESERVERMINTHREADS))
        .maxWorkerThreads(conf.getIntVar(ConfVars.METASTORESERVERMAXTHREADS));
    serverArgs.processor(processor)
        .transportFactory(transportFactory)
        .protocolFactory(protocolFactory)
        .inputProtocolFactory(inputProtocolFactory);
    TServer server = new TThreadPoolServer(serverArgs);
    server.setServerEventHandler(new RawStoreCleanup());
    return server;
  }

  private static Method hiveMetaStoreMethod(String name, Class<?>... parameters) throws NoSuchMethodException {
    Method method = HiveMetaStore.class.getDeclaredMethod(name, parameters);
    method.setAccessible(true);
    return method;
  }

  /** As HiveMetaStore's own handler: a closed connection releases its thread's RawStore. */
  private static final class RawStoreCleanup implements TServerEventHandler {
    @Override
    public void preServe() {}

    @Override
    public ServerContext createContext(TProtocol input, TProtocol output) {
      return null;
    }

    @Override
    public void deleteContext(ServerContext context, TProtocol input, TProtocol output) {
      try {
        hiveMetaStoreMethod("cleanupRawStore").invoke(null);
      } catch (ReflectiveOperationException e) {
        HiveMetaStore.LOG.warn("Could not clean up the thread's RawStore", e);
      }
    }

    @Override
    public void processContext(ServerContext context, TTransport input, TTransport output) {}
  }

  private static final class Chained extends TTransportFactory {
    private final TTransportFactory outer;
    private final TTransportFactory inner;

    Chained(TTransportFactory outer, TTransportFactory inner) {
      this.outer = outer;
      this.inner = inner;
    }

    @Override
    public TTransport getTransport(TTransport transport) throws TTransportException {
      return inner.getTransport(outer.getTransport(transport));
    }
  }
}
