#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A byte buffer managed by hand: a base pointer, a count and a capacity, with none of
/// `Array`'s bookkeeping per append.
///
/// A session stages its event frames in one (`Session.appendEvent`) and its connection
/// writes one while the session stages into the other: the two are swapped, never copied
/// (`Session.takeStaged(swappingWith:)`, docs/architecture.md, "one copy per event frame").
///
/// A value without `deinit`: copies share the memory, and exactly one owner frees it with
/// `release()` (the session in its `deinit`, the connection in its own).
public struct OutputBlock {
    /// Where the bytes start; nil until the first append.
    public private(set) var base: UnsafeMutableRawPointer?
    /// Bytes written.
    public private(set) var count = 0
    /// Bytes allocated.
    public private(set) var capacity = 0

    /// The smallest allocation.
    static let minimumCapacity = 1024

    /// An empty block that owns no memory.
    public init() {}

    /// Whether nothing is written.
    public var isEmpty: Bool { count == 0 }

    /// The written bytes; valid until the next append, `release` or swap.
    public var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: base, count: count) }

    /// Appends `first` and `second` if they fit the capacity.
    /// - Returns: false, having written nothing, when they do not fit.
    @inline(__always)
    mutating func appendIfRoom(_ first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer) -> Bool {
        let end = count + first.count + second.count
        guard end <= capacity, let block = base else { return false }
        if let source = first.baseAddress { (block + count).copyMemory(from: source, byteCount: first.count) }
        if let rest = second.baseAddress { (block + count + first.count).copyMemory(from: rest, byteCount: second.count) }
        count = end
        return true
    }

    /// Makes room for `extra` more bytes: doubles (from `minimumCapacity`), or grows to fit,
    /// but doubles no further than `limit` (a larger need is met exactly).
    mutating func grow(toFit extra: Int, limit: Int) {
        let needed = count + extra
        guard needed > capacity else { return }
        let doubled = Swift.max(Self.minimumCapacity, capacity * 2)
        let grown = Swift.max(needed, Swift.min(doubled, Swift.max(limit, Self.minimumCapacity)))
        // `realloc` keeps the written bytes (and may extend in place).
        guard let fresh = realloc(base, grown) else { return }
        base = fresh
        capacity = grown
    }

    /// Forgets the written bytes, keeping the memory.
    public mutating func removeAll() { count = 0 }

    /// Frees the memory; the block is empty and owns nothing afterwards.
    public mutating func release() {
        free(base)
        base = nil
        count = 0
        capacity = 0
    }
}
