/// Reads a node message (runs of records, `ClusterRecord`) in place. The plain `pub` event,
/// the receive path of nearly every cross-node event, is handed over without copying its
/// channel or data, so it allocates nothing; a state change, a `req` or a queue-group
/// delivery (rarer, and carrying more) is handed over as a `ClusterRecord`.
struct ClusterMessageReader {
    /// One record, its bytes valid only during the visit.
    enum Item {
        /// A plain `pub` event for the node's plain subscribers.
        case publish(seq: Int, from: Int, channel: UnsafeRawBufferPointer, data: UnsafeRawBufferPointer?)
        /// Anything else, decoded.
        case record(ClusterRecord)
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
            guard let last = number(), space(), let count = number(), count >= 1, count <= bytes.count else { return false }
            var plain = true
            var groupBytes = 0
            while space() {
                switch letter() {
                case UInt8(ascii: "o"): plain = false
                case UInt8(ascii: "g"):
                    guard let length = number(), length >= 0 else { return false }
                    groupBytes = length
                default: skipField()
                }
            }
            guard newline() else { return false }
            if plain && groupBytes == 0 {
                for offset in 0..<count {
                    guard let item = record(seq: last - count + 1 + offset) else { return false }
                    visit(item)
                }
                continue
            }
            // A run for queue groups holds one event, the group block after it.
            guard count == 1, let item = record(seq: last), groupBytes <= bytes.count - at else { return false }
            var decoded: ClusterRecord
            switch item {
            case .record(let record): decoded = record
            case .publish(let seq, let from, let channel, let data):
                decoded = ClusterRecord(seq: seq, from: from, channel: Array(channel), data: data.map { Array($0) })
            }
            guard let groups = ClusterRecord.groups(bytes[at..<(at + groupBytes)].map { $0 }[...]) else { return false }
            at += groupBytes
            decoded.plain = plain
            decoded.groups = groups
            visit(.record(decoded))
        }
        return true
    }

    private mutating func record(seq: Int) -> Item? {
        var token: [UInt8]?
        var timeout = 0
        while at < bytes.count, bytes[at] == UInt8(ascii: "r") || bytes[at] == UInt8(ascii: "t") {
            let kind = bytes[at]
            at += 1
            if kind == UInt8(ascii: "r") {
                let start = at
                skipField()
                token = Array(bytes[start..<at])
            } else {
                guard let value = number() else { return nil }
                timeout = value
            }
            guard space() else { return nil }
        }
        guard let from = number(), space(), let channelCount = number(), space(), let third = number(),
              channelCount >= 0 else { return nil }
        if newline() {
            let dataCount = max(0, third)
            guard third >= -1, channelCount <= bytes.count - at, dataCount <= bytes.count - at - channelCount else { return nil }
            let channel = UnsafeRawBufferPointer(rebasing: bytes[at..<(at + channelCount)])
            let data = third < 0 ? nil : UnsafeRawBufferPointer(rebasing: bytes[(at + channelCount)..<(at + channelCount + dataCount)])
            at += channelCount + dataCount
            guard let token else { return .publish(seq: seq, from: from, channel: channel, data: data) }
            return .record(ClusterRecord(seq: seq, from: from, channel: Array(channel), data: data.map { Array($0) },
                                         replyToken: token, timeoutMs: timeout))
        }
        guard space(), let tailCount = number(), newline(), third >= 0, tailCount >= 0,
              channelCount <= bytes.count - at, third <= bytes.count - at - channelCount,
              tailCount <= bytes.count - at - channelCount - third else { return nil }
        let channelEnd = at + channelCount
        let middleEnd = channelEnd + third
        let record = ClusterRecord(seq: seq, from: from, channel: Array(bytes[at..<channelEnd]), data: nil,
                                   middle: Array(bytes[channelEnd..<middleEnd]),
                                   tail: Array(bytes[middleEnd..<(middleEnd + tailCount)]))
        at = middleEnd + tailCount
        return .record(record)
    }

    /// A decimal integer (optionally negative, at most 18 digits) at `at`.
    private mutating func number() -> Int? {
        var negative = false
        if at < bytes.count, bytes[at] == UInt8(ascii: "-") {
            negative = true
            at += 1
        }
        var value = 0
        var digits = 0
        while at < bytes.count, bytes[at] >= 48, bytes[at] <= 57 {
            guard digits < 18 else { return nil }
            value = value * 10 + Int(bytes[at] - 48)
            at += 1
            digits += 1
        }
        guard digits > 0 else { return nil }
        return negative ? -value : value
    }

    /// The letter starting a tag field (moved past it), or 0.
    private mutating func letter() -> UInt8 {
        guard at < bytes.count else { return 0 }
        at += 1
        return bytes[at - 1]
    }

    /// Moves past the rest of a field (up to a space or newline).
    private mutating func skipField() {
        while at < bytes.count, bytes[at] != 32, bytes[at] != 10 { at += 1 }
    }

    private mutating func space() -> Bool { skip(32) }

    private mutating func newline() -> Bool { skip(10) }

    private mutating func skip(_ byte: UInt8) -> Bool {
        guard at < bytes.count, bytes[at] == byte else { return false }
        at += 1
        return true
    }
}
