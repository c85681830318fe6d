/// The request operations of protocol version 1 (PROTOCOL.md, the op table).
public enum Op: String, Sendable, CaseIterable {
    case hello, ping, pong, sub, unsub, pub, req, reply, lock, unlock, locks
    case declare, remove, signal, handled, callback, link, unlink
    case set, get, del, touch, append, assign, splice
    case stats, channels, subs

    /// Looks an op up by its raw UTF-8 name without building a `String`.
    /// - Parameter bytes: the op name as it appears between the quotes.
    /// - Returns: the op, or nil when the name is not one.
    public init?(bytes: UnsafeRawBufferPointer) {
        guard let op = Op.table.first(where: { Op.equal($0.bytes, bytes) })?.op else { return nil }
        self = op
    }

    /// Whether the op is answered only on failure or when it carries a `rid`.
    public var isFireAndForget: Bool {
        switch self {
        case .pub, .reply, .handled, .callback, .pong: return true
        default: return false
        }
    }

    private static let table: [(bytes: [UInt8], op: Op)] = Op.allCases.map { (Array($0.rawValue.utf8), $0) }

    private static func equal(_ a: [UInt8], _ b: UnsafeRawBufferPointer) -> Bool {
        guard a.count == b.count else { return false }
        for i in 0..<a.count where a[i] != b[i] { return false }
        return true
    }
}
