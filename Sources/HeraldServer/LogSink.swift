#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Where finished log lines go: standard error in the daemon, memory in tests.
///
/// A sink receives one complete line (newline included) per event and must not split it, so
/// lines from several threads never interleave mid-line.
public struct LogSink: Sendable {
    /// Receives one whole line, trailing newline included.
    let write: @Sendable (String) -> Void

    /// Creates a sink from a function that takes one whole line per call.
    /// - Parameter write: Called once per event with the line, trailing newline included; may run on any thread.
    public init(_ write: @escaping @Sendable (String) -> Void) {
        self.write = write
    }

    /// Writes each line to file descriptor 2 with a single `write(2)` call.
    ///
    /// One call per line is what keeps concurrent lines whole: the kernel does not interleave
    /// one `write` with another on the same pipe up to `PIPE_BUF` bytes, nor on a regular file
    /// opened for append. A short write (a full pipe) is finished by further calls.
    public static let stderr = LogSink { line in
        writeWhole(line, to: 2)
    }

    /// Writes all bytes of `line` to `fd`, retrying after signals and short writes.
    ///
    /// An error is dropped: the log is the place errors are reported, so there is nowhere left.
    static func writeWhole(_ line: String, to fd: Int32) {
        var line = line
        line.withUTF8 { bytes in
            var offset = 0
            while offset < bytes.count, let base = bytes.baseAddress {
                let written = systemWrite(fd, base + offset, bytes.count - offset)
                if written > 0 {
                    offset += written
                } else if written < 0 && errno == EINTR {
                    continue
                } else {
                    return
                }
            }
        }
    }
}

/// `write(2)` under a name that `LogSink.write` (the property) cannot shadow.
private func systemWrite(_ fd: Int32, _ bytes: UnsafePointer<UInt8>, _ count: Int) -> Int {
    write(fd, bytes, count)
}
