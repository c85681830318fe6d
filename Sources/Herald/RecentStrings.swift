/// The channel, subscription and sender strings of the last event the I/O thread read,
/// reused while the next event's quoted bytes are the same (I/O thread only).
///
/// Why: a subscriber usually gets run after run of events on one channel, for one
/// subscription, from one publisher; validating and building the same three strings for
/// each was about a tenth of the raw event path. A hit costs a comparison of a few bytes and
/// a retain.
struct RecentStrings {
    var channel = RecentString()
    var subscription = RecentString()
    var sender = RecentString()
}

/// One field's last quoted bytes and the string they decoded to.
struct RecentString {
    private var quoted: [UInt8] = []
    private var string: String?

    /// The string `raw` (a JSON string with its quotes) decodes to; nil when it is not one.
    mutating func string(for raw: UnsafeRawBufferPointer) -> String? {
        if let string, raw.count == quoted.count, quoted.withUnsafeBytes({ Self.same($0, raw) }) {
            return string
        }
        guard let decoded = JSONCursor.decodeString(raw) else { return nil }
        quoted = Array(raw)
        string = decoded
        return decoded
    }

    /// Whether two buffers of the same length hold the same bytes, eight at a time (no libc
    /// call: this file is shared by every platform, docs/client.md).
    private static func same(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
        var at = 0
        while at + 8 <= a.count {
            if a.loadUnaligned(fromByteOffset: at, as: UInt64.self) != b.loadUnaligned(fromByteOffset: at, as: UInt64.self) {
                return false
            }
            at += 8
        }
        while at < a.count {
            if a[at] != b[at] { return false }
            at += 1
        }
        return true
    }
}
