/// The request operations of protocol version 1 (PROTOCOL.md, the op table).
public enum Op: String, Sendable, CaseIterable {
    case hello, ping, pong, sub, unsub, pub, req, reply, lock, unlock, locks
    case declare, remove, signal, handled, callback, link, unlink
    case set, get, del, touch, append, assign, splice
    case stats, channels, subs, cancel, presence, clients, kick, handlers

    /// Looks an op up by its raw UTF-8 name without building a `String`.
    ///
    /// Every op name fits in 8 bytes, so the name is packed into one integer and compared
    /// against a table of packed names: a handful of integer compares, `pub` first.
    /// - Parameter bytes: the op name as it appears between the quotes.
    /// - Returns: the op, or nil when the name is not one.
    public init?(bytes: UnsafeRawBufferPointer) {
        guard let key = Op.pack(bytes) else { return nil }
        for entry in Op.table where entry.key == key {
            self = entry.op
            return
        }
        return nil
    }

    /// Whether the op is answered only on failure or when it carries a `rid`.
    public var isFireAndForget: Bool {
        switch self {
        case .pub, .reply, .handled, .callback, .pong, .cancel: return true
        default: return false
        }
    }

    /// Packed names, most frequent first.
    private static let table: [(key: UInt64, op: Op)] = ([Op.pub] + Op.allCases.filter { $0 != .pub }).compactMap { op in
        Array(op.rawValue.utf8).withUnsafeBytes { bytes in Op.pack(bytes).map { ($0, op) } }
    }

    /// The name's bytes as a little-endian integer, or nil when longer than 8 bytes.
    private static func pack(_ bytes: UnsafeRawBufferPointer) -> UInt64? {
        guard !bytes.isEmpty, bytes.count <= 8 else { return nil }
        var key: UInt64 = 0
        for i in 0..<bytes.count { key |= UInt64(bytes[i]) << (8 * UInt64(i)) }
        return key
    }
}
