#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

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
        if let string, raw.count == quoted.count, let wanted = raw.baseAddress,
           quoted.withUnsafeBytes({ held in held.baseAddress.map { memcmp($0, wanted, raw.count) == 0 } ?? false }) {
            return string
        }
        guard let decoded = JSONCursor.decodeString(raw) else { return nil }
        quoted = Array(raw)
        string = decoded
        return decoded
    }
}
