/// Whether one pattern reaches every channel another can match, for permissions: a
/// wildcard subscription is allowed only when a single allow pattern covers it.
extension ChannelName {
    /// Whether every concrete channel matched by `inner` is matched by `outer`.
    ///
    /// Why not sample channels: `covers` must be exact, since it decides what a user may
    /// see. Segment by segment: a `>` in `outer` covers any non-empty rest of `inner`; a `*`
    /// covers one literal or `*` segment; a literal only itself. The `$` rule holds: an
    /// `outer` starting with a wildcard never covers an `inner` whose first segment is a
    /// literal `$…` name, while an `inner` starting with a wildcard matches no `$` name anyway.
    /// - Parameters:
    ///   - outer: a valid pattern (or concrete name) as UTF-8, e.g. an allow entry.
    ///   - inner: a valid pattern (or concrete name) as UTF-8, e.g. a subscription.
    /// - Returns: true when `inner` matches nothing `outer` does not.
    public static func covers(_ outer: [UInt8], _ inner: [UInt8]) -> Bool {
        let left = segments(outer)
        let right = segments(inner)
        guard let firstLeft = left.first, !right.isEmpty else { return false }
        if isReserved(inner) && isWildcardOnly(outer, firstLeft) { return false }
        var i = 0
        while true {
            if i < left.count && isOneByte(outer, left[i], UInt8(ascii: ">")) { return i < right.count }
            if i == left.count || i == right.count { return i == left.count && i == right.count }
            let innerSegment = right[i]
            if isOneByte(inner, innerSegment, UInt8(ascii: ">")) { return false }
            if isOneByte(outer, left[i], UInt8(ascii: "*")) {
                i += 1
                continue
            }
            if isOneByte(inner, innerSegment, UInt8(ascii: "*")) { return false }
            guard outer[left[i]].elementsEqual(inner[innerSegment]) else { return false }
            i += 1
        }
    }

    private static func isOneByte(_ bytes: [UInt8], _ range: Range<Int>, _ symbol: UInt8) -> Bool {
        range.count == 1 && bytes[range.lowerBound] == symbol
    }

    private static func isWildcardOnly(_ bytes: [UInt8], _ range: Range<Int>) -> Bool {
        isOneByte(bytes, range, UInt8(ascii: "*")) || isOneByte(bytes, range, UInt8(ascii: ">"))
    }
}
