import CLibUV
import HeraldBroker

/// Writing frames queued by reference (`FrameArena`): the bytes taken from the session, then
/// its spans, in one `writev`.
extension Connection {
    /// Most buffers one `writev` takes (Linux `IOV_MAX`); spans past it go in the copied rest.
    static let maxWriteBuffers = 1024

    /// Writes `inFlightBytes` and `inFlightSpans` at once. What the socket does not take is
    /// copied into `inFlightBytes` and handed to `uv_write`, so the spans are released before
    /// this returns, whatever happens: the arena starts again when no span list is held.
    /// `spanWrittenBytes` is what the completed write counts beyond `inFlightBytes`.
    /// - Returns: whether everything was written (as `writeTakenAtOnce`).
    func writeSpans() -> Bool {
        guard let arena = inFlightArena else {
            inFlightSpans.removeAll(keepingCapacity: true)
            return false
        }
        let total = inFlightBytes.count + inFlightSpans.reduce(0) { $0 + Int($1.count) }
        let written = tryWriteSpans(arena)
        guard written >= 0 else {
            dropSpans()
            close(reason: Connection.endReason(written))
            return false
        }
        if written < total { keepUnwritten(after: written, of: arena) }
        spanWrittenBytes = total - inFlightBytes.count
        dropSpans()
        if written == total { return true }
        writeRemainder(from: 0)
        return false
    }

    /// Under the broker lock: takes the session's queued bytes and spans (`takeQueued`).
    /// - Returns: the bytes taken, spans included.
    func takeSessionOutput() -> Int {
        let spanBytes = session.takeOutbound(into: &inFlightBytes, spans: &inFlightSpans)
        if spanBytes > 0 { inFlightArena = session.frameArena }
        return inFlightBytes.count + spanBytes
    }

    /// Copies the taken spans behind `inFlightBytes` and lets them go, for bytes that must
    /// follow them (a hand-off box's spans, then the session's own bytes).
    func flattenSpans() {
        guard !inFlightSpans.isEmpty, let arena = inFlightArena else { return }
        for span in inFlightSpans { inFlightBytes.append(contentsOf: arena.bytes(span)) }
        dropSpans()
    }

    /// One `uv_try_write` of the bytes and the spans (at most `maxWriteBuffers` buffers).
    /// - Returns: bytes written (0 when the socket is full), or a negative libuv status.
    private func tryWriteSpans(_ arena: FrameArena) -> Int {
        let hasBytes = !inFlightBytes.isEmpty
        let count = min(inFlightSpans.count + (hasBytes ? 1 : 0), Connection.maxWriteBuffers)
        let status = inFlightBytes.withUnsafeMutableBytes { bytes -> Int32 in
            withUnsafeTemporaryAllocation(of: uv_buf_t.self, capacity: count) { buffers -> Int32 in
                var k = 0
                if hasBytes {
                    buffers[0] = uv_buf_init(bytes.baseAddress?.assumingMemoryBound(to: CChar.self), UInt32(bytes.count))
                    k = 1
                }
                for span in inFlightSpans where k < count {
                    let part = arena.bytes(span)
                    buffers[k] = uv_buf_init(UnsafeMutableRawPointer(mutating: part.baseAddress)?
                        .assumingMemoryBound(to: CChar.self), UInt32(part.count))
                    k += 1
                }
                return uv_try_write(stream, buffers.baseAddress, UInt32(count))
            }
        }
        if status == UV_EAGAIN.rawValue { return 0 }
        return Int(status)
    }

    /// Leaves in `inFlightBytes` exactly what follows the first `written` bytes of the
    /// bytes and spans: the tail of the bytes, then the spans' unwritten bytes, copied.
    private func keepUnwritten(after written: Int, of arena: FrameArena) {
        var skip = written
        if skip >= inFlightBytes.count {
            skip -= inFlightBytes.count
            inFlightBytes.removeAll(keepingCapacity: true)
        } else {
            inFlightBytes.removeFirst(skip)
            skip = 0
        }
        for span in inFlightSpans {
            let part = arena.bytes(span)
            if skip >= part.count {
                skip -= part.count
                continue
            }
            inFlightBytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: part[skip...]))
            skip = 0
        }
    }

    /// Lets the arena go: the spans were written, copied, or will never be.
    func dropSpans() {
        guard !inFlightSpans.isEmpty else { return }
        inFlightSpans.removeAll(keepingCapacity: true)
        inFlightArena?.release()
    }
}
