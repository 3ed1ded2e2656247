/*
 * Creates Hive's transaction tables (TXNS, HIVE_LOCKS, NEXT_LOCK_ID, COMPACTION_QUEUE, ...) that are missing from
 * a metastore database, before the metastore starts (txn_tables.py runs it).
 *
 * DataNucleus's datanucleus.schema.autoCreateAll creates the tables of Hive's object model only; the lock and
 * transaction calls of the Thrift API read and write tables that Hive's schema scripts create and no model class
 * maps. This program reads the connection from the metastore's hive-site.xml (javax.jdo.option.Connection*),
 * groups the statements of a DDL file by the table they make (CREATE TABLE t, CREATE INDEX ... ON t,
 * INSERT INTO t), and runs, in one database transaction, the groups of the tables the database lacks: a table
 * that exists is left as it is, and a failed statement rolls every table of this run back. It prints one
 * "created TABLE" line per table made; a failure exits 2 with a message naming the table.
 *
 *   java -cp <compiled>:<JDBC driver jars> TxnTables <conf>/hive-site.xml <ddl.sql>
 *
 * Plain JDBC and the JDK's XML parser only, so it compiles once against nothing and runs with any Hive version's
 * jars. A Derby database is shut down at the end, releasing it for the metastore's JVM.
 */

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.xml.parsers.DocumentBuilderFactory;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;

public class TxnTables {

  /** The table a statement belongs to: CREATE TABLE t, CREATE [UNIQUE] INDEX i ON t, INSERT INTO t. */
  private static final Pattern TABLE_OF = Pattern.compile(
      "^\\s*(?:CREATE\\s+TABLE|CREATE\\s+(?:UNIQUE\\s+)?INDEX\\s+\\S+\\s+ON|INSERT\\s+INTO)\\s+(\"[^\"]+\"|[A-Za-z_][A-Za-z0-9_]*)",
      Pattern.CASE_INSENSITIVE);

  private static final class Failure extends Exception {
    Failure(String message) {
      super(message);
    }
  }

  public static void main(String[] args) throws Exception {
    if (args.length != 2) {
      System.err.println("Usage: TxnTables <hive-site.xml> <ddl.sql>");
      System.exit(64);
    }
    Map<String, String> conf = properties(Path.of(args[0]));
    String url = required(conf, "javax.jdo.option.ConnectionURL");
    int status = 0;
    try {
      Map<String, List<String>> groups = groups(Files.readString(Path.of(args[1]), StandardCharsets.UTF_8));
      Class.forName(required(conf, "javax.jdo.option.ConnectionDriverName"));
      for (String table : create(url, conf, groups)) {
        System.out.println("created " + table);
      }
    } catch (Failure failure) {
      System.err.println(failure.getMessage());
      status = 2;
    } finally {
      shutDownDerby(url);
    }
    System.exit(status);
  }

  /** Creates the groups whose table is missing, in one transaction; returns the tables created. */
  private static List<String> create(String url, Map<String, String> conf, Map<String, List<String>> groups)
      throws Failure {
    String user = conf.getOrDefault("javax.jdo.option.ConnectionUserName", "");
    String password = conf.getOrDefault("javax.jdo.option.ConnectionPassword", "");
    try (Connection connection = DriverManager.getConnection(url, user, password)) {
      connection.setAutoCommit(false);
      Set<String> existing = existingTables(connection);
      DatabaseMetaData meta = connection.getMetaData();
      List<String> created = new ArrayList<>();
      String table = null;
      try (Statement statement = connection.createStatement()) {
        for (Map.Entry<String, List<String>> group : groups.entrySet()) {
          table = group.getKey();
          if (existing.contains(storedName(meta, table))) {
            continue;
          }
          for (String sql : group.getValue()) {
            statement.execute(sql);
          }
          created.add(table);
        }
        connection.commit();
      } catch (SQLException e) {
        rollBack(connection);
        throw new Failure("Cannot create Hive's transaction table " + table + " in the metastore database " + url
            + ": " + e.getMessage() + " (SQLState " + e.getSQLState() + "). No transaction table was created.");
      }
      return created;
    } catch (SQLException e) {
      throw new Failure("Cannot connect to the metastore database " + url + " to create Hive's transaction tables: "
          + e.getMessage() + " (SQLState " + e.getSQLState() + ").");
    }
  }

  private static void rollBack(Connection connection) {
    try {
      connection.rollback();
    } catch (SQLException e) {
      System.err.println("Rolling back failed: " + e.getMessage());
    }
  }

  /** The tables of the connection's current schema, as the database stores their names. */
  private static Set<String> existingTables(Connection connection) throws SQLException {
    Set<String> names = new HashSet<>();
    try (ResultSet tables = connection.getMetaData().getTables(null, connection.getSchema(), "%", new String[] {"TABLE"})) {
      while (tables.next()) {
        names.add(tables.getString("TABLE_NAME"));
      }
    }
    return names;
  }

  /** A name as written in SQL, as the database stores it: quoted verbatim, unquoted folded as it folds them. */
  private static String storedName(DatabaseMetaData meta, String name) throws SQLException {
    if (name.startsWith("\"")) {
      return name.substring(1, name.length() - 1);
    }
    if (meta.storesUpperCaseIdentifiers()) {
      return name.toUpperCase(java.util.Locale.ROOT);
    }
    return meta.storesLowerCaseIdentifiers() ? name.toLowerCase(java.util.Locale.ROOT) : name;
  }

  /** The statements of a DDL file (';' ends one, "--" starts a comment), grouped by table, in file order. */
  static Map<String, List<String>> groups(String ddl) throws Failure {
    StringBuilder text = new StringBuilder();
    for (String line : ddl.split("\n", -1)) {
      int comment = line.indexOf("--");
      text.append(comment >= 0 ? line.substring(0, comment) : line).append('\n');
    }
    Map<String, List<String>> groups = new LinkedHashMap<>();
    Map<String, String> seen = new HashMap<>();
    for (String statement : text.toString().split(";")) {
      String sql = statement.strip();
      if (sql.isEmpty()) {
        continue;
      }
      Matcher matcher = TABLE_OF.matcher(sql);
      if (!matcher.find()) {
        throw new Failure("Not a CREATE TABLE, CREATE INDEX or INSERT statement: " + sql);
      }
      String table = matcher.group(1);
      String key = seen.computeIfAbsent(table.toUpperCase(java.util.Locale.ROOT), k -> table);
      groups.computeIfAbsent(key, k -> new ArrayList<>()).add(sql);
    }
    return groups;
  }

  private static Map<String, String> properties(Path hiveSite) throws Exception {
    Map<String, String> values = new HashMap<>();
    NodeList properties =
        DocumentBuilderFactory.newInstance().newDocumentBuilder().parse(hiveSite.toFile()).getElementsByTagName("property");
    for (int i = 0; i < properties.getLength(); i++) {
      Element property = (Element) properties.item(i);
      NodeList name = property.getElementsByTagName("name");
      NodeList value = property.getElementsByTagName("value");
      if (name.getLength() > 0 && value.getLength() > 0) {
        values.put(name.item(0).getTextContent().strip(), value.item(0).getTextContent());
      }
    }
    return values;
  }

  private static String required(Map<String, String> conf, String key) {
    String value = conf.get(key);
    if (value == null) {
      throw new IllegalArgumentException("hive-site.xml has no " + key);
    }
    return value;
  }

  /** Releases an embedded Derby database (its lock) before the metastore's JVM boots it. */
  private static void shutDownDerby(String url) {
    if (!url.startsWith("jdbc:derby:") || url.startsWith("jdbc:derby://")) {
      return;
    }
    try {
      DriverManager.getConnection(url.replace(";create=true", "") + ";shutdown=true").close();
    } catch (SQLException e) {
      // 08006: the database was shut down, as asked. XJ004: it was never booted (the run failed before).
      if (!"08006".equals(e.getSQLState()) && !"XJ004".equals(e.getSQLState())) {
        System.err.println("Shutting down Derby failed: " + e.getMessage());
      }
    }
  }
}
