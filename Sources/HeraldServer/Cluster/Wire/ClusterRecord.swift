import HeraldBroker
import HeraldWire

/// The node-to-node form of events (docs/cluster.md).
///
/// A `pub` record, written by the publishing node: `[rHEX tMS ]FROM CHLEN DATALEN\nCHANNEL
/// DATA` (DATALEN -1 when the event has no `data`; `rHEX` a `req`'s reply token, `tMS` its
/// `timeout_ms`). A state record, written by the `state` script (it decides the `rev` the
/// middle carries): `FROM CHLEN MIDLEN TAILLEN\nCHANNEL MIDDLE TAIL`.
///
/// Scripts send, and history keeps, *runs*: `LAST COUNT[ o][ gLEN]\n` followed by COUNT
/// records of one channel, whose `seq`s are LAST-COUNT+1 … LAST, then (with `gLEN`) a block
/// of LEN bytes naming the queue groups the receiving node delivers to, each
/// `KEYLEN:PATTERN GROUP`; `o` says the node's plain subscribers do not get the run (only
/// those groups). A run with group tags holds one event. A node message is runs one after
/// another. Unknown letter fields are skipped, so a newer node's messages read.
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

    /// The record as the publishing node sends it (without the run header).
    var encoded: [UInt8] {
        var out: [UInt8] = []
        Self.append(from: from, channel: channel, data: data, replyToken: replyToken, timeoutMs: timeoutMs, to: &out)
        return out
    }

    /// Appends a `pub` record to `out` (the publishing node's part of a batch).
    static func append(from: Int, channel: [UInt8], data: [UInt8]?, replyToken: [UInt8]? = nil, timeoutMs: Int = 0,
                       to out: inout [UInt8]) {
        // No reserveCapacity here: called per event on a growing batch, an exact reservation
        // would reallocate every time (quadratic); appends grow geometrically.
        if let replyToken {
            out.append(UInt8(ascii: "r"))
            out.append(contentsOf: replyToken)
            out.append(contentsOf: [32, UInt8(ascii: "t")])
            out.appendInt(timeoutMs)
            out.append(32)
        }
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

    /// How the receiving node delivers it.
    var routing: ClusterRouting {
        ClusterRouting(plain: plain, groups: groups, replyToken: replyToken, requestTimeoutMs: timeoutMs)
    }

    /// Splits one node message (or a history entry) into records. - Returns: nil when it
    /// is malformed.
    static func decode(_ message: [UInt8]) -> [ClusterRecord]? {
        var records: [ClusterRecord] = []
        let complete = message.withUnsafeBytes { bytes in
            var reader = ClusterMessageReader(bytes)
            return reader.forEach { item in
                switch item {
                case .publish(let seq, let from, let channel, let data):
                    records.append(ClusterRecord(seq: seq, from: from, channel: Array(channel), data: data.map { Array($0) }))
                case .record(let record):
                    records.append(record)
                }
            }
        }
        return complete ? records : nil
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

    /// A run's targets as the `publish` and `state` scripts read them: `!` first when it is
    /// not kept in history, the node indexes comma-separated, then `|` and the groups
    /// (`encodeGroups`) when it matches any; led by `~LEN:ID` for an idempotent publish
    /// (`publish` only).
    static func encodeTargets(_ nodes: [Int], groups: [[UInt8]], kept: Bool, dedupID: [UInt8]? = nil) -> [UInt8] {
        var out: [UInt8] = []
        if let dedupID {
            out.append(UInt8(ascii: "~"))
            out.appendInt(dedupID.count)
            out.append(UInt8(ascii: ":"))
            out += dedupID
        }
        if !kept { out.append(UInt8(ascii: "!")) }
        for (position, node) in nodes.enumerated() {
            if position > 0 { out.append(UInt8(ascii: ",")) }
            out.appendInt(node)
        }
        if !groups.isEmpty {
            out.append(UInt8(ascii: "|"))
            out += encodeGroups(groups)
        }
        return out
    }

    /// Encodes queue-group entries as `KEYLEN:KEY` repeated (the publish script's input).
    static func encodeGroups(_ groups: [[UInt8]]) -> [UInt8] {
        var out: [UInt8] = []
        for group in groups {
            out.appendInt(group.count)
            out.append(UInt8(ascii: ":"))
            out.append(contentsOf: group)
        }
        return out
    }

    private static func int(_ bytes: ArraySlice<UInt8>) -> Int? {
        guard bytes.count <= 20 else { return nil }
        return Int(String(decoding: bytes, as: UTF8.self))
    }
}
