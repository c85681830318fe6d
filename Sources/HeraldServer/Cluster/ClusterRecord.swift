import HeraldBroker

/// The node-to-node form of one event (docs/cluster.md). A `pub`: the publishing node writes
/// `[TAGS ]FROM CHLEN DATALEN\nCHANNEL DATA` (DATALEN -1 when the event has no `data`), the
/// publish script prefixes `SEQ ` (and its own tags) and concatenates the records of a batch
/// into one message per node. A state change: the `state` script writes `SEQ FROM CHLEN
/// MIDLEN TAILLEN\nCHANNEL MIDDLE TAIL` itself (it decides the `rev` the middle carries).
/// History entries are the same records without the `SEQ `, which is the entry's id.
///
/// Tags are header fields between `SEQ` and `FROM`, each a letter and a value: `rHEX` (a
/// `req`'s reply token) and `tMS` (its `timeout_ms`) from the publishing node; `gLEN` (a
/// block of LEN bytes after DATA naming the queue groups this node delivers to, each
/// `KEYLEN:PATTERN GROUP`) and `o` (only for those groups, not for the node's plain
/// subscribers) from the script. Unknown tags are skipped, so a newer node's records read.
struct ClusterRecord: Equatable {
    /// The channel's `seq` (0 before the script gave it one).
    var seq: Int
    /// The publisher's global client id.
    var from: Int
    /// The concrete channel.
    var channel: [UInt8]
    /// The raw JSON of `data`, when present.
    var data: [UInt8]?
    /// A state event's fields after `from`; nil for a `pub` event.
    var middle: [UInt8]? = nil
    /// A state event's payload field (may be empty).
    var tail: [UInt8] = []
    /// A `req`'s reply token (32 hex digits), or nil.
    var replyToken: [UInt8]? = nil
    /// A `req`'s `timeout_ms`.
    var timeoutMs: Int = 0
    /// Whether the node's plain subscribers get it (false: only the groups below).
    var plain: Bool = true
    /// The queue groups (`PATTERN GROUP`) the receiving node delivers it to.
    var groups: [[UInt8]] = []

    /// The record as the publishing node sends it (without the seq).
    var encoded: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(channel.count + (data?.count ?? 0) + 32)
        if let replyToken {
            out.append(UInt8(ascii: "r"))
            out.append(contentsOf: replyToken)
            out.append(contentsOf: Array(" t\(timeoutMs) ".utf8))
        }
        out.append(contentsOf: Array("\(from) \(channel.count) \(data.map { $0.count } ?? -1)\n".utf8))
        out.append(contentsOf: channel)
        if let data { out.append(contentsOf: data) }
        return out
    }

    /// The event the broker fans out.
    var event: RemoteEvent {
        RemoteEvent(seq: seq, from: from, channel: channel, data: data, middle: middle, tail: tail)
    }

    /// How the receiving node delivers it.
    var routing: ClusterRouting {
        ClusterRouting(plain: plain, groups: groups, replyToken: replyToken, requestTimeoutMs: timeoutMs)
    }

    /// Splits one node message into records. - Returns: nil when it is malformed.
    static func decode(_ message: [UInt8]) -> [ClusterRecord]? {
        var records: [ClusterRecord] = []
        var at = 0
        while at < message.count {
            guard let newline = message[at...].firstIndex(of: 10) else { return nil }
            let header = message[at..<newline].split(separator: 32)
            guard let first = header.first, let seq = Self.int(first) else { return nil }
            var record = ClusterRecord(seq: seq, from: 0, channel: [], data: nil)
            var groupBytes = 0
            var numbers: [Int] = []
            for field in header.dropFirst() {
                guard let letter = field.first else { continue }
                if letter == UInt8(ascii: "-") || (letter >= UInt8(ascii: "0") && letter <= UInt8(ascii: "9")) {
                    guard let number = Self.int(field) else { return nil }
                    numbers.append(number)
                    continue
                }
                let value = field.dropFirst()
                switch letter {
                case UInt8(ascii: "r"): record.replyToken = Array(value)
                case UInt8(ascii: "t"): record.timeoutMs = Self.int(value) ?? 0
                case UInt8(ascii: "g"): groupBytes = Self.int(value) ?? -1
                case UInt8(ascii: "o"): record.plain = false
                default: continue
                }
            }
            // A `pub`: FROM CHLEN DATALEN; a state change: FROM CHLEN MIDLEN TAILLEN.
            guard numbers.count == 3 || numbers.count == 4, groupBytes >= 0 else { return nil }
            record.from = numbers[0]
            let channelCount = numbers[1]
            let start = newline + 1
            // Lengths come from Redis: checked against what is left, never added unchecked.
            let left = message.count - start
            guard channelCount >= 0, channelCount <= left else { return nil }
            let channelEnd = start + channelCount
            record.channel = Array(message[start..<channelEnd])
            if numbers.count == 4 {
                let (middleCount, tailCount) = (numbers[2], numbers[3])
                guard middleCount >= 0, tailCount >= 0, middleCount <= left - channelCount,
                      tailCount <= left - channelCount - middleCount else { return nil }
                let middleEnd = channelEnd + middleCount
                record.middle = Array(message[channelEnd..<middleEnd])
                record.tail = Array(message[middleEnd..<(middleEnd + tailCount)])
                records.append(record)
                at = middleEnd + tailCount
                continue
            }
            let dataCount = numbers[2]
            guard dataCount >= -1, max(0, dataCount) <= left - channelCount,
                  groupBytes <= left - channelCount - max(0, dataCount) else { return nil }
            let dataEnd = channelEnd + max(0, dataCount)
            record.data = dataCount < 0 ? nil : Array(message[channelEnd..<dataEnd])
            if groupBytes > 0 {
                guard let groups = Self.groups(message[dataEnd..<(dataEnd + groupBytes)]) else { return nil }
                record.groups = groups
            }
            records.append(record)
            at = dataEnd + groupBytes
        }
        return records
    }

    /// `KEYLEN:KEY` repeated. - Returns: nil when malformed.
    static func groups(_ block: ArraySlice<UInt8>) -> [[UInt8]]? {
        var found: [[UInt8]] = []
        var at = block.startIndex
        while at < block.endIndex {
            guard let colon = block[at...].firstIndex(of: UInt8(ascii: ":")), let length = Self.int(block[at..<colon]),
                  length >= 0, length <= block.endIndex - colon - 1 else { return nil }
            found.append(Array(block[(colon + 1)..<(colon + 1 + length)]))
            at = colon + 1 + length
        }
        return found
    }

    /// Encodes queue-group entries as `KEYLEN:KEY` repeated (the publish script's input).
    static func encodeGroups(_ groups: [[UInt8]]) -> [UInt8] {
        var out: [UInt8] = []
        for group in groups {
            out.append(contentsOf: Array("\(group.count):".utf8))
            out.append(contentsOf: group)
        }
        return out
    }

    private static func int(_ bytes: ArraySlice<UInt8>) -> Int? {
        guard bytes.count <= 20 else { return nil }
        return Int(String(decoding: bytes, as: UTF8.self))
    }
}
