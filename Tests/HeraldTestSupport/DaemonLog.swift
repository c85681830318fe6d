import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A test daemon's stderr, read line by line on a thread of its own, so tests can wait for
/// `listening transport=… port=N` lines and inspect everything else it logged.
///
/// Both test launchers (`TestDaemon` here, `DaemonProcess` in the server tests) start the
/// daemon with `--port 0` and learn the ports it bound from these lines.
public final class DaemonLog: Sendable {
    private let lines = LockedValue<[String]>([])

    /// Starts reading `pipe` until its writer closes (the daemon exits).
    public init(reading pipe: Pipe) {
        let reader = pipe.fileHandleForReading
        let lines = self.lines
        Thread {
            var pending = Data()
            while true {
                let chunk = reader.availableData
                if chunk.isEmpty { break }
                pending.append(chunk)
                while let newline = pending.firstIndex(of: 10) {
                    let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
                    pending.removeSubrange(pending.startIndex...newline)
                    lines.withLock { $0.append(line) }
                }
            }
        }.start()
    }

    /// Everything logged so far.
    public var all: [String] { lines.value }

    /// The port of the `listening transport=<transport>` line, if it was logged yet.
    public func port(of transport: String) -> Int? {
        guard let line = lines.value.first(where: { $0.contains("listening") && $0.contains("transport=" + transport) }),
              let range = line.range(of: #"port=(\d+)"#, options: .regularExpression) else { return nil }
        return Int(line[range].dropFirst(5))
    }

    /// Whether a `listening transport=<transport>` line was logged.
    public func isListening(_ transport: String) -> Bool {
        lines.value.contains { $0.contains("listening") && $0.contains("transport=" + transport) }
    }

    /// Polls until `ready` holds, the process exits, or `seconds` pass.
    /// - Returns: whether `ready` held.
    public func wait(seconds: Double, while process: Process, until ready: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while !ready() && Date() < deadline && process.isRunning { usleep(5_000) }
        return ready()
    }
}
