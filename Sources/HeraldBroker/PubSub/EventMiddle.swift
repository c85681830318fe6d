/// The `,"from":"C"` field inside a stored event's middle (`,"seq":S,"from":"C",…`), which a
/// compact subscription's replayed events leave out.
///
/// Live deliveries know where `from` sits (`Broker.eventFromStart`); a replayed event comes
/// from the history's bytes, so its field is found again here: the middle always starts with
/// `seq` and then `from`, whose value is a client id (`c7`: no quote or escape inside).
enum EventMiddle {
    private static let seqKey = Array(#","seq":"#.utf8)
    private static let fromKey = Array(#","from":""#.utf8)

    /// Where `,"from":"C"` sits in `middle` (indices of the collection), or nil when it has none.
    static func fromRange<Bytes: RandomAccessCollection<UInt8>>(in middle: Bytes) -> Range<Int>? where Bytes.Index == Int {
        guard middle.starts(with: seqKey) else { return nil }
        var start = middle.startIndex + seqKey.count
        while start < middle.endIndex, middle[start] >= UInt8(ascii: "0"), middle[start] <= UInt8(ascii: "9") {
            start += 1
        }
        guard middle[start...].starts(with: fromKey) else { return nil }
        var end = start + fromKey.count
        while end < middle.endIndex, middle[end] != UInt8(ascii: "\"") { end += 1 }
        guard end < middle.endIndex else { return nil }
        return start..<(end + 1)
    }

    /// Appends `middle` to `out`, without its `from` field when `compact`.
    static func append(_ middle: UnsafeRawBufferPointer, compact: Bool, to out: inout [UInt8]) {
        guard compact, let cut = fromRange(in: middle) else { return out.append(contentsOf: middle) }
        out.append(contentsOf: UnsafeRawBufferPointer(rebasing: middle[..<cut.lowerBound]))
        out.append(contentsOf: UnsafeRawBufferPointer(rebasing: middle[cut.upperBound...]))
    }
}
