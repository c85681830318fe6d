/// Typed reads of the fields recorded by the last scan.
///
/// All of them treat an absent field and a JSON `null` alike (nil), and throw `bad_field`
/// when the value has another JSON type, so op handlers need no type checks of their own.
/// They read the scanned line's memory: use them only while that buffer is alive.
extension RequestScanner {
    /// The decoded contents of a string field.
    ///
    /// Allocates the returned array; hot paths should prefer `withString(_:_:)`.
    /// - Parameter field: the top-level field.
    /// - Returns: the string's UTF-8 bytes with escapes resolved, or nil when absent or `null`.
    /// - Throws: `HeraldError(.badField, …)` when the value is not a string.
    public func string(_ field: RequestField) throws(HeraldError) -> [UInt8]? {
        try withString(field) { bytes in Array(bytes) }
    }

    /// Runs `body` on the decoded contents of a string field, without allocating.
    ///
    /// A string without escapes is passed as a slice of the line itself; one with escapes is
    /// decoded into a buffer the scanner reuses (a nested call while that buffer is busy
    /// decodes into a temporary one instead). Either way the buffer is valid only inside `body`.
    /// - Parameters:
    ///   - field: the top-level field.
    ///   - body: receives the UTF-8 bytes with escapes resolved (no quotes).
    /// - Returns: `body`'s result, or nil when the field is absent or `null` (`body` is not called).
    /// - Throws: `HeraldError(.badField, …)` when the value is not a string, or whatever `body` throws.
    public func withString<R>(
        _ field: RequestField, _ body: (UnsafeRawBufferPointer) throws(HeraldError) -> R
    ) throws(HeraldError) -> R? {
        guard let (value, line) = nonNullValue(field) else { return nil }
        guard value.kind == .string else { throw .wrongType(field, expected: "a string", got: value.kind) }
        let start = value.start &+ 1
        let end = value.end &- 1
        guard value.hasEscapes else {
            return try body(UnsafeRawBufferPointer(start: line.base + start, count: end &- start))
        }
        return try withDecoded(line, from: start, to: end, body)
    }

    /// Decodes `start..<end` into the reusable buffer (or a temporary one when it is busy) and runs `body`.
    private func withDecoded<R>(
        _ line: JSONInput, from start: Int, to end: Int,
        _ body: (UnsafeRawBufferPointer) throws(HeraldError) -> R
    ) throws(HeraldError) -> R {
        let needed = end &- start
        if decodeBufferInUse {
            let temporary = UnsafeMutableRawPointer.allocate(byteCount: max(needed, 1), alignment: 1)
            defer { temporary.deallocate() }
            let length = JSONStringDecoder.decode(line, from: start, to: end, into: temporary, capacity: needed) ?? 0
            return try body(UnsafeRawBufferPointer(start: temporary, count: length))
        }
        if needed > decodeCapacity {
            // Doubling keeps growth amortised; the buffer then stays for the connection's life.
            decodeBuffer.deallocate()
            decodeCapacity = max(needed, decodeCapacity &* 2)
            decodeBuffer = .allocate(byteCount: decodeCapacity, alignment: 1)
        }
        decodeBufferInUse = true
        defer { decodeBufferInUse = false }
        let length = JSONStringDecoder.decode(line, from: start, to: end, into: decodeBuffer, capacity: needed) ?? 0
        return try body(UnsafeRawBufferPointer(start: decodeBuffer, count: length))
    }

    /// An integer field.
    ///
    /// Only JSON integers qualify: a fraction or exponent (`1.0`, `1e3`) is rejected rather
    /// than converted, so clients cannot rely on lossy coercions.
    /// - Parameter field: the top-level field.
    /// - Returns: the value, or nil when absent or `null`.
    /// - Throws: `HeraldError(.badField, …)` when the value is not a number, not an integer,
    ///   or outside the 64-bit signed range.
    public func int(_ field: RequestField) throws(HeraldError) -> Int? {
        guard let (value, line) = nonNullValue(field) else { return nil }
        guard value.kind == .number else { throw .wrongType(field, expected: "an integer", got: value.kind) }
        var i = value.start
        let negative = line[i] == ASCII.minus
        if negative { i &+= 1 }
        // Accumulate as a negative number so Int.min, whose magnitude exceeds Int.max, parses.
        var result = 0
        var overflow = false
        while i < value.end {
            let byte = line[i]
            guard ASCII.isDigit(byte) else {
                throw HeraldError(.badField, "field '\(field.key)' must be an integer, got \(Self.excerpt(line, value))")
            }
            if !overflow {
                let (scaled, o1) = result.multipliedReportingOverflow(by: 10)
                let (next, o2) = scaled.subtractingReportingOverflow(Int(byte &- ASCII.zero))
                overflow = o1 || o2
                result = next
            }
            i &+= 1
        }
        if !negative && !overflow {
            (result, overflow) = (0 as Int).subtractingReportingOverflow(result)
        }
        guard !overflow else {
            throw HeraldError(.badField, "field '\(field.key)' out of range, must fit a 64-bit signed integer")
        }
        return result
    }

    /// A boolean field.
    /// - Parameter field: the top-level field.
    /// - Returns: the value, or nil when absent or `null`.
    /// - Throws: `HeraldError(.badField, …)` when the value is not `true` or `false`.
    public func bool(_ field: RequestField) throws(HeraldError) -> Bool? {
        guard let (value, _) = nonNullValue(field) else { return nil }
        switch value.kind {
        case .true: return true
        case .false: return false
        default: throw .wrongType(field, expected: "a boolean", got: value.kind)
        }
    }

    /// A number's text for error messages, shortened so a huge number cannot bloat the reply.
    private static func excerpt(_ line: JSONInput, _ value: ScannedValue) -> String {
        let limit = 24
        let length = min(value.end &- value.start, limit)
        let text = String(decoding: UnsafeRawBufferPointer(start: line.base + value.start, count: length), as: UTF8.self)
        return value.end &- value.start > limit ? text + "…" : text
    }
}
