/// The broker's `FrameArena`s: frames go into the current one; when it is full, into one no
/// span list points into any more, or a new one, up to `maximumCount`; past that, deliveries
/// copy as before until one empties.
///
/// Why more than one: with several loops, another loop writes its connections' spans a pass
/// later (hand-off boxes), so one arena was rarely free of lists and the daemon fell back to
/// copies (`workers: 2` at 1→1000 went below one loop). A span list points into one arena
/// only (`Session.appendSpan` copies a list in before it starts one in another arena), so
/// each arena's count of lists is exact.
final class FrameArenaPool {
    /// At most this many arenas (8 MiB): what lagging lists can pin, whatever peers do.
    static let maximumCount = 4
    /// The arena frames go into now.
    private(set) var current: FrameArena
    private var arenas: [FrameArena]

    init() {
        current = FrameArena()
        arenas = [current]
    }

    /// Span lists pointing into any of them.
    var holders: Int { arenas.reduce(0) { $0 + $1.holders } }

    /// How many arenas exist (each `FrameArena.capacity` bytes).
    var count: Int { arenas.count }

    /// Copies a frame (its two parts back to back) into the current arena, or another.
    /// - Returns: the arena and where the frame starts; nil when none has room.
    @inline(__always)
    func append(_ first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer) -> (arena: FrameArena, start: Int)? {
        if let start = current.append(first, second) { return (current, start) }
        return appendElsewhere(first, second)
    }

    /// `append` when the current arena is full: moves to a free one or a new one.
    @inline(never)
    private func appendElsewhere(_ first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer)
        -> (arena: FrameArena, start: Int)? {
        if let free = arenas.first(where: { $0 !== current && $0.holders == 0 }) {
            current = free
        } else if arenas.count < FrameArenaPool.maximumCount {
            current = FrameArena()
            arenas.append(current)
        } else {
            return nil
        }
        guard let start = current.append(first, second) else { return nil }
        return (current, start)
    }
}
