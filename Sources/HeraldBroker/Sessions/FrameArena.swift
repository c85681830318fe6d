import Synchronization

/// Event frames written once for several subscribers of the same channel, and the spans of
/// it each subscriber's connection writes with `writev` (docs/architecture.md, "Shared frames").
///
/// Why: at 1→1000 every subscriber's copy of a frame went into memory not in cache, and the
/// kernel then read each copy back out (`memmove` and `_copy_from_iter` a third of the
/// daemon's cycles). A frame written here once is read by the kernel from a few hot lines for
/// every subscriber, as the generator's sink does.
///
/// Lifetime: spans are taken by a connection and written at the end of the same loop pass;
/// whatever cannot be written then is copied into its queue (`Session.materializeSpans`).
/// The arena counts the span lists that point into it (`holders`) and starts again from its
/// beginning only when there are none, so no byte a list points to is ever overwritten. When
/// it is full, frames go to another arena (`FrameArenaPool`). Frames are appended and the
/// count raised under the broker lock; a list may be released by any loop, without it (a
/// connection of another loop writes its hand-off outside the lock), so the count is atomic:
/// a release after the write is ordered before the append that sees 0 and starts again.
public final class FrameArena: @unchecked Sendable {
    /// Bytes it holds: what one loop pass reads from a publisher (libuv reads up to 32 ×
    /// 64 KiB per callback), so a pass of 16 KiB frames stays in one arena. At 256 KiB a
    /// pass filled it after 15 such frames and every subscriber's list was copied out
    /// (`Session.materializeSpans`): 7.6% of the daemon's cycles at 1→10 16 KiB (`perf`).
    /// Pages are touched only as far as frames reach; at most `FrameArenaPool.maximumCount`
    /// arenas exist.
    public static let capacity = 2 * 1024 * 1024
    private let base: UnsafeMutableRawPointer
    private var used = 0
    private let holderCount = Atomic<Int>(0)

    /// Span lists pointing into it: in sessions, hand-off boxes, or connections' writes.
    public var holders: Int { holderCount.load(ordering: .acquiring) }

    init() {
        base = UnsafeMutableRawPointer.allocate(byteCount: FrameArena.capacity, alignment: 64)
    }

    deinit { base.deallocate() }

    /// Copies a frame in (its two parts back to back).
    /// - Returns: where it starts, or nil when it does not fit.
    @inline(__always)
    func append(_ first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer) -> Int? {
        if used > 0 && holders == 0 { used = 0 }
        let start = used
        let end = start + first.count + second.count
        guard end <= FrameArena.capacity else { return nil }
        if let source = first.baseAddress { (base + start).copyMemory(from: source, byteCount: first.count) }
        if let source = second.baseAddress { (base + start + first.count).copyMemory(from: source, byteCount: second.count) }
        used = end
        return start
    }

    /// The bytes of a span; valid while the list holding it is counted in `holders`.
    @inline(__always)
    public func bytes(_ span: FrameSpan) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: base + Int(span.start), count: Int(span.count))
    }

    /// A span list now points into it (under the broker lock).
    func hold() { holderCount.add(1, ordering: .relaxed) }

    /// A span list is no longer held (written, copied out, or its session gone); any loop.
    public func release() { holderCount.subtract(1, ordering: .releasing) }
}

/// A run of bytes in the `FrameArena`: one frame, or several consecutive ones.
public struct FrameSpan {
    /// Offset in the arena.
    public var start: Int32
    /// Length in bytes.
    public var count: Int32
}
