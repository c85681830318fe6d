/// Validation and matching of channel names and patterns (PROTOCOL.md, "Channels").
///
/// Names are segments joined by `.`; a segment is one or more printable bytes other than
/// space, `.`, `*` and `>` (bytes from 0x80 up are UTF-8, already validated by the scanner).
/// In patterns a segment that is exactly `*` matches one segment, and a final segment that is
/// exactly `>` matches one or more trailing segments. Everything works on raw UTF-8 bytes so
/// the hot path (every `pub`, every delivery) never builds a `String`.
public enum ChannelName {
    /// The longest name or pattern, in bytes.
    static let maxBytes = 255
    /// The most segments a name or pattern may have.
    static let maxSegments = 32

    private static let dot = UInt8(ascii: ".")
    private static let star = UInt8(ascii: "*")
    private static let greater = UInt8(ascii: ">")
    private static let dollar = UInt8(ascii: "$")

    /// Checks a concrete channel name, as `pub`, `set`, `signal` and `declare` require.
    /// - Parameter bytes: the name as UTF-8.
    /// - Throws: `HeraldError(.badChannel, …)` naming the problem, e.g.
    ///   `channel "a..b" has an empty segment`; a wildcard is an error here.
    public static func validateConcrete(_ bytes: UnsafeRawBufferPointer) throws(HeraldError) {
        _ = try scan(bytes, wildcards: false).get()
    }

    /// Checks a concrete channel name; see ``validateConcrete(_:)-(UnsafeRawBufferPointer)``.
    /// - Parameter bytes: the name as UTF-8.
    /// - Throws: `HeraldError(.badChannel, …)` naming the problem.
    public static func validateConcrete(_ bytes: [UInt8]) throws(HeraldError) {
        _ = try bytes.withUnsafeBytes { scan($0, wildcards: false) }.get()
    }

    /// Checks a pattern, as `sub`, `channels`, `lock` and ACLs take.
    /// - Parameter bytes: the pattern as UTF-8.
    /// - Returns: true when the pattern holds a `*` or `>` segment, so a caller can keep exact
    ///   subscriptions in a hash map and only wildcard ones in the trie.
    /// - Throws: `HeraldError(.badChannel, …)` naming the problem, e.g.
    ///   `pattern "a*" has "*" inside a segment`.
    public static func validatePattern(_ bytes: UnsafeRawBufferPointer) throws(HeraldError) -> Bool {
        try scan(bytes, wildcards: true).get()
    }

    /// Checks a pattern; see ``validatePattern(_:)-(UnsafeRawBufferPointer)``.
    /// - Parameter bytes: the pattern as UTF-8.
    /// - Returns: true when the pattern holds a wildcard segment.
    /// - Throws: `HeraldError(.badChannel, …)` naming the problem.
    public static func validatePattern(_ bytes: [UInt8]) throws(HeraldError) -> Bool {
        try bytes.withUnsafeBytes { scan($0, wildcards: true) }.get()
    }

    /// Whether a name is reserved for the daemon's own `$sys.…` events.
    /// - Parameter bytes: a name or pattern as UTF-8.
    /// - Returns: true when the first byte is `$`.
    public static func isReserved(_ bytes: UnsafeRawBufferPointer) -> Bool {
        bytes.first == dollar
    }

    /// Whether a name is reserved; see ``isReserved(_:)-(UnsafeRawBufferPointer)``.
    /// - Parameter bytes: a name or pattern as UTF-8.
    /// - Returns: true when the first byte is `$`.
    public static func isReserved(_ bytes: [UInt8]) -> Bool {
        bytes.first == dollar
    }

    /// Matches a valid pattern against a valid concrete name, segment by segment.
    ///
    /// A pattern whose first segment is a wildcard never matches a name starting with `$`, so
    /// `>` does not silently subscribe to daemon internals (`$sys.…` needs `$sys.>`). Invalid
    /// input gives an unspecified answer but never traps.
    /// - Parameters:
    ///   - pattern: a pattern that passed ``validatePattern(_:)-(UnsafeRawBufferPointer)``.
    ///   - channel: a name that passed ``validateConcrete(_:)-(UnsafeRawBufferPointer)``.
    /// - Returns: whether an event on `channel` reaches a subscription to `pattern`.
    public static func matches(pattern: UnsafeRawBufferPointer, channel: UnsafeRawBufferPointer) -> Bool {
        if isReserved(channel) && startsWithWildcard(pattern) { return false }
        var p = 0
        var c = 0
        while true {
            let patternEnd = segmentEnd(pattern, from: p)
            if isWildcard(greater, in: pattern, p..<patternEnd) { return c < channel.count }
            guard c < channel.count else { return false }
            let channelEnd = segmentEnd(channel, from: c)
            if !isWildcard(star, in: pattern, p..<patternEnd)
                && !equal(pattern, p..<patternEnd, channel, c..<channelEnd) { return false }
            let patternDone = patternEnd == pattern.count
            let channelDone = channelEnd == channel.count
            if patternDone || channelDone { return patternDone && channelDone }
            p = patternEnd + 1
            c = channelEnd + 1
        }
    }

    /// Matches a pattern against a name; see
    /// ``matches(pattern:channel:)-(UnsafeRawBufferPointer,UnsafeRawBufferPointer)``.
    /// - Parameters:
    ///   - pattern: a valid pattern as UTF-8.
    ///   - channel: a valid concrete name as UTF-8.
    /// - Returns: whether an event on `channel` reaches a subscription to `pattern`.
    public static func matches(pattern: [UInt8], channel: [UInt8]) -> Bool {
        pattern.withUnsafeBytes { p in channel.withUnsafeBytes { c in matches(pattern: p, channel: c) } }
    }

    /// Splits a name or pattern into its segments, for building tries without copying.
    /// - Parameter bytes: a valid name or pattern as UTF-8.
    /// - Returns: the byte range of each segment, in order; none for empty input. (Invalid
    ///   input with empty segments gives empty ranges for them.)
    public static func segments(_ bytes: UnsafeRawBufferPointer) -> [Range<Int>] {
        guard !bytes.isEmpty else { return [] }
        var result: [Range<Int>] = []
        var start = 0
        for index in 0..<bytes.count where bytes[index] == dot {
            result.append(start..<index)
            start = index + 1
        }
        result.append(start..<bytes.count)
        return result
    }

    /// Splits a name or pattern into segments; see ``segments(_:)-(UnsafeRawBufferPointer)``.
    /// - Parameter bytes: a valid name or pattern as UTF-8.
    /// - Returns: the byte range of each segment, in order.
    public static func segments(_ bytes: [UInt8]) -> [Range<Int>] {
        bytes.withUnsafeBytes { segments($0) }
    }

    // MARK: - Validation

    /// One pass over the bytes: returns whether a wildcard was seen, or the first problem.
    ///
    /// A `Result` rather than `throws` so the `[UInt8]` overloads keep the typed error through
    /// `withUnsafeBytes`.
    private static func scan(_ bytes: UnsafeRawBufferPointer, wildcards: Bool) -> Result<Bool, HeraldError> {
        guard !bytes.isEmpty else { return .failure(bad("\(noun(wildcards)) is empty")) }
        guard bytes.count <= maxBytes else {
            return .failure(bad("\(noun(wildcards)) is \(bytes.count) bytes; the limit is \(maxBytes)"))
        }
        var segmentStart = 0
        var segmentCount = 1
        var hasWildcard = false
        for index in 0..<bytes.count {
            let byte = bytes[index]
            if byte == dot {
                if index == segmentStart { return .failure(emptySegment(bytes, at: index, wildcards)) }
                segmentCount += 1
                segmentStart = index + 1
            } else if byte == star || byte == greater {
                if let problem = wildcardProblem(bytes, at: index, allowed: wildcards) { return .failure(problem) }
                hasWildcard = true
            } else if let problem = byteProblem(bytes, byte, wildcards) {
                return .failure(problem)
            }
        }
        if segmentStart == bytes.count { return .failure(emptySegment(bytes, at: bytes.count, wildcards)) }
        guard segmentCount <= maxSegments else {
            return .failure(bad("\(noun(wildcards)) \(quoted(bytes)) has \(segmentCount) segments; the limit is \(maxSegments)"))
        }
        return .success(hasWildcard)
    }

    /// Checks a `*` or `>` at `index`: it must be a whole segment, and `>` the last one.
    private static func wildcardProblem(_ bytes: UnsafeRawBufferPointer, at index: Int, allowed: Bool) -> HeraldError? {
        let symbol = bytes[index] == star ? "*" : ">"
        guard allowed else {
            return bad("channel \(quoted(bytes)) contains wildcard \"\(symbol)\"; a concrete channel is required here")
        }
        let startsSegment = index == 0 || bytes[index - 1] == dot
        let isLast = index + 1 == bytes.count
        guard startsSegment && (isLast || bytes[index + 1] == dot) else {
            return bad("pattern \(quoted(bytes)) has \"\(symbol)\" inside a segment; a wildcard must be a whole segment")
        }
        if bytes[index] == greater && !isLast {
            return bad("pattern \(quoted(bytes)) has \">\" before its last segment; \">\" may only end a pattern")
        }
        return nil
    }

    /// Rejects spaces and control bytes (including DEL); bytes from 0x80 up are UTF-8 and fine.
    private static func byteProblem(_ bytes: UnsafeRawBufferPointer, _ byte: UInt8, _ wildcards: Bool) -> HeraldError? {
        if byte == UInt8(ascii: " ") { return bad("\(noun(wildcards)) \(quoted(bytes)) contains a space") }
        guard byte < 0x20 || byte == 0x7F else { return nil }
        let hex = String(byte, radix: 16, uppercase: true)
        return bad("\(noun(wildcards)) \(quoted(bytes)) contains control byte 0x\(byte < 0x10 ? "0" : "")\(hex)")
    }

    /// The error for an empty segment, saying where, since `.a` and `a.` are the usual typos.
    private static func emptySegment(_ bytes: UnsafeRawBufferPointer, at index: Int, _ wildcards: Bool) -> HeraldError {
        let hint: String
        if index == 0 {
            hint = " (it starts with \".\")"
        } else if index == bytes.count {
            hint = " (it ends with \".\")"
        } else {
            hint = ""
        }
        return bad("\(noun(wildcards)) \(quoted(bytes)) has an empty segment\(hint)")
    }

    /// A `bad_channel` error; messages are built only on this cold path.
    private static func bad(_ message: String) -> HeraldError {
        HeraldError(.badChannel, message)
    }

    /// The name in quotes for a message (at most 255 bytes here, so never truncated).
    private static func quoted(_ bytes: UnsafeRawBufferPointer) -> String {
        "\"" + String(decoding: bytes, as: UTF8.self) + "\""
    }

    /// What the thing being validated is called in messages.
    private static func noun(_ wildcards: Bool) -> String {
        wildcards ? "pattern" : "channel"
    }

    // MARK: - Matching

    /// The index of the `.` ending the segment that starts at `start`, or the end of `bytes`.
    private static func segmentEnd(_ bytes: UnsafeRawBufferPointer, from start: Int) -> Int {
        var index = start
        while index < bytes.count && bytes[index] != dot { index += 1 }
        return index
    }

    /// Whether the segment `range` of `bytes` is exactly the one wildcard byte `symbol`.
    private static func isWildcard(_ symbol: UInt8, in bytes: UnsafeRawBufferPointer, _ range: Range<Int>) -> Bool {
        range.count == 1 && bytes[range.lowerBound] == symbol
    }

    /// Whether the pattern's first segment is `*` or `>`.
    private static func startsWithWildcard(_ pattern: UnsafeRawBufferPointer) -> Bool {
        let end = segmentEnd(pattern, from: 0)
        return isWildcard(star, in: pattern, 0..<end) || isWildcard(greater, in: pattern, 0..<end)
    }

    /// Byte-wise equality of two segments.
    private static func equal(
        _ a: UnsafeRawBufferPointer, _ aRange: Range<Int>,
        _ b: UnsafeRawBufferPointer, _ bRange: Range<Int>
    ) -> Bool {
        guard aRange.count == bRange.count else { return false }
        var i = aRange.lowerBound
        var j = bRange.lowerBound
        while i < aRange.upperBound {
            if a[i] != b[j] { return false }
            i += 1
            j += 1
        }
        return true
    }
}
