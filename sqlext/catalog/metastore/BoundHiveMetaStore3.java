/*
 * The Hive 3.1 standalone Metastore Thrift server, listening on one address.
 *
 * Hive 3.1's HiveMetaStore.startMetaStore always listens on every interface (SecurityUtils.getServerSocket with
 * a null host; metastore.thrift.bind.host only exists from Hive 4). This program does what startMetaStore does in
 * the unsecured mode sqlext's hive-site.xml configures -- the same handler, processor, transports, protocols,
 * thread pool and background threads -- with the server socket bound to the address given. It is compiled with
 * MetastoreThriftServer.java against the fetched Hive 3.1 jars (see bound.py) and run with them on the class path.
 *
 *   java -cp <conf>:<compiled>:<hive 3.1 jars>/* BoundHiveMetaStore3 --host 127.0.0.1 -p 9083
 */

import java.net.InetSocketAddress;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hive.metastore.HiveMetaStore.HMSHandler;
import org.apache.hadoop.hive.metastore.IHMSHandler;
import org.apache.hadoop.hive.metastore.TSetIpAddressProcessor;
import org.apache.hadoop.hive.metastore.TUGIBasedProcessor;
import org.apache.hadoop.hive.metastore.conf.MetastoreConf;
import org.apache.hadoop.hive.metastore.conf.MetastoreConf.ConfVars;
import org.apache.hadoop.hive.metastore.security.TUGIContainingTransport;
import org.apache.thrift.TProcessor;
import org.apache.thrift.server.TServer;
import org.apache.thrift.transport.TFramedTransport;
import org.apache.thrift.transport.TTransport;
import org.apache.thrift.transport.TTransportFactory;

public class BoundHiveMetaStore3 {

  public static void main(String[] args) throws Throwable {
    InetSocketAddress address = MetastoreThriftServer.address(args, "BoundHiveMetaStore3");
    Configuration conf = MetastoreConf.newMetastoreConf();
    if (MetastoreConf.getBoolVar(conf, ConfVars.USE_THRIFT_SASL) || MetastoreConf.getBoolVar(conf, ConfVars.USE_SSL)) {
      throw new IllegalStateException(
          "metastore.sasl.enabled and metastore.use.SSL are not supported by sqlext's embedded metastore;"
              + " run your own Hive Metastore for them and set spark.sqlext.metastore.uris.");
    }
    MetastoreThriftServer.serve(conf, Configuration.class, address, () -> server(conf, address));
  }

  private static TServer server(Configuration conf, InetSocketAddress address) throws Throwable {
    boolean framed = MetastoreConf.getBoolVar(conf, ConfVars.USE_THRIFT_FRAMED_TRANSPORT);
    HMSHandler baseHandler = new HMSHandler("new db based metaserver", conf, false);
    IHMSHandler handler = (IHMSHandler) MetastoreThriftServer.method(
            "newRetryingHMSHandler", IHMSHandler.class, Configuration.class)
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
    MetastoreThriftServer.Settings settings = new MetastoreThriftServer.Settings(
        MetastoreConf.getBoolVar(conf, ConfVars.TCP_KEEP_ALIVE),
        MetastoreConf.getIntVar(conf, ConfVars.SERVER_MIN_THREADS),
        MetastoreConf.getIntVar(conf, ConfVars.SERVER_MAX_THREADS),
        MetastoreConf.getBoolVar(conf, ConfVars.USE_THRIFT_COMPACT_PROTOCOL),
        MetastoreConf.getLongVar(conf, ConfVars.SERVER_MAX_MESSAGE_SIZE));
    return MetastoreThriftServer.create(address, settings, processor, transportFactory);
  }

  /** Framing under Hive's UGI transport (Thrift 0.9's factories throw nothing; 0.16's do, see the 2.3 launcher). */
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
