/*
 * The Hive 2.3 Metastore Thrift server of pyspark's jars, listening on one address.
 *
 * Hive 2.3's HiveMetaStore.main always listens on every interface (its server socket is made with a
 * null host, and hive.metastore.thrift.bind.host only exists from Hive 4). This program does what
 * HiveMetaStore.main does in the unsecured mode sqlext's hive-site.xml configures -- the same handler,
 * processor, transports, protocols, thread pool and background threads -- with the server socket bound
 * to the address given. It is compiled with MetastoreThriftServer.java against pyspark's jars (bound.py).
 *
 *   java -cp <conf>:<compiled>:<pyspark jars>/* BoundHiveMetaStore --host 127.0.0.1 -p 9083
 */

import java.net.InetSocketAddress;
import org.apache.hadoop.hive.conf.HiveConf;
import org.apache.hadoop.hive.conf.HiveConf.ConfVars;
import org.apache.hadoop.hive.metastore.HiveMetaStore;
import org.apache.hadoop.hive.metastore.HiveMetaStore.HMSHandler;
import org.apache.hadoop.hive.metastore.IHMSHandler;
import org.apache.hadoop.hive.metastore.TSetIpAddressProcessor;
import org.apache.hadoop.hive.metastore.TUGIBasedProcessor;
import org.apache.hadoop.hive.thrift.TUGIContainingTransport;
import org.apache.hive.common.util.HiveStringUtils;
import org.apache.thrift.TProcessor;
import org.apache.thrift.server.TServer;
import org.apache.thrift.transport.TTransport;
import org.apache.thrift.transport.TTransportException;
import org.apache.thrift.transport.TTransportFactory;
import org.apache.thrift.transport.layered.TFramedTransport;

public class BoundHiveMetaStore {

  public static void main(String[] args) throws Throwable {
    InetSocketAddress address = MetastoreThriftServer.address(args, "BoundHiveMetaStore");
    HiveConf.setLoadMetastoreConfig(true);
    HiveConf conf = new HiveConf(HMSHandler.class);
    HiveStringUtils.startupShutdownMessage(HiveMetaStore.class, args, HiveMetaStore.LOG);
    refuseSecureModes(conf);
    MetastoreThriftServer.serve(conf, HiveConf.class, address, () -> server(conf, address));
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
    boolean framed = conf.getBoolVar(ConfVars.METASTORE_USE_THRIFT_FRAMED_TRANSPORT);
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
    MetastoreThriftServer.Settings settings = new MetastoreThriftServer.Settings(
        conf.getBoolVar(ConfVars.METASTORE_TCP_KEEP_ALIVE),
        conf.getIntVar(ConfVars.METASTORESERVERMINTHREADS),
        conf.getIntVar(ConfVars.METASTORESERVERMAXTHREADS),
        conf.getBoolVar(ConfVars.METASTORE_USE_THRIFT_COMPACT_PROTOCOL),
        conf.getLongVar(ConfVars.METASTORESERVERMAXMESSAGESIZE));
    return MetastoreThriftServer.create(address, settings, processor, transportFactory);
  }

  /** Framing under Hive's UGI transport (Thrift 0.16's factories throw TTransportException; 0.9's do not). */
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
