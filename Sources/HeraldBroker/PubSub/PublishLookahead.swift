#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A look-ahead over the lines of one read that hints the caches about the channels its
/// `pub`s will look up, a few lines before they are handled (2026-12-07, issue 35).
///
/// Why: with 100,000 channels the name table's slots and the channel objects do not fit the
/// caches, and a publisher going round them waited for memory twice per publish: the probed
/// slot, then the channel it names (docs/architecture.md, "100,000 channels"). A one-stage
/// hint one line ahead only moved the wait from the slot to the channel. Here, before line
/// `k` is handled, line `k + slotDistance` is scanned for a canonical `pub` prefix, its
/// name hashed and its home slot hinted; line `k + objectDistance`, whose slot has had two
/// lines' time to arrive, is probed by hash and its channel object hinted. The lookup that
/// follows then finds both in cache.
///
/// What it costs: a `memchr` for the line's end, an 18-byte compare, a `memchr` for the
/// name's end and its hash (about 100 instructions), so it runs only while the table holds
/// `minimumChannels` names (below that they fit the last-level cache and the hint is pure
/// cost: measured at 10,000). A line it misreads costs a wasted hint; nothing it does
/// changes what a line means (the lookup itself is the usual one).
public struct PublishLookahead {
    /// Names the table must hold before looking ahead pays.
    public static let minimumChannels = 65_536
    /// How many lines ahead the home slot is hinted.
    static let slotDistance = 4
    /// How many lines ahead the channel object is hinted.
    static let objectDistance = 2
    /// The canonical prefix of a `pub` line the look-ahead reads names from, `{"op":"pub","ch":"`,
    /// as two words and a half word (compared with three loads).
    private static let prefixCount = 18
    private static let prefix: (UInt64, UInt64, UInt16) = {
        let bytes = Array(#"{"op":"pub","ch":""#.utf8)
        return bytes.withUnsafeBytes {
            ($0.loadUnaligned(as: UInt64.self), $0.loadUnaligned(fromByteOffset: 8, as: UInt64.self),
             $0.loadUnaligned(fromByteOffset: 16, as: UInt16.self))
        }
    }()

    private let bytes: UnsafeRawBufferPointer
    /// Where the next line to scan starts.
    private var cursor = 0
    /// Hashes of the scanned lines' names (0: not a canonical `pub`), a ring by line number.
    private var hashes: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0, 0)
    /// Lines scanned, and lines handled.
    private var scanned = 0
    private var handled = 0

    init(_ bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
    }

    /// Before the first line: scans the first `slotDistance` lines.
    mutating func prime(_ table: NameTable<Channel>) {
        for _ in 0..<Self.slotDistance { scanNext(table) }
        for line in 0..<Swift.min(Self.objectDistance, scanned) where hash(of: line) != 0 {
            table.prefetchValue(hash: hash(of: line))
        }
    }

    /// Before each line is handled: hints one line's channel and scans one more.
    mutating func advance(_ table: NameTable<Channel>) {
        let ahead = handled + Self.objectDistance
        if ahead < scanned {
            let value = hash(of: ahead)
            if value != 0 { table.prefetchValue(hash: value) }
        }
        scanNext(table)
        handled += 1
    }

    private func hash(of line: Int) -> UInt64 {
        withUnsafeBytes(of: hashes) { $0.load(fromByteOffset: (line & 7) * 8, as: UInt64.self) }
    }

    private mutating func setHash(_ value: UInt64, of line: Int) {
        withUnsafeMutableBytes(of: &hashes) { $0.storeBytes(of: value, toByteOffset: (line & 7) * 8, as: UInt64.self) }
    }

    /// Finds the next line, hashes its name if it is a canonical `pub`, hints its slot.
    private mutating func scanNext(_ table: NameTable<Channel>) {
        guard let base = bytes.baseAddress, cursor < bytes.count else { return }
        let start = cursor
        let rest = bytes.count - start
        let end: Int
        if let newline = memchr(base + start, 10, rest) {
            end = base.distance(to: UnsafeRawPointer(newline))
        } else {
            end = bytes.count
        }
        cursor = end + 1
        var value: UInt64 = 0
        let prefixCount = Self.prefixCount
        let line = base + start
        if end - start > prefixCount,
           line.loadUnaligned(as: UInt64.self) == Self.prefix.0,
           line.loadUnaligned(fromByteOffset: 8, as: UInt64.self) == Self.prefix.1,
           line.loadUnaligned(fromByteOffset: 16, as: UInt16.self) == Self.prefix.2,
           let quote = memchr(base + start + prefixCount, 34, end - start - prefixCount) {
            let nameStart = base + start + prefixCount
            let name = UnsafeRawBufferPointer(start: nameStart, count: nameStart.distance(to: UnsafeRawPointer(quote)))
            value = NameHash.processWide.hash(name)
            table.prefetchSlot(hash: value)
        }
        setHash(value, of: scanned)
        scanned += 1
    }
}

extension Broker {
    /// A look-ahead over `bytes` when the channel table is large enough for it to pay,
    /// primed; nil otherwise (one compare per read).
    public func lookahead(over bytes: UnsafeRawBufferPointer) -> PublishLookahead? {
        guard channels.count >= PublishLookahead.minimumChannels else { return nil }
        var lookahead = PublishLookahead(bytes)
        lookahead.prime(channels)
        return lookahead
    }

    /// Before handling each line of a read with a look-ahead.
    @inline(__always)
    public func advance(_ lookahead: inout PublishLookahead) {
        lookahead.advance(channels)
    }
}
