/// A message one node sends straight to another's channel `{p}n:INDEX`, not through the
/// publish script (docs/cluster.md, "Requests and replies"): nothing in it needs an order
/// agreed by Redis. Event messages start with a digit (a `seq`); these with a capital letter.
///
/// - `R`: a reply to a request of the receiving node:
///   `RRECEIPT NODE FROM TOKEN DATALEN\nDATA` (DATALEN -1 without `data`; RECEIPT 0 when
///   the replier sent no `rid` and wants no answer);
/// - `D`: the requester's node answering such a reply: `DRECEIPT 1` (it was the first) or
///   `DRECEIPT 0`;
/// - `Z`: a node delivered a request of the receiving node to nobody: `ZTOKEN`.
enum ClusterNodeMessage: Equatable {
    /// A reply on its way to the requester's node.
    case reply(receipt: Int, node: Int, from: Int, token: [UInt8], data: [UInt8]?)
    /// Whether the reply with `receipt` reached a waiting request.
    case replyAnswered(receipt: Int, delivered: Bool)
    /// The request with this token reached nobody on the sending node.
    case unheard(token: [UInt8])

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
        default:
            return nil
        }
    }

    private static func int(_ bytes: ArraySlice<UInt8>) -> Int? {
        guard bytes.count <= 20 else { return nil }
        return Int(String(decoding: bytes, as: UTF8.self))
    }
}
