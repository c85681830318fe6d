#if !canImport(Network)
import Glibc

/// A self-pipe that wakes the I/O thread's `poll` when there is something to send or to stop.
final class WakePipe: TransportWake {
    let readEnd: Int32
    let writeEnd: Int32

    /// Opens the pipe (both ends non-blocking and close-on-exec).
    init() {
        var ends: [Int32] = [-1, -1]
        if pipe(&ends) == 0 {
            for end in ends {
                _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
                _ = fcntl(end, F_SETFD, FD_CLOEXEC)
            }
        } else {
            ends = [-1, -1]
        }
        readEnd = ends[0]
        writeEnd = ends[1]
    }

    deinit {
        if readEnd >= 0 { Glibc.close(readEnd) }
        if writeEnd >= 0 { Glibc.close(writeEnd) }
    }

    /// Makes the next (or current) poll return.
    func wake() {
        var byte: UInt8 = 1
        _ = Glibc.write(writeEnd, &byte, 1)
    }

    /// Waits up to `milliseconds` for a wake-up, then empties the pipe.
    func wait(milliseconds: Int) {
        var fds = [pollfd(fd: readEnd, events: Int16(POLLIN), revents: 0)]
        if poll(&fds, 1, Int32(clamping: milliseconds)) > 0 { drain() }
    }

    /// Empties the pipe after a wake.
    func drain() {
        var buffer = [UInt8](repeating: 0, count: 64)
        while buffer.withUnsafeMutableBytes({ Glibc.read(readEnd, $0.baseAddress, $0.count) }) > 0 {}
    }
}
#endif
