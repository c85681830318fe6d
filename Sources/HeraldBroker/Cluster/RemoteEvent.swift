import HeraldWire

/// One event as it comes back from the cluster's Redis (docs/cluster.md): live, through the
/// node's message channel, or replayed from a channel's history stream.
public struct RemoteEvent: Sendable, Equatable {
    /// The channel's `seq` for it, given by a script.
    public var seq: Int
    /// The publisher's global client id.
    public var from: Int
    /// The concrete channel.
    public var channel: [UInt8]
    /// A `pub` event's raw `data`, when it has one.
    public var data: [UInt8]?
    /// A state event's fields after `from` (`,"kind":…,"rev":R…`); nil for a `pub` event.
    public var middle: [UInt8]?
    /// A state event's last field (`,"value":…` or `,"insert":…`), possibly empty.
    public var tail: [UInt8]

    /// An event with these parts.
    public init(seq: Int, from: Int, channel: [UInt8], data: [UInt8]?, middle: [UInt8]? = nil, tail: [UInt8] = []) {
        self.seq = seq
        self.from = from
        self.channel = channel
        self.data = data
        self.middle = middle
        self.tail = tail
    }

    /// The event's stored frame parts as a replay or a single delivery writes them:
    /// `,"seq":S,"from":"cF"` + the state fields, and the payload field + `}\n`.
    var frameParts: (middle: [UInt8], tail: [UInt8]) {
        var head: [UInt8] = []
        head.appendRaw(#","seq":"#)
        head.appendInt(seq)
        head.appendRaw(#","from":"c"#)
        head.appendInt(from)
        head.appendRaw(#"""#)
        var last: [UInt8] = []
        if let middle {
            head.append(contentsOf: middle)
            last.append(contentsOf: tail)
        } else if let data {
            last.appendRaw(#","data":"#)
            last.append(contentsOf: data)
        }
        last.appendRaw("}\n")
        return (head, last)
    }
}
