import HeraldBroker

/// The node-to-node form of one event (docs/cluster.md). A `pub`: the publishing node writes
/// `FROM CHLEN DATALEN\nCHANNEL DATA` (DATALEN -1 when the event has no `data`), the publish
/// script prefixes `SEQ ` and concatenates the records of a batch into one message per node.
/// A state change: the `state` script writes `SEQ FROM CHLEN MIDLEN TAILLEN\nCHANNEL MIDDLE
/// TAIL` itself (it decides the `rev` the middle carries). History entries are the same
/// records without the `SEQ `, which is the entry's id.
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

    /// The record as the publishing node sends it (without the seq).
    var encoded: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(channel.count + (data?.count ?? 0) + 32)
        out.append(contentsOf: Array("\(from) \(channel.count) \(data.map { $0.count } ?? -1)\n".utf8))
        out.append(contentsOf: channel)
        if let data { out.append(contentsOf: data) }
        return out
    }

    /// The event the broker fans out.
    var event: RemoteEvent {
        RemoteEvent(seq: seq, from: from, channel: channel, data: data, middle: middle, tail: tail)
    }

    /// Splits one node message into records. - Returns: nil when it is malformed.
    static func decode(_ message: [UInt8]) -> [ClusterRecord]? {
        var records: [ClusterRecord] = []
        var at = 0
        while at < message.count {
            guard let newline = message[at...].firstIndex(of: 10) else { return nil }
            let header = message[at..<newline].split(separator: 32)
            guard header.count == 4 || header.count == 5, let seq = Self.int(header[0]), let from = Self.int(header[1]),
                  let channelCount = Self.int(header[2]), channelCount >= 0 else { return nil }
            let start = newline + 1
            let channelEnd = start + channelCount
            if header.count == 5 {
                guard let middleCount = Self.int(header[3]), let tailCount = Self.int(header[4]),
                      middleCount >= 0, tailCount >= 0, channelEnd + middleCount + tailCount <= message.count else { return nil }
                let middleEnd = channelEnd + middleCount
                records.append(ClusterRecord(seq: seq, from: from, channel: Array(message[start..<channelEnd]), data: nil,
                                             middle: Array(message[channelEnd..<middleEnd]),
                                             tail: Array(message[middleEnd..<(middleEnd + tailCount)])))
                at = middleEnd + tailCount
                continue
            }
            guard let dataCount = Self.int(header[3]), dataCount >= -1 else { return nil }
            let end = channelEnd + max(0, dataCount)
            guard end <= message.count else { return nil }
            let channel = Array(message[start..<channelEnd])
            let data = dataCount < 0 ? nil : Array(message[channelEnd..<end])
            records.append(ClusterRecord(seq: seq, from: from, channel: channel, data: data))
            at = end
        }
        return records
    }

    private static func int(_ bytes: ArraySlice<UInt8>) -> Int? {
        Int(String(decoding: bytes, as: UTF8.self))
    }
}
