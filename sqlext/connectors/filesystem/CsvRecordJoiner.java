package io.sqlext.csv;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CoderResult;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.SparkEnv;
import org.apache.spark.api.java.function.MapPartitionsFunction;
import org.apache.spark.deploy.SparkHadoopUtil;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;

/**
 * The JVM twin of sqlext's Python {@code RecordJoiner} (sqlext/connectors/filesystem/csv_records.py, whose module
 * docstring states the rules): the lines of byte ranges of csv files, as Spark's text source reads them, to csv
 * records. Input rows: the line (its bytes), the carried columns, then the file's URI, the range's first byte and
 * the byte after its last; output rows: the record and the carried columns, or with the {@code fields.*} settings
 * the record's fields ({@link CsvFields}) and the carried columns.
 */
public final class CsvRecordJoiner implements MapPartitionsFunction<Row, Row> {
    private static final long serialVersionUID = 1L;
    private static final int CHUNK = 1 << 20;
    private static final int BLOCK = 1 << 16;

    private final Map<String, String> settings = new HashMap<>();

    /** Sets one setting: {@code more}, {@code last} (the record regexes), {@code quote}, {@code escape},
     * {@code width} (the line and the carried columns), {@code fields.*} ({@link CsvFields}), or a Hadoop setting
     * ({@code spark.hadoop.*}). */
    public CsvRecordJoiner set(String key, String value) {
        settings.put(key, value);
        return this;
    }

    @Override
    public Iterator<Row> call(Iterator<Row> lines) {
        return new Joining(lines, new Form(settings));
    }

    /** The settings of a joining, compiled once per task. */
    static final class Form {
        final Pattern more;
        final Pattern last;
        final String quote;
        final String escape;
        final int width;
        /** The record's fields instead of its text, or null. */
        final CsvFields fields;
        final Map<String, String> hadoop = new HashMap<>();

        Form(Map<String, String> settings) {
            more = Pattern.compile(settings.get("more"));
            last = Pattern.compile(settings.get("last"));
            quote = settings.get("quote");
            escape = settings.get("escape");
            width = Integer.parseInt(settings.get("width"));
            fields = settings.containsKey("fields.pattern") ? new CsvFields(settings) : null;
            for (Map.Entry<String, String> entry : settings.entrySet()) {
                if (entry.getKey().startsWith("spark.hadoop.")) {
                    hadoop.put(entry.getKey().substring("spark.hadoop.".length()), entry.getValue());
                }
            }
        }

        /** Whether a line may not be one record: a quote character, a {@code \r} before its end, or an escape
         * at its end (before a {@code \r}, if any). */
        boolean unusual(String line) {
            if (line.contains(quote)) {
                return true;
            }
            int cr = line.indexOf('\r');
            if (cr >= 0 && cr < line.length() - 1) {
                return true;
            }
            String body = cr >= 0 ? line.substring(0, cr) : line;
            return body.endsWith(escape);
        }
    }

    /** The records of a text given in pieces that each end with a line break (Python's {@code Records}). */
    static final class Records {
        private final Form form;
        /** The text of a record that more text may change. */
        String pending = "";
        /** Byte offset of {@code pending} (or of the next piece) in the file, when counted. */
        long offset;

        Records(Form form) {
            this.form = form;
        }

        void feed(String piece, List<String> found) {
            String text = pending.isEmpty() ? piece : pending + piece;
            pending = "";
            Matcher match = form.more.matcher(text);
            while (match.find()) {
                if (match.end(1) == text.length()) {
                    pending = text.substring(match.start());
                    break;
                }
                found.add(match.group(1));
            }
        }

        void feedSpans(String piece, List<String> found, List<Long> offsets) {
            spans(form.more, pending.isEmpty() ? piece : pending + piece, true, found, offsets);
        }

        /** The records of what is pending at the end of the file (an unclosed quote reads as unquoted). */
        void finish(List<String> found, List<Long> offsets) {
            spans(form.last, pending, false, found, offsets);
        }

        /** The records of {@code text} and their byte offsets; with {@code more}, one that reaches the text's end
         * is kept pending instead. */
        private void spans(Pattern records, String text, boolean more, List<String> found, List<Long> offsets) {
            pending = "";
            int position = 0;
            long at = offset;
            Matcher match = records.matcher(text);
            while (match.find()) {
                at += bytes(text, position, match.start());
                position = match.start();
                if (more && match.end(1) == text.length()) {
                    pending = text.substring(position);
                    break;
                }
                found.add(match.group(1));
                offsets.add(at);
            }
            offset = pending.isEmpty() ? at + bytes(text, position, text.length()) : at;
        }
    }

    /** The reading of one byte range of one file. */
    static final class Range {
        final String file;
        final long start;
        final long end;
        final Records records;
        /** Bytes of lines still to skip at the range's start (they belong to a record of the range before). */
        long skip;
        /** Lines to feed as text (after a line that may not be one record). */
        final StringBuilder block = new StringBuilder();
        /** Length of the text a feed left pending: the block is fed again once it is as long (linear time). */
        int carried;
        Row template;

        Range(String file, long start, long end, Form form) {
            this.file = file;
            this.start = start;
            this.end = end;
            this.records = new Records(form);
        }
    }

    /** The records of a task's lines, range after range. */
    static final class Joining implements Iterator<Row> {
        private final Iterator<Row> lines;
        private final Form form;
        private final ArrayDeque<Row> ready = new ArrayDeque<>();
        private final List<String> found = new ArrayList<>();
        private Range current;
        private Configuration configuration;

        Joining(Iterator<Row> lines, Form form) {
            this.lines = lines;
            this.form = form;
        }

        @Override
        public boolean hasNext() {
            while (ready.isEmpty()) {
                if (lines.hasNext()) {
                    line(lines.next());
                } else if (current != null) {
                    end(current);
                    current = null;
                } else {
                    return false;
                }
            }
            return true;
        }

        @Override
        public Row next() {
            if (!hasNext()) {
                throw new NoSuchElementException();
            }
            return ready.poll();
        }

        private void line(Row row) {
            int size = row.size();
            String file = row.getString(size - 3);
            long start = row.getLong(size - 2);
            if (current == null || current.start != start || !current.file.equals(file)) {
                if (current != null) {
                    end(current);
                }
                current = begin(file, start, row.getLong(size - 1));
            }
            current.template = row;
            byte[] line = row.isNullAt(0) ? new byte[0] : (byte[]) row.get(0);
            if (current.skip > 0) {
                String rest = skipped(current, line);
                if (rest == null) {
                    return;
                }
                current.records.feed(rest, found);
                emit(current, found);
                return;
            }
            String value = text(line);
            boolean unusual = form.unusual(value);
            Range range = current;
            if (range.block.length() == 0 && range.records.pending.isEmpty() && !unusual) {
                add(row, value.endsWith("\r") ? value.substring(0, value.length() - 1) : value);
                return;
            }
            range.block.append(value).append('\n');
            int length = range.block.length();
            // A usual line may end what is pending: feed then, but only once the block is as long as the text
            // the last feed left (a long record's text is scanned again only as it doubles); at BLOCK at the latest.
            if ((!unusual && length >= range.carried) || length >= Math.max(2 * range.carried, BLOCK)) {
                feedBlock(range);
            }
        }

        private void feedBlock(Range range) {
            if (range.block.length() == 0) {
                return;
            }
            range.records.feed(range.block.toString(), found);
            range.block.setLength(0);
            range.carried = range.records.pending.length();
            emit(range, found);
        }

        /** The rest of a line (and its line break) after the bytes to skip, or null when the whole line is
         * skipped. */
        private static String skipped(Range range, byte[] line) {
            if (line.length + 1 <= range.skip) {
                range.skip -= line.length + 1;
                return null;
            }
            int from = (int) range.skip;
            range.skip = 0;
            return text(java.util.Arrays.copyOfRange(line, from, line.length)) + "\n";
        }

        private void emit(Range range, List<String> records) {
            for (String text : records) {
                add(range.template, text);
            }
            records.clear();
        }

        /** A record's row (none for a record {@link CsvFields#of} does not read), with the carried columns of
         * {@code template}. */
        private void add(Row template, String text) {
            String record = invalidBytes ? withReplacements(text) : text;
            Object[] head = form.fields == null ? new Object[] {record} : form.fields.of(record);
            if (head == null) {
                return;
            }
            Object[] values = new Object[head.length + form.width - 1];
            System.arraycopy(head, 0, values, 0, head.length);
            for (int index = 1; index < form.width; index++) {
                values[head.length + index - 1] = template.get(index);
            }
            ready.add(RowFactory.create(values));
        }

        private Range begin(String file, long start, long end) {
            Range range = new Range(file, start, end, form);
            if (start == 0) {
                return range;
            }
            try (FSDataInputStream in = open(file)) {
                long first = lineStartAfter(in, start);
                if (!plainPrefix(in, first)) {
                    range.skip = firstRecordAt(in, first) - first;
                }
            } catch (IOException exc) {
                throw new UncheckedIOException("reading " + file, exc);
            }
            return range;
        }

        /** What is pending at the range's end: read on in the file until it is whole (or the file ends). */
        private void end(Range range) {
            feedBlock(range);
            Records pending = range.records;
            if (pending.pending.isEmpty()) {
                return;
            }
            List<String> texts = new ArrayList<>();
            List<Long> offsets = new ArrayList<>();
            try (FSDataInputStream in = open(range.file)) {
                long boundary = lineStartAfter(in, range.end);
                pending.offset = boundary - bytes(pending.pending, 0, pending.pending.length());
                Pieces pieces = new Pieces(in, boundary);
                boolean whole = false;
                for (String piece = pieces.next(); piece != null; piece = pieces.next()) {
                    pending.feedSpans(piece, texts, offsets);
                    if (pending.pending.isEmpty() || pending.offset >= boundary) {
                        whole = true;
                        break;
                    }
                }
                if (!whole) {
                    pending.finish(texts, offsets);
                }
                for (int index = 0; index < texts.size(); index++) {
                    if (offsets.get(index) < boundary) {
                        add(range.template, texts.get(index));
                    }
                }
            } catch (IOException exc) {
                throw new UncheckedIOException("reading " + range.file, exc);
            }
        }

        /** Whether the file's bytes before {@code stop} hold no quote character and no escaped line break. */
        private boolean plainPrefix(FSDataInputStream in, long stop) throws IOException {
            in.seek(0);
            byte[] quote = form.quote.getBytes(StandardCharsets.UTF_8);
            byte[] escape = form.escape.getBytes(StandardCharsets.UTF_8);
            byte[][] marks = {quote, concat(escape, (byte) '\n'), concat(escape, (byte) '\r')};
            int keep = Math.max(quote.length, escape.length + 1) - 1;
            byte[] tail = new byte[0];
            long left = stop;
            byte[] chunk = new byte[CHUNK];
            while (left > 0) {
                int read = in.read(chunk, 0, (int) Math.min(CHUNK, left));
                if (read <= 0) {
                    break;
                }
                left -= read;
                byte[] data = new byte[tail.length + read];
                System.arraycopy(tail, 0, data, 0, tail.length);
                System.arraycopy(chunk, 0, data, tail.length, read);
                for (byte[] mark : marks) {
                    if (indexOf(data, mark) >= 0) {
                        return false;
                    }
                }
                tail = java.util.Arrays.copyOfRange(data, Math.max(0, data.length - keep), data.length);
            }
            return true;
        }

        /** The byte offset of the first record that starts at or after {@code stop} (the file parsed from its
         * start). */
        private long firstRecordAt(FSDataInputStream in, long stop) throws IOException {
            Records parsed = new Records(form);
            List<String> texts = new ArrayList<>();
            List<Long> offsets = new ArrayList<>();
            Pieces pieces = new Pieces(in, 0);
            for (String piece = pieces.next(); piece != null; piece = pieces.next()) {
                parsed.feedSpans(piece, texts, offsets);
                for (long offset : offsets) {
                    if (offset >= stop) {
                        return offset;
                    }
                }
                texts.clear();
                offsets.clear();
                if (parsed.offset >= stop && parsed.pending.isEmpty()) {
                    return parsed.offset;
                }
            }
            parsed.finish(texts, offsets);
            for (long offset : offsets) {
                if (offset >= stop) {
                    return offset;
                }
            }
            return Math.max(parsed.offset, stop);
        }

        private FSDataInputStream open(String uri) throws IOException {
            if (configuration == null) {
                SparkEnv env = SparkEnv.get();
                configuration = env != null
                        ? SparkHadoopUtil.get().newConfiguration(env.conf())
                        : new Configuration();
                for (Map.Entry<String, String> entry : form.hadoop.entrySet()) {
                    configuration.set(entry.getKey(), entry.getValue());
                }
            }
            Path path = new Path(java.net.URI.create(uri));
            FileSystem fs = path.getFileSystem(configuration);
            return fs.open(path);
        }
    }

    /** The file's text from a byte offset in pieces of whole lines (each ending with {@code \n}; one is added
     * after a last line without it). */
    static final class Pieces {
        private final FSDataInputStream in;
        private final CharsetDecoder decoder = StandardCharsets.UTF_8.newDecoder()
                .onMalformedInput(CodingErrorAction.REPORT)
                .onUnmappableCharacter(CodingErrorAction.REPORT);
        private final byte[] chunk = new byte[CHUNK];
        private ByteBuffer undecoded = ByteBuffer.allocate(0);
        private String rest = "";
        private boolean done;

        Pieces(FSDataInputStream in, long start) throws IOException {
            this.in = in;
            in.seek(start);
        }

        String next() throws IOException {
            while (!done) {
                int read = in.read(chunk, 0, CHUNK);
                if (read <= 0) {
                    done = true;
                    String last = rest + decode(ByteBuffer.allocate(0), true);
                    rest = "";
                    return last.isEmpty() ? null : last + "\n";
                }
                ByteBuffer bytes = ByteBuffer.allocate(undecoded.remaining() + read);
                bytes.put(undecoded).put(chunk, 0, read).flip();
                String text = rest + decode(bytes, false);
                undecoded = bytes.slice();
                int cut = text.lastIndexOf('\n') + 1;
                rest = text.substring(cut);
                if (cut > 0) {
                    return text.substring(0, cut);
                }
            }
            return null;
        }

        private String decode(ByteBuffer bytes, boolean last) {
            return CsvRecordJoiner.decode(decoder, bytes, last);
        }
    }

    /** Where the first line after byte {@code start} begins: after the first {@code \n} at or after it (the
     * file's size when there is none), as Hadoop's line reader starts a range. */
    static long lineStartAfter(FSDataInputStream in, long start) throws IOException {
        in.seek(start);
        long position = start;
        byte[] chunk = new byte[CHUNK];
        int read;
        while ((read = in.read(chunk, 0, CHUNK)) > 0) {
            for (int index = 0; index < read; index++) {
                if (chunk[index] == '\n') {
                    return position + index + 1;
                }
            }
            position += read;
        }
        return position;
    }

    /** Whether some text read in this JVM held bytes that are not UTF-8 (records are then checked for them). */
    static volatile boolean invalidBytes;

    /** A line's text: its UTF-8, with each byte that is not part of it as one of the chars U+DC80-U+DCFF (as
     * Python's {@code surrogateescape}), so that the text's byte count ({@link #bytes}) is the line's. */
    static String text(byte[] line) {
        String text = new String(line, StandardCharsets.UTF_8);
        if (text.indexOf('\uFFFD') < 0) {
            return text;
        }
        CharsetDecoder decoder = StandardCharsets.UTF_8.newDecoder()
                .onMalformedInput(CodingErrorAction.REPORT)
                .onUnmappableCharacter(CodingErrorAction.REPORT);
        return decode(decoder, ByteBuffer.wrap(line), true);
    }

    /** {@code bytes} decoded as {@link #text} does (bytes of a character cut at the end are left in
     * {@code bytes} unless {@code last}). */
    static String decode(CharsetDecoder decoder, ByteBuffer bytes, boolean last) {
        CharBuffer out = CharBuffer.allocate(bytes.remaining() + 16);
        while (true) {
            CoderResult result = decoder.decode(bytes, out, last);
            if (result.isMalformed() || result.isUnmappable()) {
                for (int index = 0; index < result.length(); index++) {
                    out.put((char) (0xDC00 | (bytes.get() & 0xFF)));
                }
                invalidBytes = true;
            } else if (result.isOverflow()) {
                CharBuffer larger = CharBuffer.allocate(out.capacity() * 2);
                out.flip();
                out = larger.put(out);
            } else {
                break;
            }
        }
        if (last) {
            decoder.flush(out);
            decoder.reset();
        }
        out.flip();
        return out.toString();
    }

    /** A record's text with the chars that stand for bytes that are not UTF-8 as U+FFFD, as Spark reads them. */
    static String withReplacements(String record) {
        StringBuilder out = null;
        for (int index = 0; index < record.length(); index++) {
            char c = record.charAt(index);
            if (c >= 0xDC80 && c <= 0xDCFF && (index == 0 || !Character.isHighSurrogate(record.charAt(index - 1)))) {
                if (out == null) {
                    out = new StringBuilder(record);
                }
                out.setCharAt(index, '\uFFFD');
            }
        }
        return out == null ? record : out.toString();
    }

    static long bytes(String text, int from, int to) {
        long count = 0;
        for (int index = from; index < to; index++) {
            char c = text.charAt(index);
            if (c < 0x80 || (c >= 0xDC80 && c <= 0xDCFF)) {
                count += 1;
            } else if (c < 0x800) {
                count += 2;
            } else if (Character.isHighSurrogate(c) && index + 1 < to
                    && Character.isLowSurrogate(text.charAt(index + 1))) {
                count += 4;
                index++;
            } else {
                count += 3;
            }
        }
        return count;
    }

    private static byte[] concat(byte[] head, byte tail) {
        byte[] out = java.util.Arrays.copyOf(head, head.length + 1);
        out[head.length] = tail;
        return out;
    }

    private static int indexOf(byte[] data, byte[] mark) {
        outer:
        for (int index = 0; index + mark.length <= data.length; index++) {
            for (int offset = 0; offset < mark.length; offset++) {
                if (data[index + offset] != mark[offset]) {
                    continue outer;
                }
            }
            return index;
        }
        return -1;
    }
}
