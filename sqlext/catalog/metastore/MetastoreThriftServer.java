/*
 * What the two bound metastore launchers share (BoundHiveMetaStore.java for Hive 2.3, BoundHiveMetaStore3.java for
 * Hive 3.1): their command line, the start-up sequence of HiveMetaStore's own main, and the thread-pool Thrift
 * server on one bound address. Compiled together with each launcher, against the jars that launcher runs with, so
 * it uses only what both Hive versions and their Thrift versions have in common.
 */

import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.net.InetSocketAddress;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.ReentrantLock;
import org.apache.hadoop.hive.metastore.HiveMetaStore;
import org.apache.hadoop.hive.metastore.TServerSocketKeepAlive;
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

final class MetastoreThriftServer {

  /** The server settings each launcher reads from its Hive version's configuration keys. */
  record Settings(boolean keepAlive, int minThreads, int maxThreads, boolean compactProtocol, long maxMessageSize) {}

  /** Builds the Thrift server once the metastore's background threads are started. */
  interface ServerFactory {
    TServer create() throws Throwable;
  }

  private MetastoreThriftServer() {}

  /** The address of {@code --host HOST -p PORT}. */
  static InetSocketAddress address(String[] args, String program) {
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
      throw new IllegalArgumentException("Usage: " + program + " --host HOST -p PORT");
    }
    return new InetSocketAddress(host, port);
  }

  /**
   * Starts the metastore's background threads (pause monitor, housekeeping, compactor when configured) as
   * HiveMetaStore's main does, then the server {@code factory} builds, and serves until the process ends.
   */
  static void serve(Object conf, Class<?> confClass, InetSocketAddress address, ServerFactory factory)
      throws Throwable {
    String where = address.getHostString() + ":" + address.getPort();
    HiveMetaStore.LOG.info("Starting hive metastore on " + where);
    Lock startLock = new ReentrantLock();
    Condition startCondition = startLock.newCondition();
    AtomicBoolean startedServing = new AtomicBoolean();
    method("startMetaStoreThreads", confClass, Lock.class, Condition.class, AtomicBoolean.class)
        .invoke(null, conf, startLock, startCondition, startedServing);
    Field remote = HiveMetaStore.class.getDeclaredField("isMetaStoreRemote");
    remote.setAccessible(true);
    remote.setBoolean(null, true);
    TServer server = factory.create();
    method("signalOtherThreadsToStart", TServer.class, Lock.class, Condition.class, AtomicBoolean.class)
        .invoke(null, server, startLock, startCondition, startedServing);
    HiveMetaStore.LOG.info("Started the new metaserver on " + where + "...");
    server.serve();
  }

  /** A thread-pool server of {@code processor} on {@code address}, with HiveMetaStore's protocols and pool. */
  static TServer create(
      InetSocketAddress address, Settings settings, TProcessor processor, TTransportFactory transportFactory)
      throws TTransportException {
    long maxMessageSize = settings.maxMessageSize();
    TProtocolFactory protocolFactory;
    TProtocolFactory inputProtocolFactory;
    if (settings.compactProtocol()) {
      protocolFactory = new TCompactProtocol.Factory();
      inputProtocolFactory = new TCompactProtocol.Factory(maxMessageSize, maxMessageSize);
    } else {
      protocolFactory = new TBinaryProtocol.Factory();
      inputProtocolFactory = new TBinaryProtocol.Factory(true, true, maxMessageSize, maxMessageSize);
    }
    TServerSocket socket = new TServerSocket(address);
    if (settings.keepAlive()) {
      socket = new TServerSocketKeepAlive(socket);
    }
    TThreadPoolServer.Args serverArgs = new TThreadPoolServer.Args(socket)
        .minWorkerThreads(settings.minThreads())
        .maxWorkerThreads(settings.maxThreads());
    serverArgs.processor(processor)
        .transportFactory(transportFactory)
        .protocolFactory(protocolFactory)
        .inputProtocolFactory(inputProtocolFactory);
    TServer server = new TThreadPoolServer(serverArgs);
    server.setServerEventHandler(new RawStoreCleanup());
    return server;
  }

  /** A private static method of HiveMetaStore, made callable. */
  static Method method(String name, Class<?>... parameters) throws NoSuchMethodException {
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
}
