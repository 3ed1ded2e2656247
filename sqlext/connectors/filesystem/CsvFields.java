package io.sqlext.csv;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The fields of a csv record as text, each unquoted and unescaped, or null where the field reads as NULL: the JVM
 * twin of {@code CsvTextForm.split} and the text half of {@code CsvTextForm.typed}
 * (sqlext/catalog/csv_text.py, whose docstrings state the rules). What is left to Spark is the cast of each text.
 */
final class CsvFields {
    private final Pattern field;
    private final String delimiter;
    private final String quote;
    private final String escape;
    private final boolean escapeDeclared;
    private final List<String> nullForms = new ArrayList<>();
    /** Per column: whether an empty field is NULL (every type but strings and bytes). */
    private final boolean[] emptyIsNull;
    private final int fewest;
    private final int most;
    private final boolean skipBad;
    private final boolean comments;

    /** From the joiner's {@code fields.*} settings (see {@code csv_records_jvm.py}). */
    CsvFields(Map<String, String> settings) {
        field = Pattern.compile(settings.get("fields.pattern"));
        delimiter = settings.get("fields.delimiter");
        quote = settings.get("quote");
        escape = settings.get("escape");
        escapeDeclared = Boolean.parseBoolean(settings.get("fields.escape-declared"));
        for (int index = 0; settings.containsKey("fields.null." + index); index++) {
            nullForms.add(settings.get("fields.null." + index));
        }
        String empty = settings.get("fields.empty-is-null");
        emptyIsNull = new boolean[empty.length()];
        for (int index = 0; index < empty.length(); index++) {
            emptyIsNull[index] = empty.charAt(index) == 'y';
        }
        fewest = Integer.parseInt(settings.get("fields.fewest"));
        most = Integer.parseInt(settings.get("fields.most"));
        skipBad = Boolean.parseBoolean(settings.get("fields.skip-bad"));
        comments = Boolean.parseBoolean(settings.get("fields.comments"));
    }

    /** How many columns {@link #of} gives. */
    int columns() {
        return emptyIsNull.length;
    }

    /** The record's fields, one per column (null past a short record's end), or null for a record that is not
     * read: a comment, or with {@code ignore-parse-errors} one with another number of fields. */
    String[] of(String record) {
        if (comments && record.startsWith("#")) {
            return null;
        }
        boolean plain = !record.contains(escape) && !record.contains(quote)
                && record.indexOf('\n') < 0 && record.indexOf('\r') < 0;
        List<String> raw = plain ? split(record) : matched(record);
        if (raw.size() < fewest || raw.size() > most) {
            if (skipBad) {
                return null;
            }
            String expected = fewest == most ? Integer.toString(fewest) : fewest + " to " + most;
            throw new IllegalArgumentException("csv line without " + expected + " fields: " + head(record, 200));
        }
        String[] fields = new String[columns()];
        for (int index = 0; index < fields.length && index < raw.size(); index++) {
            fields[index] = plain ? plainText(raw.get(index), index) : text(raw.get(index), index);
        }
        return fields;
    }

    /** A plain record's fields: split at each delimiter (Spark's {@code split} with limit -1). */
    private List<String> split(String record) {
        List<String> fields = new ArrayList<>();
        int start = 0;
        for (int at = record.indexOf(delimiter); at >= 0; at = record.indexOf(delimiter, start)) {
            fields.add(record.substring(start, at));
            start = at + delimiter.length();
        }
        fields.add(record.substring(start));
        return fields;
    }

    /** Other records' fields, as {@code regexp_extract_all} of the field regex finds them after a delimiter. */
    private List<String> matched(String record) {
        List<String> fields = new ArrayList<>();
        Matcher match = field.matcher(delimiter + record);
        while (match.find()) {
            fields.add(match.group(1));
        }
        return fields;
    }

    private String plainText(String raw, int column) {
        boolean isNull = nullForms.contains(raw) || (emptyIsNull[column] && raw.isEmpty());
        return isNull ? null : raw;
    }

    private String text(String raw, int column) {
        if (emptyIsNull[column] && raw.isEmpty()) {
            return null;
        }
        boolean quoted = raw.length() >= 2 && raw.startsWith(quote) && raw.endsWith(quote);
        if (!quoted) {
            return nullForms.contains(raw) ? null : unescape(raw, false);
        }
        String inside = raw.substring(1, raw.length() - 1);
        // Inside quotes Flink's csv applies the escape character only when the table declares one.
        return escapeDeclared ? unescape(inside, true) : inside.replace(quote + quote, quote);
    }

    /** {@code CsvTextForm.unescape}: an escape and the character after it as that character ({@code n} and
     * {@code r}: line breaks), pairs taken from the left; inside quotes ({@code quoted}) a doubled quote too. */
    private String unescape(String text, boolean quoted) {
        if (!text.contains(escape) && !(quoted && text.contains(quote))) {
            return text;
        }
        String pair = quote + quote;
        StringBuilder out = new StringBuilder(text.length());
        int index = 0;
        while (index < text.length()) {
            int after = index + escape.length();
            if (text.startsWith(escape, index) && after < text.length()) {
                int next = text.codePointAt(after);
                out.appendCodePoint(next == 'n' ? '\n' : next == 'r' ? '\r' : next);
                index = after + Character.charCount(next);
            } else if (quoted && text.startsWith(pair, index)) {
                out.append(quote);
                index += pair.length();
            } else {
                out.append(text.charAt(index));
                index++;
            }
        }
        return out.toString();
    }

    /** The first {@code count} characters (code points) of {@code text}, as Spark's {@code substring}. */
    private static String head(String text, int count) {
        if (text.codePointCount(0, text.length()) <= count) {
            return text;
        }
        return text.substring(0, text.offsetByCodePoints(0, count));
    }
}
