#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What the framer found in the bytes fed to it.
///
/// The pointers are only valid during the callback that receives them: they point either
/// into the caller's read buffer or into the framer's carry-over buffer.
public enum FramedLine {
    /// One complete line, without its `"\n"` and without a trailing `"\r"`.
    ///
    /// Never empty: lines that are empty once the `"\r"` is dropped are skipped, because a
    /// person typing in `nc` may press Enter (PROTOCOL.md, "Transport and framing"). A line of
    /// spaces is passed on; the JSON scanner answers it.
    case line(UnsafeRawBufferPointer)
    /// A line grew past `maxLine` bytes.
    ///
    /// Reported once per such line, as soon as its length is known to exceed `maxLine`, so the
    /// daemon can answer `line_too_long` without waiting for the rest. The payload is the number
    /// of bytes of that line seen so far (at least `maxLine + 1`; the whole length when its
    /// `"\n"` arrived in the same feed). The rest of the line, up to its `"\n"`, is discarded
    /// without being buffered.
    case tooLong(Int)
}

/// Splits a byte stream into `"\n"`-terminated lines with a bounded carry-over buffer.
///
/// Why this shape: the daemon reads into one buffer per loop iteration, and most reads hold
/// only complete lines, so those are handed out as slices of the read buffer (zero copy). Only
/// an unfinished last line is copied, and that copy is capped at `maxLine` bytes so a peer
/// that never sends `"\n"` cannot make the daemon buffer more than one line's worth.
///
/// The limit counts the bytes of a line before its `"\n"`, a trailing `"\r"` included: it keeps
/// the check one comparison, and one byte of slack does not matter against a 1 MiB limit.
public struct LineFramer {
    /// The longest accepted line in bytes (without the `"\n"`, with any trailing `"\r"`).
    ///
    /// Settable so a config reload applies to open connections; a line already partly carried
    /// is judged against the new value when its next bytes arrive.
    public var maxLine: Int

    /// The unfinished last line; never longer than `maxLine` when bytes are appended.
    private var carry: [UInt8] = []
    /// True while skipping the rest of an overlong line up to its `"\n"`.
    private var discarding = false

    /// Carry buffers larger than this are freed once their line is done, so thousands of idle
    /// connections do not each keep a buffer sized for their largest line ever.
    private static let keptCarryCapacity = 16 * 1024

    /// Creates a framer.
    /// - Parameter maxLine: the longest accepted line in bytes (PROTOCOL.md `max_line`).
    public init(maxLine: Int) {
        self.maxLine = maxLine
    }

    /// Bytes currently held back for an unfinished line (0 while discarding an overlong one).
    public var carriedCount: Int { carry.count }

    /// Splits `bytes` into lines and reports each to `body`, in order.
    ///
    /// Complete lines inside `bytes` are handed out as slices of `bytes` itself; only an
    /// unfinished last line is copied into the carry-over buffer, and a line that was partly
    /// carried is handed out from that buffer.
    /// - Parameters:
    ///   - bytes: the next bytes read from the peer; any size, including empty.
    ///   - body: called once per complete line or overlong line; must not keep the pointer.
    public mutating func feed(_ bytes: UnsafeRawBufferPointer, _ body: (FramedLine) -> Void) {
        let fixed = maxLine
        feed(bytes, limit: { fixed }, body)
    }

    /// Splits `bytes` into lines like `feed(_:_:)`, asking `limit` for `maxLine` before each
    /// line, so a limit that changes because of a line (authentication raises it) applies to
    /// the very next line of the same read.
    /// - Parameters:
    ///   - bytes: the next bytes read from the peer; any size, including empty.
    ///   - limit: the longest line accepted now; called once per line, without side effects.
    ///   - body: called once per complete line or overlong line; must not keep the pointer.
    public mutating func feed(_ bytes: UnsafeRawBufferPointer, limit: () -> Int, _ body: (FramedLine) -> Void) {
        _ = feed(bytes, limit: limit, pausing: { false }, body)
    }

    /// Splits `bytes` into lines like `feed(_:limit:_:)`, but stops right after a line once
    /// `pausing` says so, leaving the rest of `bytes` unread: the daemon parks a `hello`
    /// whose token is verified off the loop and must not handle the lines behind it yet.
    ///
    /// Nothing of the unread rest is kept: the caller keeps it and feeds it again later, and
    /// the carry-over buffer is empty at that point (a pause only follows a complete line).
    /// - Parameters:
    ///   - bytes: the next bytes read from the peer; any size, including empty.
    ///   - limit: the longest line accepted now; called once per line, without side effects.
    ///   - pausing: asked after each complete line; true stops the feed there.
    ///   - body: called once per complete line or overlong line; must not keep the pointer.
    /// - Returns: how many bytes of `bytes` were consumed (all of them unless it paused).
    public mutating func feed(_ bytes: UnsafeRawBufferPointer, limit: () -> Int, pausing: () -> Bool,
                              _ body: (FramedLine) -> Void) -> Int {
        feed(bytes, limit: limit, pausingBefore: { _ in pausing() }, body)
    }

    /// Splits `bytes` like `feed(_:limit:pausing:_:)`, `pausing` seeing what follows the line
    /// just handled (the unread rest of `bytes`), so that it can let a line of some kind go on
    /// where it stops the others (the daemon pipelines cluster state ops behind each other).
    /// - Returns: how many bytes of `bytes` were consumed (all of them unless it paused).
    public mutating func feed(_ bytes: UnsafeRawBufferPointer, limit: () -> Int,
                              pausingBefore pausing: (UnsafeRawBufferPointer) -> Bool,
                              _ body: (FramedLine) -> Void) -> Int {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return 0 }
        let end = bytes.count
        var pos = 0
        while pos < end {
            maxLine = limit()
            guard let newline = Self.findNewline(base + pos, count: end - pos) else {
                holdBack(UnsafeRawBufferPointer(start: base + pos, count: end - pos), body)
                return end
            }
            let lineEnd = newline - UnsafeRawPointer(base)
            if discarding {
                discarding = false
            } else {
                finishLine(UnsafeRawBufferPointer(start: base + pos, count: lineEnd - pos), body)
            }
            pos = lineEnd + 1
            if pos < end && pausing(UnsafeRawBufferPointer(start: base + pos, count: end - pos)) { return pos }
        }
        return end
    }

    /// Handles the bytes of a line whose `"\n"` was found: `tail` is the part in this feed.
    @inline(__always)
    private mutating func finishLine(_ tail: UnsafeRawBufferPointer, _ body: (FramedLine) -> Void) {
        let length = carry.count + tail.count
        if length > maxLine {
            resetCarry()
            body(.tooLong(length))
            return
        }
        if carry.isEmpty {
            Self.emit(tail, body)
            return
        }
        appendToCarry(tail)
        carry.withUnsafeBytes { Self.emit($0, body) }
        resetCarry()
    }

    /// Keeps an unfinished last line, or starts discarding it once it is known to be too long.
    private mutating func holdBack(_ tail: UnsafeRawBufferPointer, _ body: (FramedLine) -> Void) {
        if discarding { return }
        let length = carry.count + tail.count
        if length > maxLine {
            resetCarry()
            discarding = true
            body(.tooLong(length))
            return
        }
        appendToCarry(tail)
    }

    /// Passes a line on without its trailing `"\r"`, unless nothing is left of it.
    @inline(__always)
    private static func emit(_ line: UnsafeRawBufferPointer, _ body: (FramedLine) -> Void) {
        var count = line.count
        if count > 0 && line[count - 1] == UInt8(ascii: "\r") { count -= 1 }
        guard count > 0, let start = line.baseAddress else { return }
        body(.line(UnsafeRawBufferPointer(start: start, count: count)))
    }

    /// Appends to the carry buffer, growing it geometrically but never past `maxLine`, so the
    /// memory bound holds even though `Array` would otherwise double past it.
    private mutating func appendToCarry(_ bytes: UnsafeRawBufferPointer) {
        let needed = carry.count + bytes.count
        if needed > carry.capacity {
            let grown = Swift.max(needed, carry.capacity * 2)
            carry.reserveCapacity(Swift.max(needed, Swift.min(grown, maxLine)))
        }
        carry.append(contentsOf: bytes)
    }

    /// Empties the carry buffer, freeing it when it grew large.
    private mutating func resetCarry() {
        carry.removeAll(keepingCapacity: carry.capacity <= Self.keptCarryCapacity)
    }

    /// Finds the first `"\n"` with libc's vectorised `memchr`.
    private static func findNewline(_ start: UnsafeRawPointer, count: Int) -> UnsafeRawPointer? {
        guard let hit = memchr(start, Int32(UInt8(ascii: "\n")), count) else { return nil }
        return UnsafeRawPointer(hit)
    }
}
