/*
 * The Hive 3.1 standalone Metastore Thrift server, listening on one address.
 *
 * Hive 3.1's HiveMetaStore.startMetaStore always listens on every interface (SecurityUtils.getServerSocket with
 * a null host; metastore.thrift.bind.host only exists from Hive 4). This program does what startMetaStore does in
 * the unsecured mode sqlext's hive-site.xml configures -- the same handler, processor, transports, protocols,
 * thread pool and background threads -- with the server socket bound to the address given. It is compiled
 * against the fetched Hive 3.1 jars (see bound.py) and run with them on the class path.
 *
 *   java -cp <conf>:<compiled>:<hive 3.1 jars>/* BoundHiveMetaStore3 --host 127.0.0.1 -p 9083
 */

import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.net.InetSocketAddress;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.ReentrantLock;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hive.metastore.HiveMetaStore;
import org.apache.hadoop.hive.metastore.HiveMetaStore.HMSHandler;
import org.apache.hadoop.hive.metastore.IHMSHandler;
import org.apache.hadoop.hive.metastore.TServerSocketKeepAlive;
import org.apache.hadoop.hive.metastore.TSetIpAddressProcessor;
import org.apache.hadoop.hive.metastore.TUGIBasedProcessor;
import org.apache.hadoop.hive.metastore.conf.MetastoreConf;
import org.apache.hadoop.hive.metastore.conf.MetastoreConf.ConfVars;
import org.apache.hadoop.hive.metastore.security.TUGIContainingTransport;
import org.apache.thrift.TProcessor;
import org.apache.thrift.protocol.TBinaryProtocol;
import org.apache.thrift.protocol.TCompactProtocol;
import org.apache.thrift.protocol.TProtocol;
import org.apache.thrift.protocol.TProtocolFactory;
import org.apache.thrift.server.ServerContext;
import org.apache.thrift.server.TServer;
import org.apache.thrift.server.TServerEventHandler;
import org.apache.thrift.server.TThreadPoolServer;
import org.apache.thrift.transport.TFramedTransport;
import org.apache.thrift.transport.TServerSocket;
import org.apache.thrift.transport.TTransport;
import org.apache.thrift.transport.TTransportException;
import org.apache.thrift.transport.TTransportFactory;

public class BoundHiveMetaStore3 {

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
      throw new IllegalArgumentException("Usage: BoundHiveMetaStore3 --host HOST -p PORT");
    }
    Configuration conf = MetastoreConf.newMetastoreConf();
    if (MetastoreConf.getBoolVar(conf, ConfVars.USE_THRIFT_SASL) || MetastoreConf.getBoolVar(conf, ConfVars.USE_SSL)) {
      throw new IllegalStateException(
          "metastore.sasl.enabled and metastore.use.SSL are not supported by sqlext's embedded metastore;"
              + " run your own Hive Metastore for them and set spark.sqlext.metastore.uris.");
    }
    HiveMetaStore.LOG.info("Starting hive metastore on " + host + ":" + port);
    Lock startLock = new ReentrantLock();
    Condition startCondition = startLock.newCondition();
    AtomicBoolean startedServing = new AtomicBoolean();
    // The pause monitor, housekeeping and (when configured) compactor threads, as startMetaStore starts them.
    method("startMetaStoreThreads", Configuration.class, Lock.class, Condition.class, AtomicBoolean.class)
        .invoke(null, conf, startLock, startCondition, startedServing);
    TServer server = server(conf, new InetSocketAddress(host, port));
    method("signalOtherThreadsToStart", TServer.class, Lock.class, Condition.class, AtomicBoolean.class)
        .invoke(null, server, startLock, startCondition, startedServing);
    HiveMetaStore.LOG.info("Started the new metaserver on " + host + ":" + port + "...");
    server.serve();
  }

  private static TServer server(Configuration conf, InetSocketAddress address) throws Throwable {
    Field remote = HiveMetaStore.class.getDeclaredField("isMetaStoreRemote");
    remote.setAccessible(true);
    remote.setBoolean(null, true);

    long maxMessageSize = MetastoreConf.getLongVar(conf, ConfVars.SERVER_MAX_MESSAGE_SIZE);
    boolean framed = MetastoreConf.getBoolVar(conf, ConfVars.USE_THRIFT_FRAMED_TRANSPORT);
    TProtocolFactory protocolFactory;
    TProtocolFactory inputProtocolFactory;
    if (MetastoreConf.getBoolVar(conf, ConfVars.USE_THRIFT_COMPACT_PROTOCOL)) {
      protocolFactory = new TCompactProtocol.Factory();
      inputProtocolFactory = new TCompactProtocol.Factory(maxMessageSize, maxMessageSize);
    } else {
      protocolFactory = new TBinaryProtocol.Factory();
      inputProtocolFactory = new TBinaryProtocol.Factory(true, true, maxMessageSize, maxMessageSize);
    }
    HMSHandler baseHandler = new HMSHandler("new db based metaserver", conf, false);
    IHMSHandler handler = (IHMSHandler) method("newRetryingHMSHandler", IHMSHandler.class, Configuration.class)
        .invoke(null, baseHandler, conf);
    TProcessor processor;
    TTransportFactory transportFactory;
    if (MetastoreConf.getBoolVar(conf, ConfVars.EXECUTE_SET_UGI)) {
      processor = new TUGIBasedProcessor<IHMSHandler>(handler);
      TTransportFactory ugi = new TUGIContainingTransport.Factory();
      transportFactory = framed ? new Chained(new TFramedTransport.Factory(), ugi) : ugi;
    } else {
      processor = new TSetIpAddressProcessor<IHMSHandler>(handler);
      transportFactory = framed ? new TFramedTransport.Factory() : new TTransportFactory();
    }
    TServerSocket socket = new TServerSocket(address);
    if (MetastoreConf.getBoolVar(conf, ConfVars.TCP_KEEP_ALIVE)) {
      socket = new TServerSocketKeepAlive(socket);
    }
    TThreadPoolServer.Args serverArgs = new TThreadPoolServer.Args(socket)
        .minWorkerThreads(MetastoreConf.getIntVar(conf, ConfVars.SERVER_MIN_THREADS))
        .maxWorkerThreads(MetastoreConf.getIntVar(conf, ConfVars.SERVER_MAX_THREADS));
    serverArgs.processor(processor)
        .transportFactory(transportFactory)
        .protocolFactory(protocolFactory)
        .inputProtocolFactory(inputProtocolFactory);
    TServer server = new TThreadPoolServer(serverArgs);
    server.setServerEventHandler(new RawStoreCleanup());
    return server;
  }

  private static Method method(String name, Class<?>... parameters) throws NoSuchMethodException {
    Method found = HiveMetaStore.class.getDeclaredMethod(name, parameters);
    found.setAccessible(true);
    return found;
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
        method("cleanupRawStore").invoke(null);
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
    public TTransport getTransport(TTransport transport) {
      return inner.getTransport(outer.getTransport(transport));
    }
  }
}
