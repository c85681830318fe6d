import HeraldBroker
import HeraldWire

/// The node-to-node form of events (docs/cluster.md). A `pub` record, written by the
/// publishing node: `FROM CHLEN DATALEN\nCHANNEL DATA` (DATALEN -1 when the event has no
/// `data`). A state record, written by the `state` script (it decides the `rev` the middle
/// carries): `FROM CHLEN MIDLEN TAILLEN\nCHANNEL MIDDLE TAIL`. Scripts send, and history
/// keeps, *runs*: `LAST COUNT\n` followed by COUNT records of one channel, whose `seq`s are
/// LAST-COUNT+1 … LAST. A node message is runs one after another.
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
        Self.append(from: from, channel: channel, data: data, to: &out)
        return out
    }

    /// Appends a `pub` record to `out` (the publishing node's part of a batch).
    static func append(from: Int, channel: [UInt8], data: [UInt8]?, to out: inout [UInt8]) {
        // No reserveCapacity here: called per event on a growing batch, an exact reservation
        // would reallocate every time (quadratic); appends grow geometrically.
        out.appendInt(from)
        out.append(32)
        out.appendInt(channel.count)
        out.append(32)
        out.appendInt(data?.count ?? -1)
        out.append(10)
        out.append(contentsOf: channel)
        if let data { out.append(contentsOf: data) }
    }

    /// The event the broker fans out.
    var event: RemoteEvent {
        RemoteEvent(seq: seq, from: from, channel: channel, data: data, middle: middle, tail: tail)
    }

    /// Splits one node message (or a history entry) into records. - Returns: nil when it
    /// is malformed.
    static func decode(_ message: [UInt8]) -> [ClusterRecord]? {
        var records: [ClusterRecord] = []
        var at = 0
        while at < message.count {
            guard let run = Self.header(message, &at), run.count == 2, let last = run[0], let count = run[1],
                  count >= 1 else { return nil }
            for seq in (last - count + 1)...last {
                guard let record = Self.record(message, &at, seq: seq) else { return nil }
                records.append(record)
            }
        }
        return records
    }

    /// One record at `at` (moved past it).
    private static func record(_ message: [UInt8], _ at: inout Int, seq: Int) -> ClusterRecord? {
        guard let fields = Self.header(message, &at), fields.count == 3 || fields.count == 4,
              let from = fields[0], let channelCount = fields[1], channelCount >= 0 else { return nil }
        let start = at
        let channelEnd = start + channelCount
        if fields.count == 4 {
            guard let middleCount = fields[2], let tailCount = fields[3], middleCount >= 0, tailCount >= 0,
                  channelEnd + middleCount + tailCount <= message.count else { return nil }
            let middleEnd = channelEnd + middleCount
            at = middleEnd + tailCount
            return ClusterRecord(seq: seq, from: from, channel: Array(message[start..<channelEnd]), data: nil,
                                 middle: Array(message[channelEnd..<middleEnd]), tail: Array(message[middleEnd..<at]))
        }
        guard let dataCount = fields[2], dataCount >= -1 else { return nil }
        let end = channelEnd + max(0, dataCount)
        guard end <= message.count else { return nil }
        at = end
        return ClusterRecord(seq: seq, from: from, channel: Array(message[start..<channelEnd]),
                             data: dataCount < 0 ? nil : Array(message[channelEnd..<end]))
    }

    /// The space-separated integers of the line at `at` (moved past its newline); nil when
    /// there is no newline. A field that is not an integer is nil.
    private static func header(_ message: [UInt8], _ at: inout Int) -> [Int?]? {
        guard let newline = message[at...].firstIndex(of: 10) else { return nil }
        let fields = message[at..<newline].split(separator: 32).map { Self.int($0) }
        at = newline + 1
        return fields
    }

    private static func int(_ bytes: ArraySlice<UInt8>) -> Int? {
        Int(String(decoding: bytes, as: UTF8.self))
    }
}
