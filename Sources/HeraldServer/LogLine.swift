/// Builds the text of one log event: `time level component message key=value…` plus a newline.
///
/// Kept apart from `Logger` so the exact format is one pure function, tested without a clock.
enum LogLine {
    /// The complete line, newline included.
    /// - Parameters:
    ///   - milliseconds: Event time, milliseconds since the Unix epoch (UTC).
    ///   - level: Written as its config spelling (`debug`, `info`, `warn`, `error`).
    ///   - component: The subsystem, e.g. `server`; expected to be a single word.
    ///   - message: Free text; control characters are escaped so the event stays on one line.
    ///   - fields: `key=value` pairs in the given order; values quoted when ambiguous.
    static func format(
        milliseconds: Int64,
        level: LogLevel,
        component: String,
        message: String,
        fields: KeyValuePairs<String, any CustomStringConvertible>
    ) -> String {
        var line = UTCTimestamp.format(millisecondsSince1970: milliseconds)
        line += " "
        line += level.rawValue
        line += " "
        line += component
        line += " "
        line += LogValueQuoting.escapingControlCharacters(message)
        for (key, value) in fields {
            line += " "
            line += key
            line += "="
            line += LogValueQuoting.rendered(value.description)
        }
        line += "\n"
        return line
    }
}
