import CHiredis

/// One Redis reply, copied out of hiredis's reply object (which hiredis frees after the
/// callback returns).
enum RedisReply: Equatable, Sendable {
    /// A bulk string.
    case string([UInt8])
    /// A status line such as `OK`.
    case status(String)
    /// An integer.
    case integer(Int)
    /// An array (a script's table, a pub/sub message).
    case array([RedisReply])
    /// A nil bulk or array.
    case null
    /// An error reply (`ERR …`, `NOSCRIPT …`).
    case error(String)
    /// The connection went away before the reply came.
    case disconnected

    /// Copies a hiredis reply (and, for arrays, its elements).
    init(_ reply: UnsafePointer<redisReply>) {
        let value = reply.pointee
        switch value.type {
        case REDIS_REPLY_STRING: self = .string(Self.bytes(value.str, value.len))
        case REDIS_REPLY_STATUS: self = .status(String(decoding: Self.bytes(value.str, value.len), as: UTF8.self))
        case REDIS_REPLY_ERROR: self = .error(String(decoding: Self.bytes(value.str, value.len), as: UTF8.self))
        case REDIS_REPLY_INTEGER: self = .integer(Int(value.integer))
        case REDIS_REPLY_ARRAY:
            var items: [RedisReply] = []
            items.reserveCapacity(Int(value.elements))
            for index in 0..<Int(value.elements) {
                if let element = value.element?[index] { items.append(RedisReply(element)) } else { items.append(.null) }
            }
            self = .array(items)
        default: self = .null
        }
    }

    private static func bytes(_ pointer: UnsafeMutablePointer<CChar>?, _ count: Int) -> [UInt8] {
        guard let pointer, count > 0 else { return [] }
        return Array(UnsafeRawBufferPointer(start: pointer, count: count))
    }

    /// The integer, when this is one.
    var integer: Int? {
        if case .integer(let value) = self { return value }
        return nil
    }

    /// The bytes of a bulk string, when this is one.
    var bytes: [UInt8]? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// The elements, when this is an array.
    var elements: [RedisReply]? {
        if case .array(let value) = self { return value }
        return nil
    }

    /// The error text, for error replies and a lost connection.
    var failure: String? {
        switch self {
        case .error(let text): return text
        case .disconnected: return "connection to Redis lost"
        default: return nil
        }
    }
}
