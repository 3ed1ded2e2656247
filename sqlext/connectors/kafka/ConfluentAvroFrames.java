package io.sqlext.kafka;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.security.KeyStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericDatumReader;
import org.apache.avro.generic.GenericDatumWriter;
import org.apache.avro.io.BinaryDecoder;
import org.apache.avro.io.BinaryEncoder;
import org.apache.avro.io.DecoderFactory;
import org.apache.avro.io.EncoderFactory;
import org.apache.spark.sql.api.java.UDF4;

/**
 * A Confluent-framed Avro record (magic byte 0, the writer schema's 4-byte id, Avro binary) as plain Avro binary
 * in the table's reader schema, for Spark's {@code from_avro}: the writer schema is fetched from the schema registry
 * by its id (once per id and JVM), and Avro's schema resolution reads the record into the reader schema, so records
 * of every compatible writer version decode into the table's columns. Arguments: the record's bytes, its topic,
 * partition and offset (for the error messages only). The settings (JSON, see {@code confluent.py}) name the table,
 * the registry's URLs, the request headers (credentials), the key and trust stores and the reader schema.
 */
public final class ConfluentAvroFrames implements UDF4<byte[], String, Integer, Long, byte[]> {
  private static final long serialVersionUID = 1L;
  private static final ObjectMapper JSON = new ObjectMapper();
  /** Settings -> the registry they name, per JVM: its schemas by id are fetched once. */
  private static final Map<String, Registry> REGISTRIES = new ConcurrentHashMap<>();

  private final String settings;

  public ConfluentAvroFrames(String settings) {
    this.settings = settings;
  }

  @Override
  public byte[] call(byte[] data, String topic, Integer partition, Long offset) {
    if (data == null) {
      return null;
    }
    Registry registry = REGISTRIES.computeIfAbsent(settings, Registry::new);
    String where = "table " + registry.table + ", topic-partition-offset " + topic + "-" + partition + "-" + offset;
    if (data.length < 5 || data[0] != 0) {
      String first = data.length == 0 ? "an empty record" : String.format("first byte 0x%02x", data[0] & 0xff);
      throw new IllegalArgumentException(
          where + ": not a Confluent-framed Avro record (" + first + ", " + data.length + " bytes; the "
              + registry.format + " format expects magic byte 0x00 and a 4-byte schema id before the Avro data)");
    }
    int id = ByteBuffer.wrap(data, 1, 4).getInt();
    Schema writer = registry.schema(id, where);
    try {
      BinaryDecoder decoder = DecoderFactory.get().binaryDecoder(data, 5, data.length - 5, null);
      Object record = new GenericDatumReader<Object>(writer, registry.reader).read(null, decoder);
      ByteArrayOutputStream out = new ByteArrayOutputStream(data.length);
      BinaryEncoder encoder = EncoderFactory.get().binaryEncoder(out, null);
      new GenericDatumWriter<Object>(registry.reader).write(record, encoder);
      encoder.flush();
      return out.toByteArray();
    } catch (IOException | RuntimeException e) {
      throw new IllegalArgumentException(
          where + ": the record does not read with its writer schema (id " + id + ") as the table's schema: " + e,
          e);
    }
  }

  /** One registry as the settings name it, with the writer schemas fetched from it. */
  private static final class Registry {
    final String table;
    final String format;
    final Schema reader;
    final List<String> urls = new ArrayList<>();
    final JsonNode headers;
    final Duration timeout;
    final HttpClient client;
    final Map<Integer, Schema> schemas = new ConcurrentHashMap<>();

    Registry(String settings) {
      try {
        JsonNode node = JSON.readTree(settings);
        table = node.get("table").asText();
        format = node.get("format").asText();
        reader = new Schema.Parser().parse(node.get("reader_schema").asText());
        for (JsonNode url : node.get("urls")) {
          urls.add(url.asText().replaceAll("/+$", ""));
        }
        headers = node.get("headers");
        timeout = Duration.ofMillis(node.get("timeout_ms").asLong());
        HttpClient.Builder builder = HttpClient.newBuilder().connectTimeout(timeout);
        if (node.hasNonNull("truststore") || node.hasNonNull("keystore")) {
          builder.sslContext(ssl(node.get("keystore"), node.get("truststore")));
        }
        client = builder.build();
      } catch (Exception e) {
        throw new IllegalArgumentException("Bad schema registry settings of a Confluent Avro format: " + e, e);
      }
    }

    Schema schema(int id, String where) {
      Schema known = schemas.get(id);
      if (known != null) {
        return known;
      }
      String text = fetch(id, where);
      Schema parsed;
      try {
        parsed = new Schema.Parser().parse(text);
      } catch (RuntimeException e) {
        throw new IllegalArgumentException(where + ": schema id " + id + " of the schema registry is not an Avro "
            + "schema: " + e.getMessage(), e);
      }
      schemas.put(id, parsed);
      return parsed;
    }

    private String fetch(int id, String where) {
      String failures = "";
      for (String url : urls) {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(url + "/schemas/ids/" + id))
            .timeout(timeout)
            .header("Accept", "application/vnd.schemaregistry.v1+json, application/json");
        for (Iterator<Map.Entry<String, JsonNode>> it = headers.fields(); it.hasNext(); ) {
          Map.Entry<String, JsonNode> header = it.next();
          request.header(header.getKey(), header.getValue().asText());
        }
        HttpResponse<String> response;
        try {
          response = client.send(request.GET().build(), HttpResponse.BodyHandlers.ofString());
        } catch (IOException e) {
          failures += (failures.isEmpty() ? "" : "; ") + url + ": " + e;
          continue;
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new IllegalStateException(where + ": interrupted while fetching schema id " + id, e);
        }
        return answer(response, id, url, where);
      }
      throw new IllegalStateException(
          where + ": the schema registry could not be reached for schema id " + id + " (" + failures + ")");
    }

    private String answer(HttpResponse<String> response, int id, String url, String where) {
      int status = response.statusCode();
      String body = response.body();
      if (status == 200) {
        try {
          JsonNode node = JSON.readTree(body);
          String type = node.hasNonNull("schemaType") ? node.get("schemaType").asText() : "AVRO";
          if (!"AVRO".equals(type)) {
            throw new IllegalArgumentException(where + ": schema id " + id + " of the schema registry at " + url
                + " is a " + type + " schema, not Avro");
          }
          return node.get("schema").asText();
        } catch (IOException e) {
          throw new IllegalStateException(where + ": the schema registry at " + url + " answered schema id " + id
              + " with what is not JSON: " + body, e);
        }
      }
      String what;
      if (status == 401 || status == 403) {
        what = "refused the credentials (HTTP " + status + "; see the format's basic-auth.* and bearer-auth.* "
            + "options)";
      } else if (status == 404) {
        what = "does not know schema id " + id + " (HTTP 404)";
      } else {
        what = "answered HTTP " + status + " for schema id " + id;
      }
      throw new IllegalStateException(where + ": the schema registry at " + url + " " + what + ": " + body);
    }

    private static SSLContext ssl(JsonNode keystore, JsonNode truststore) throws Exception {
      KeyManagerFactory keys = null;
      if (keystore != null && !keystore.isNull()) {
        char[] password = keystore.get("password").asText().toCharArray();
        KeyStore store = KeyStore.getInstance(new File(keystore.get("location").asText()), password);
        keys = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
        keys.init(store, password);
      }
      TrustManagerFactory trust = null;
      if (truststore != null && !truststore.isNull()) {
        char[] password = truststore.get("password").asText().toCharArray();
        KeyStore store = KeyStore.getInstance(new File(truststore.get("location").asText()), password);
        trust = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        trust.init(store);
      }
      SSLContext context = SSLContext.getInstance("TLS");
      context.init(keys == null ? null : keys.getKeyManagers(), trust == null ? null : trust.getTrustManagers(), null);
      return context;
    }
  }
}
