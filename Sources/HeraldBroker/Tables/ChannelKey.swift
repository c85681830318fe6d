/// A channel name or pattern as a dictionary key that hashes its bytes in one call.
///
/// `[UInt8]`'s own `Hashable` feeds the hasher byte by byte, which profiles showed as the
/// largest cost of ops that touch big tables (and of their rehash while they grow). Used
/// where a table can grow to millions of names; the rest of the broker still keys by
/// `[UInt8]`.
struct ChannelKey: Hashable {
    /// The name's bytes.
    let bytes: [UInt8]

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    func hash(into hasher: inout Hasher) {
        bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
    }

    static func == (a: ChannelKey, b: ChannelKey) -> Bool {
        a.bytes == b.bytes
    }
}
