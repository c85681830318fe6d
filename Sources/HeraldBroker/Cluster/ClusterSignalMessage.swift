import HeraldWire

/// A message between the sender's node of a signal and the node of a handler it is offered
/// to (docs/cluster.md, "Signals and links"), published straight to the other node's
/// channel `{p}n:INDEX` like a reply (`ClusterNodeMessage`). Signal ids are global (the
/// sender's node index in the high 32 bits), so both nodes name a signal the same way.
///
/// - `O`: offer, sender → handler node: `OID ATTEMPT OWNER TIMEOUT\nLEN LEN LEN LEN LEN LEN\n` and
///   the bytes of the handler's name, the level, the origin, the sender's quoted client id,
///   the raw `tag` and the raw `data` (LEN -1: absent);
/// - `V`: verdict, handler node → sender: `VID ATTEMPT p|s|k|g` (pass, stop, skipped: the
///   handler may not be asked, gone: its connection left holding the offer);
/// - `C`: callback, handler node → sender: `CID OWNER LEN\nDATA` (LEN -1: no `data`);
/// - `W`: withdrawn, sender → handler node: `WID`, the signal ended (its offers there are
///   over: a later `handled` is ignored, a `callback` is `not_found`).
public enum ClusterSignalMessage: Equatable, Sendable {
    /// What a handler's node answers for an offer.
    public enum Verdict: UInt8, Sendable {
        case pass = 112  // p
        case stop = 115  // s
        case skipped = 107  // k
        case gone = 103  // g
    }

    /// An offer of signal `id` (its `attempt`th offer) to the handler `owner`/`name`.
    case offer(id: Int, attempt: Int, owner: ConnectionID, timeoutMs: Int, name: [UInt8], level: [UInt8], origin: [UInt8],
               from: [UInt8], tag: [UInt8]?, data: [UInt8]?)
    /// The handler's answer to the offer `attempt` of signal `id`.
    case verdict(id: Int, attempt: Int, verdict: Verdict)
    /// A callback from the handler connection `owner` for signal `id`.
    case callback(id: Int, owner: ConnectionID, data: [UInt8]?)
    /// Signal `id` ended.
    case withdrawn(id: Int)

    /// Whether a node message (first byte) is one of these.
    public static func isSignalMessage(_ payload: [UInt8]) -> Bool {
        guard let first = payload.first else { return false }
        return first == UInt8(ascii: "O") || first == UInt8(ascii: "V") || first == UInt8(ascii: "C")
            || first == UInt8(ascii: "W")
    }

    /// The bytes to publish.
    public var encoded: [UInt8] {
        var out: [UInt8] = []
        switch self {
        case .offer(let id, let attempt, let owner, let timeoutMs, let name, let level, let origin, let from, let tag, let data):
            out.append(UInt8(ascii: "O"))
            Self.appendNumbers([id, attempt, owner, timeoutMs], to: &out)
            out.append(10)
            let fields: [[UInt8]?] = [name, level, origin, from, tag, data]
            Self.appendNumbers(fields.map { $0?.count ?? -1 }, to: &out)
            out.append(10)
            for field in fields { if let field { out.append(contentsOf: field) } }
        case .verdict(let id, let attempt, let verdict):
            out.append(UInt8(ascii: "V"))
            Self.appendNumbers([id, attempt], to: &out)
            out.append(32)
            out.append(verdict.rawValue)
        case .callback(let id, let owner, let data):
            out.append(UInt8(ascii: "C"))
            Self.appendNumbers([id, owner, data?.count ?? -1], to: &out)
            out.append(10)
            if let data { out.append(contentsOf: data) }
        case .withdrawn(let id):
            out.append(UInt8(ascii: "W"))
            out.appendInt(id)
        }
        return out
    }

    /// Reads one message. - Returns: nil when it is malformed or of another kind.
    public static func decode(_ payload: [UInt8]) -> ClusterSignalMessage? {
        guard let kind = payload.first else { return nil }
        var reader = Reader(payload: payload, at: 1)
        switch kind {
        case UInt8(ascii: "O"):
            guard let numbers = reader.numbers(4, until: 10), let lengths = reader.numbers(6, until: 10),
                  var fields = reader.fields(lengths), reader.atEnd,
                  let name = fields[0], let level = fields[1], let origin = fields[2], let from = fields[3] else { return nil }
            let data = fields.removeLast()
            return .offer(id: numbers[0], attempt: numbers[1], owner: numbers[2], timeoutMs: numbers[3], name: name, level: level,
                          origin: origin, from: from, tag: fields[4], data: data)
        case UInt8(ascii: "V"):
            guard let numbers = reader.numbers(2, until: 32), let byte = reader.byte(), reader.atEnd,
                  let verdict = Verdict(rawValue: byte) else { return nil }
            return .verdict(id: numbers[0], attempt: numbers[1], verdict: verdict)
        case UInt8(ascii: "C"):
            guard let numbers = reader.numbers(3, until: 10), let fields = reader.fields([numbers[2]]),
                  reader.atEnd else { return nil }
            return .callback(id: numbers[0], owner: numbers[1], data: fields[0])
        case UInt8(ascii: "W"):
            guard let numbers = reader.numbers(1, until: nil), reader.atEnd else { return nil }
            return .withdrawn(id: numbers[0])
        default:
            return nil
        }
    }

    private static func appendNumbers(_ numbers: [Int], to out: inout [UInt8]) {
        for (position, number) in numbers.enumerated() {
            if position > 0 { out.append(32) }
            if number < 0 {
                out.append(UInt8(ascii: "-"))
                out.appendInt(-number)
            } else {
                out.appendInt(number)
            }
        }
    }

    /// A cursor over a message's bytes.
    private struct Reader {
        let payload: [UInt8]
        var at: Int

        var atEnd: Bool { at == payload.count }

        mutating func byte() -> UInt8? {
            guard at < payload.count else { return nil }
            defer { at += 1 }
            return payload[at]
        }

        /// `count` space-separated integers (-1 allowed) ending at `end` (nil: the message's end).
        mutating func numbers(_ count: Int, until end: UInt8?) -> [Int]? {
            var found: [Int] = []
            while found.count < count {
                var value = 0
                var digits = 0
                let negative = at < payload.count && payload[at] == UInt8(ascii: "-")
                if negative { at += 1 }
                while at < payload.count, payload[at] >= 48, payload[at] <= 57, digits < 18 {
                    value = value * 10 + Int(payload[at] - 48)
                    digits += 1
                    at += 1
                }
                guard digits > 0, !negative || value == 1 else { return nil }
                found.append(negative ? -1 : value)
                let separator: UInt8? = found.count < count ? 32 : end
                if let separator {
                    guard at < payload.count, payload[at] == separator else { return nil }
                    at += 1
                }
            }
            return found
        }

        /// Fields of the given lengths (-1: absent), back to back.
        mutating func fields(_ lengths: [Int]) -> [[UInt8]?]? {
            var found: [[UInt8]?] = []
            for length in lengths {
                guard length >= 0 else {
                    found.append(nil)
                    continue
                }
                guard length <= payload.count - at else { return nil }
                found.append(Array(payload[at..<(at + length)]))
                at += length
            }
            return found
        }
    }
}
