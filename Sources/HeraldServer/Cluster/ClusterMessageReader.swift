/// Reads a node message (runs of records, `ClusterRecord`) in place, without copying a
/// `pub` event's channel or data: the receive path of every cross-node event, so it
/// allocates nothing per `pub` record (a state record, rare, is handed over as a
/// `ClusterRecord`).
struct ClusterMessageReader {
    /// One record, its bytes valid only during the visit.
    enum Item {
        /// A `pub` event.
        case publish(seq: Int, from: Int, channel: UnsafeRawBufferPointer, data: UnsafeRawBufferPointer?)
        /// A state change.
        case state(ClusterRecord)
    }

    private let bytes: UnsafeRawBufferPointer
    private var at = 0

    init(_ bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
    }

    /// Visits every record in order. - Returns: false when the message is malformed (the
    /// records before the fault were visited).
    mutating func forEach(_ visit: (Item) -> Void) -> Bool {
        while at < bytes.count {
            guard let last = number(), space(), let count = number(), newline(), count >= 1, count <= bytes.count else {
                return false
            }
            for offset in 0..<count {
                guard let item = record(seq: last - count + 1 + offset) else { return false }
                visit(item)
            }
        }
        return true
    }

    private mutating func record(seq: Int) -> Item? {
        guard let from = number(), space(), let channelCount = number(), space(), let third = number(),
              channelCount >= 0 else { return nil }
        if newline() {
            let dataCount = max(0, third)
            guard third >= -1, channelCount + dataCount <= bytes.count - at else { return nil }
            let channel = UnsafeRawBufferPointer(rebasing: bytes[at..<(at + channelCount)])
            let data = third < 0 ? nil : UnsafeRawBufferPointer(rebasing: bytes[(at + channelCount)..<(at + channelCount + dataCount)])
            at += channelCount + dataCount
            return .publish(seq: seq, from: from, channel: channel, data: data)
        }
        guard space(), let tailCount = number(), newline(), third >= 0, tailCount >= 0,
              channelCount + third + tailCount <= bytes.count - at else { return nil }
        let channelEnd = at + channelCount
        let middleEnd = channelEnd + third
        let record = ClusterRecord(seq: seq, from: from, channel: Array(bytes[at..<channelEnd]), data: nil,
                                   middle: Array(bytes[channelEnd..<middleEnd]),
                                   tail: Array(bytes[middleEnd..<(middleEnd + tailCount)]))
        at = middleEnd + tailCount
        return .state(record)
    }

    /// A decimal integer (optionally negative) at `at`.
    private mutating func number() -> Int? {
        var negative = false
        if at < bytes.count, bytes[at] == UInt8(ascii: "-") {
            negative = true
            at += 1
        }
        var value = 0
        var digits = 0
        while at < bytes.count, bytes[at] >= 48, bytes[at] <= 57, digits < 18 {
            value = value * 10 + Int(bytes[at] - 48)
            at += 1
            digits += 1
        }
        guard digits > 0 else { return nil }
        return negative ? -value : value
    }

    private mutating func space() -> Bool { skip(32) }

    private mutating func newline() -> Bool { skip(10) }

    private mutating func skip(_ byte: UInt8) -> Bool {
        guard at < bytes.count, bytes[at] == byte else { return false }
        at += 1
        return true
    }
}
