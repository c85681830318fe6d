/// Reading array fields (e.g. `lock`'s `subs:[GLOBAL_ID…]`) from the last scanned line.
///
/// Arrays are rare in requests and never on the per-message path, so this accessor
/// allocates freely; the line was already validated by `scan(_:)`, so it only walks it.
extension RequestScanner {
    /// The decoded elements of an array-of-strings field.
    /// - Parameter field: the top-level field.
    /// - Returns: each string's UTF-8 bytes with escapes resolved, in order, or nil when the
    ///   field is absent or `null`.
    /// - Throws: `HeraldError(.badField, …)` when the value is not an array or an element is
    ///   not a string.
    public func stringArray(_ field: RequestField) throws(HeraldError) -> [[UInt8]]? {
        guard let (value, line) = nonNullValue(field) else { return nil }
        guard value.kind == .array else { throw .wrongType(field, expected: "an array of strings", got: value.kind) }
        var result: [[UInt8]] = []
        var i = JSONLexer.skipWhitespace(line, from: value.start &+ 1)
        while i < value.end && line[i] != ASCII.closeBracket {
            guard line[i] == ASCII.quote else {
                throw HeraldError(.badField, "field '\(field.key)' must be an array of strings")
            }
            let (end, _) = try JSONLexer.scanString(line, at: i)
            let capacity = end &- i &- 2
            var element = [UInt8](repeating: 0, count: capacity)
            let length = element.withUnsafeMutableBytes { buffer -> Int in
                guard let base = buffer.baseAddress else { return 0 }
                return JSONStringDecoder.decode(line, from: i &+ 1, to: end &- 1, into: base, capacity: capacity) ?? 0
            }
            element.removeLast(capacity &- length)
            result.append(element)
            i = JSONLexer.skipWhitespace(line, from: end)
            if i < value.end && line[i] == ASCII.comma { i = JSONLexer.skipWhitespace(line, from: i &+ 1) }
        }
        return result
    }
}
