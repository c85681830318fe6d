import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Reads a socket's lines as fast as a flood sends them: one large buffer read into in place,
/// lines found with `memchr` and handed out as byte slices (no `String`, no JSON parse, no
/// copy per line), the consumed front moved away only once it is half the buffer.
/// `TestClient.line` moves the whole buffer for every line, and a debug build's generic
/// scanning of 200 MB of events is slower than the daemon that sends them.
final class FloodLineReader {
    private let fd: Int32
    private var buffer: UnsafeMutableRawBufferPointer
    /// Where unread lines start, and where the bytes read end.
    private var start = 0
    private var end = 0

    /// Reads from `fd` (a connected socket; it stays the caller's).
    init(fd: Int32) {
        self.fd = fd
        buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 22, alignment: 16)
    }

    deinit {
        buffer.deallocate()
    }

    /// Calls `body` with each complete line (without its newline) until `body` returns
    /// false, the peer closes, or nothing arrives for `idleSeconds`.
    /// - Returns: why it stopped.
    func forEachLine(idleSeconds: Double, _ body: (UnsafeRawBufferPointer) -> Bool) -> StopReason {
        guard let base = buffer.baseAddress else { return .closed }
        while true {
            while start < end, let found = memchr(base + start, 10, end - start) {
                let newline = base.distance(to: found)
                let line = UnsafeRawBufferPointer(start: base + start, count: newline - start)
                start = newline + 1
                if !body(line) { return .done }
            }
            if start == end {
                start = 0
                end = 0
            } else if start * 2 >= buffer.count || end == buffer.count {
                if start == 0 { grow() } else { moveToFront() }
            }
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, Int32(idleSeconds * 1000)) > 0 else { return .idle }
            let count = read(fd, base + end, buffer.count - end)
            guard count > 0 else { return .closed }
            end += count
        }
    }

    private func moveToFront() {
        guard let base = buffer.baseAddress else { return }
        memmove(base, base + start, end - start)
        end -= start
        start = 0
    }

    /// A line longer than the buffer: twice the room.
    private func grow() {
        let larger = UnsafeMutableRawBufferPointer.allocate(byteCount: buffer.count * 2, alignment: 16)
        if let from = buffer.baseAddress, let to = larger.baseAddress { memcpy(to, from + start, end - start) }
        end -= start
        start = 0
        buffer.deallocate()
        buffer = larger
    }

    /// Why `forEachLine` returned.
    enum StopReason: Equatable {
        /// The body asked to stop.
        case done
        /// Nothing arrived for the idle time.
        case idle
        /// The peer closed the connection (or a read failed).
        case closed
    }

    /// The unsigned decimal right after `key` (such as `"seq":`) in `line`, or nil.
    static func integer(after key: [UInt8], in line: UnsafeRawBufferPointer) -> Int? {
        guard let at = position(after: key, in: line) else { return nil }
        var value = 0
        var index = at
        while index < line.count, line[index] >= 48, line[index] <= 57 {
            value = value * 10 + Int(line[index] - 48)
            index += 1
        }
        return index > at ? value : nil
    }

    /// The offset just past the first occurrence of `key` in `line`, or nil (a frame's
    /// fields come before its data, so the scan ends early).
    static func position(after key: [UInt8], in line: UnsafeRawBufferPointer) -> Int? {
        guard let first = key.first, line.count >= key.count else { return nil }
        var index = 0
        while index + key.count <= line.count {
            if line[index] == first {
                var matches = true
                for offset in 1..<key.count where line[index + offset] != key[offset] {
                    matches = false
                    break
                }
                if matches { return index + key.count }
            }
            index += 1
        }
        return nil
    }

    /// Whether `line` starts with `prefix`.
    static func starts(_ line: UnsafeRawBufferPointer, with prefix: [UInt8]) -> Bool {
        line.count >= prefix.count && prefix.indices.allSatisfy { line[$0] == prefix[$0] }
    }
}
