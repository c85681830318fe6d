/// A message one node sends straight to another's channel `{p}n:INDEX`, not through the
/// publish script (docs/cluster.md, "Requests and replies"): nothing in it needs an order
/// agreed by Redis. Event messages start with a digit (a `seq`); these with a capital letter.
///
/// - `R`: a reply to a request of the receiving node:
///   `RRECEIPT NODE FROM TOKEN DATALEN\nDATA` (DATALEN -1 without `data`; RECEIPT 0 when
///   the replier sent no `rid` and wants no answer);
/// - `D`: the requester's node answering such a reply: `DRECEIPT 1` (it was the first) or
///   `DRECEIPT 0`;
/// - `Z`: a node delivered a request of the receiving node to nobody: `ZTOKEN`;
/// - `Q`: a listing asked on another node: `QID NODE KIND USERLEN\nUSER` then the channel
///   (`l`: `locks {ch}`), pattern (`o`: what a channel-wide `lock` covers) or, for `p` (a
///   `presence` page), `AFTER LIMIT COUNTONLY CHANNEL`; its answer lists the members' JSON
///   objects first and the node's member count as the one entry of the second list; `a`,
///   an admin op (`c AFTER LIMIT`: a page of `clients`; `k ID KICKER USER`: a `kick`);
/// - `A`: the answer: `AID NODE TRUNCATED LOCKED UNLOCKED\n` then as many `LEN:GLOBALID`
///   entries (`o`: all in the first list; TRUNCATED 1 when the node listed only part).
enum ClusterNodeMessage: Equatable {
    /// A reply on its way to the requester's node.
    case reply(receipt: Int, node: Int, from: Int, token: [UInt8], data: [UInt8]?)
    /// Whether the reply with `receipt` reached a waiting request.
    case replyAnswered(receipt: Int, delivered: Bool)
    /// The request with this token reached nobody on the sending node.
    case unheard(token: [UInt8])
    /// Node `node` asks for this node's subscriptions on `channel` (`kind` `l`) or that a
    /// lock on the pattern `channel` covers (`o`), as `user` may see them.
    case locksQuery(id: Int, node: Int, kind: UInt8, user: [UInt8], channel: [UInt8])
    /// Node `node`'s answer to query `id`: global ids of subscriptions locked and not (or
    /// covered, and none), and whether the list was cut short.
    case locksAnswer(id: Int, node: Int, truncated: Bool, locked: [[UInt8]], unlocked: [[UInt8]])

    /// Whether a payload on a node's channel is one of these (not events).
    static func isNodeMessage(_ payload: [UInt8]) -> Bool {
        guard let first = payload.first else { return false }
        return first >= UInt8(ascii: "A") && first <= UInt8(ascii: "Z")
    }

    /// The bytes to publish.
    var encoded: [UInt8] {
        switch self {
        case .reply(let receipt, let node, let from, let token, let data):
            var out = Array("R\(receipt) \(node) \(from) ".utf8)
            out.append(contentsOf: token)
            out.append(contentsOf: Array(" \(data.map { $0.count } ?? -1)\n".utf8))
            if let data { out.append(contentsOf: data) }
            return out
        case .replyAnswered(let receipt, let delivered):
            return Array("D\(receipt) \(delivered ? 1 : 0)".utf8)
        case .unheard(let token):
            return [UInt8(ascii: "Z")] + token
        case .locksQuery(let id, let node, let kind, let user, let channel):
            return Array("Q\(id) \(node) ".utf8) + [kind] + Array(" \(user.count)\n".utf8) + user + channel
        case .locksAnswer(let id, let node, let truncated, let locked, let unlocked):
            var out = Array("A\(id) \(node) \(truncated ? 1 : 0) \(locked.count) \(unlocked.count)\n".utf8)
            for id in locked + unlocked {
                out += Array("\(id.count):".utf8)
                out += id
            }
            return out
        }
    }

    /// Reads one message. - Returns: nil when it is malformed or of an unknown kind.
    static func decode(_ payload: [UInt8]) -> ClusterNodeMessage? {
        guard let kind = payload.first else { return nil }
        let end = payload.firstIndex(of: 10) ?? payload.count
        let fields = payload[1..<end].split(separator: 32)
        switch kind {
        case UInt8(ascii: "R"):
            guard fields.count == 5, end < payload.count, let receipt = int(fields[0]), let node = int(fields[1]),
                  let from = int(fields[2]), let length = int(fields[4]), length >= -1,
                  length <= payload.count - end - 1 else { return nil }
            let data = length < 0 ? nil : Array(payload[(end + 1)..<(end + 1 + length)])
            return .reply(receipt: receipt, node: node, from: from, token: Array(fields[3]), data: data)
        case UInt8(ascii: "D"):
            guard fields.count == 2, let receipt = int(fields[0]) else { return nil }
            return .replyAnswered(receipt: receipt, delivered: fields[1].first == UInt8(ascii: "1"))
        case UInt8(ascii: "Z"):
            guard payload.count == 33 else { return nil }
            return .unheard(token: Array(payload[1...]))
        case UInt8(ascii: "Q"):
            guard fields.count == 4, end < payload.count, let id = int(fields[0]), let node = int(fields[1]),
                  fields[2].count == 1, let kind = fields[2].first,
                  kind == UInt8(ascii: "l") || kind == UInt8(ascii: "o") || kind == UInt8(ascii: "p") || kind == UInt8(ascii: "a"),
                  let length = int(fields[3]), length >= 0, length <= payload.count - end - 1 else { return nil }
            let user = Array(payload[(end + 1)..<(end + 1 + length)])
            let channel = Array(payload[(end + 1 + length)...])
            guard !channel.isEmpty else { return nil }
            return .locksQuery(id: id, node: node, kind: kind, user: user, channel: channel)
        case UInt8(ascii: "A"):
            guard fields.count == 5, let id = int(fields[0]), let node = int(fields[1]), let cut = int(fields[2]),
                  cut == 0 || cut == 1, let locked = int(fields[3]), let unlocked = int(fields[4]), locked >= 0, unlocked >= 0,
                  let ids = entries(payload, from: min(end + 1, payload.count)), ids.count == locked + unlocked else { return nil }
            return .locksAnswer(id: id, node: node, truncated: cut == 1, locked: Array(ids.prefix(locked)),
                                unlocked: Array(ids.dropFirst(locked)))
        default:
            return nil
        }
    }

    /// `LEN:BYTES` entries back to back up to the end. - Returns: nil when one does not fit.
    private static func entries(_ payload: [UInt8], from start: Int) -> [[UInt8]]? {
        var found: [[UInt8]] = []
        var at = start
        while at < payload.count {
            guard let colon = payload[at...].firstIndex(of: UInt8(ascii: ":")), colon - at <= 6,
                  let length = int(payload[at..<colon]), length >= 0, length <= payload.count - colon - 1 else { return nil }
            found.append(Array(payload[(colon + 1)..<(colon + 1 + length)]))
            at = colon + 1 + length
        }
        return found
    }

    private static func int(_ bytes: ArraySlice<UInt8>) -> Int? {
        guard bytes.count <= 20 else { return nil }
        return Int(String(decoding: bytes, as: UTF8.self))
    }
}
