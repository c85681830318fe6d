import Synchronization

/// Keeps log lines in memory so tests can assert exactly what would have reached stderr.
public final class LogCapture: Sendable {
    private let stored = Mutex<[String]>([])

    /// Creates an empty capture.
    public init() {}

    /// A sink that appends each line here; pass it to `Logger(component:level:sink:clock:)`.
    public var sink: LogSink {
        LogSink { [self] line in
            stored.withLock { $0.append(line) }
        }
    }

    /// The lines written so far, oldest first, each without its trailing newline.
    public var lines: [String] {
        stored.withLock { lines in
            lines.map { $0.hasSuffix("\n") ? String($0.dropLast()) : $0 }
        }
    }
}
