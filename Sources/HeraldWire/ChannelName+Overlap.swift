/// Whether two patterns can match a common channel, for answering which subscriptions a
/// pattern-wide `lock` covers.
extension ChannelName {
    /// Whether some concrete channel is matched by both patterns.
    ///
    /// Why: `lock {ch:"cars.>"}` reports the subscriptions it silences, and a subscription
    /// on `cars.*.moved` is silenced on some of those channels even though neither pattern
    /// contains the other. The `$` rule of ``matches(pattern:channel:)-(UnsafeRawBufferPointer,UnsafeRawBufferPointer)``
    /// holds here too: a pattern starting with a wildcard never overlaps a `$…` one.
    /// - Parameters:
    ///   - a: a valid pattern (or concrete name) as UTF-8.
    ///   - b: another valid pattern (or concrete name) as UTF-8.
    /// - Returns: true when one channel exists that both match.
    public static func overlaps(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        let left = segments(a)
        let right = segments(b)
        guard let firstLeft = left.first, let firstRight = right.first else { return false }
        if isReserved(a) && isWildcardSegment(b, firstRight) { return false }
        if isReserved(b) && isWildcardSegment(a, firstLeft) { return false }
        var i = 0
        var j = 0
        while true {
            if i < left.count && isSegment(a, left[i], UInt8(ascii: ">")) { return j < right.count }
            if j < right.count && isSegment(b, right[j], UInt8(ascii: ">")) { return i < left.count }
            if i == left.count || j == right.count { return i == left.count && j == right.count }
            let compatible = isSegment(a, left[i], UInt8(ascii: "*")) || isSegment(b, right[j], UInt8(ascii: "*"))
                || a[left[i]].elementsEqual(b[right[j]])
            guard compatible else { return false }
            i += 1
            j += 1
        }
    }

    private static func isSegment(_ bytes: [UInt8], _ range: Range<Int>, _ symbol: UInt8) -> Bool {
        range.count == 1 && bytes[range.lowerBound] == symbol
    }

    private static func isWildcardSegment(_ bytes: [UInt8], _ range: Range<Int>) -> Bool {
        isSegment(bytes, range, UInt8(ascii: "*")) || isSegment(bytes, range, UInt8(ascii: ">"))
    }
}
