/// One change of a channel's retained state: what the broker applies, persists and replays.
///
/// Why one type for all three: the broker applies a change to its `StateStore` through
/// `apply(_:)`, the server appends the same record to the log, and the loader reads records
/// back and applies them through the same function, so the in-memory state and the files
/// cannot drift apart. Every record carries the `rev` it gives the channel, which makes
/// applying idempotent (a record at or below the channel's `rev` is skipped).
public enum StateRecord: Sendable, Equatable {
    /// Replaces the channel's state with a value; a JSON array becomes a list.
    case set(channel: [UInt8], rev: Int, value: [UInt8])
    /// Clears the channel's state; its `rev` stays.
    case delete(channel: [UInt8], rev: Int)
    /// Adds one element at the end of the channel's list (creating the list).
    case append(channel: [UInt8], rev: Int, element: [UInt8])
    /// Replaces one element of the channel's list.
    case assign(channel: [UInt8], rev: Int, index: Int, element: [UInt8])
    /// Removes `remove` elements at `index` and inserts `insert` there.
    case splice(channel: [UInt8], rev: Int, index: Int, remove: Int, insert: [[UInt8]])
    /// Collects the channel's tombstone (the content-less state `del` left at `rev`) and
    /// raises the store's rev floor to `rev`, so the channel's next change still takes a
    /// `rev` above every one it had (`StateStore.revFloor`). A snapshot carries the floor
    /// as a `forget` with an empty channel name, which no channel has.
    case forget(channel: [UInt8], rev: Int)

    /// The channel the record changes.
    public var channel: [UInt8] {
        switch self {
        case .set(let channel, _, _), .delete(let channel, _), .append(let channel, _, _),
             .assign(let channel, _, _, _), .splice(let channel, _, _, _, _), .forget(let channel, _):
            return channel
        }
    }

    /// The `rev` the channel has after the record.
    public var rev: Int {
        switch self {
        case .set(_, let rev, _), .delete(_, let rev), .append(_, let rev, _),
             .assign(_, let rev, _, _), .splice(_, let rev, _, _, _), .forget(_, let rev):
            return rev
        }
    }
}

extension StateRecord {
    /// About the bytes the record takes in the log, framing included.
    ///
    /// What `max_writer_queue_bytes` counts: the writer holds a record until it is written,
    /// so these bytes are what a stuck disk makes the daemon keep.
    public var logBytes: Int {
        let fixed = 8 + 13 + channel.count
        switch self {
        case .set(_, _, let value): return fixed + 4 + value.count
        case .delete, .forget: return fixed
        case .append(_, _, let element): return fixed + 4 + element.count
        case .assign(_, _, _, let element): return fixed + 12 + element.count
        case .splice(_, _, _, _, let insert): return fixed + 20 + insert.reduce(0) { $0 + 4 + $1.count }
        }
    }
}

/// The binary payload of a record in the log and the snapshot.
///
/// Layout (integers little-endian): `kind u8 | rev u64 | channel length u32 | channel`, then
/// per kind: set `value length u32 | value`; append `element length u32 | element`; assign
/// `index u64 | element length u32 | element`; splice `index u64 | remove u64 | count u32 |
/// (length u32 | element)…`; delete and forget nothing. Framing (length, CRC32C) is the file layer's.
extension StateRecord {
    private enum Kind: UInt8 {
        case set = 1, delete = 2, append = 3, assign = 4, splice = 5, forget = 6
    }

    /// Appends the record's payload to `out`.
    /// - Parameter out: the buffer to append to.
    public func encode(into out: inout [UInt8]) {
        switch self {
        case .set(let channel, let rev, let value):
            Self.header(.set, channel, rev, &out)
            Self.putBytes(value, &out)
        case .delete(let channel, let rev):
            Self.header(.delete, channel, rev, &out)
        case .append(let channel, let rev, let element):
            Self.header(.append, channel, rev, &out)
            Self.putBytes(element, &out)
        case .assign(let channel, let rev, let index, let element):
            Self.header(.assign, channel, rev, &out)
            Self.put64(index, &out)
            Self.putBytes(element, &out)
        case .splice(let channel, let rev, let index, let remove, let insert):
            Self.header(.splice, channel, rev, &out)
            Self.put64(index, &out)
            Self.put64(remove, &out)
            Self.put32(insert.count, &out)
            for element in insert { Self.putBytes(element, &out) }
        case .forget(let channel, let rev):
            Self.header(.forget, channel, rev, &out)
        }
    }

    /// Decodes one payload; nil when it is not a well-formed record (unknown kind, lengths
    /// past the end, bytes left over, negative numbers).
    /// - Parameter payload: exactly one record's payload.
    /// - Returns: the record, or nil.
    public static func decode(_ payload: UnsafeRawBufferPointer) -> StateRecord? {
        var reader = PayloadReader(bytes: payload)
        guard let kindByte = reader.byte(), let kind = Kind(rawValue: kindByte),
              let rev = reader.int64(), rev >= 0, let channel = reader.field() else { return nil }
        let record: StateRecord
        switch kind {
        case .set:
            guard let value = reader.field() else { return nil }
            record = .set(channel: channel, rev: rev, value: value)
        case .delete:
            record = .delete(channel: channel, rev: rev)
        case .append:
            guard let element = reader.field() else { return nil }
            record = .append(channel: channel, rev: rev, element: element)
        case .assign:
            guard let index = reader.int64(), index >= 0, let element = reader.field() else { return nil }
            record = .assign(channel: channel, rev: rev, index: index, element: element)
        case .splice:
            guard let index = reader.int64(), index >= 0, let remove = reader.int64(), remove >= 0,
                  let count = reader.int32() else { return nil }
            var insert: [[UInt8]] = []
            for _ in 0..<count {
                guard let element = reader.field() else { return nil }
                insert.append(element)
            }
            record = .splice(channel: channel, rev: rev, index: index, remove: remove, insert: insert)
        case .forget:
            record = .forget(channel: channel, rev: rev)
        }
        return reader.isAtEnd ? record : nil
    }

    private static func header(_ kind: Kind, _ channel: [UInt8], _ rev: Int, _ out: inout [UInt8]) {
        out.append(kind.rawValue)
        put64(rev, &out)
        putBytes(channel, &out)
    }

    private static func putBytes(_ bytes: [UInt8], _ out: inout [UInt8]) {
        put32(bytes.count, &out)
        out.append(contentsOf: bytes)
    }

    private static func put32(_ value: Int, _ out: inout [UInt8]) {
        let v = UInt32(truncatingIfNeeded: value)
        for shift in stride(from: 0, to: 32, by: 8) { out.append(UInt8(truncatingIfNeeded: v >> UInt32(shift))) }
    }

    private static func put64(_ value: Int, _ out: inout [UInt8]) {
        let v = UInt64(bitPattern: Int64(value))
        for shift in stride(from: 0, to: 64, by: 8) { out.append(UInt8(truncatingIfNeeded: v >> UInt64(shift))) }
    }
}

/// A bounds-checked little-endian reader over one payload.
struct PayloadReader {
    let bytes: UnsafeRawBufferPointer
    var offset = 0

    var isAtEnd: Bool { offset == bytes.count }

    mutating func byte() -> UInt8? {
        guard offset < bytes.count else { return nil }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func int32() -> Int? {
        guard bytes.count - offset >= 4 else { return nil }
        var value: UInt32 = 0
        for k in 0..<4 { value |= UInt32(bytes[offset + k]) << UInt32(8 * k) }
        offset += 4
        return Int(value)
    }

    mutating func int64() -> Int? {
        guard bytes.count - offset >= 8 else { return nil }
        var value: UInt64 = 0
        for k in 0..<8 { value |= UInt64(bytes[offset + k]) << UInt64(8 * k) }
        offset += 8
        return Int(Int64(bitPattern: value))
    }

    mutating func field() -> [UInt8]? {
        guard let count = int32(), bytes.count - offset >= count else { return nil }
        defer { offset += count }
        return Array(UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + count)]))
    }
}
