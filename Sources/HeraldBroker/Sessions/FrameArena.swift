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
/// it is full, frames take the copying path until it empties. One loop only: the count is
/// not atomic (the server gives spans only to plain connections of a one-loop daemon).
public final class FrameArena {
    /// Bytes it holds: about four reads of frames, beyond which a pass copies as before.
    public static let capacity = 256 * 1024
    /// Frames shorter than this are copied into the subscriber's queue as before: `writev`
    /// pays per segment, and small frames gain less than it costs when spans do not merge.
    static let minimumFrame = 0

    private let base: UnsafeMutableRawPointer
    private var used = 0
    /// Span lists pointing into it, in sessions or in connections' writes.
    public internal(set) var holders = 0

    init() {
        base = UnsafeMutableRawPointer.allocate(byteCount: FrameArena.capacity, alignment: 64)
    }

    deinit { base.deallocate() }

    /// Copies a frame in (its two parts back to back).
    /// - Returns: where it starts, or nil when it does not fit.
    @inline(__always)
    func append(_ first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer) -> Int? {
        if holders == 0 { used = 0 }
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

    /// A span list is no longer held (written, copied out, or its session gone).
    public func release() { holders -= 1 }
}

/// A run of bytes in the `FrameArena`: one frame, or several consecutive ones.
public struct FrameSpan {
    /// Offset in the arena.
    public var start: Int32
    /// Length in bytes.
    public var count: Int32
}
