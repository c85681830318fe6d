import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A real `heraldd` for client and CLI tests, on an ephemeral port, killed when released.
///
/// Unlike HeraldServerTests' `DaemonProcess` it can be stopped and started again on the same
/// port (and Unix socket), which the reconnect tests need.
public final class TestDaemon: @unchecked Sendable {
    /// The TCP port (kept across `restart()`).
    public private(set) var port: Int
    /// The Unix socket path the daemon also listens on.
    public let unixPath: String
    /// The folder holding the config file and socket.
    public let directory: URL
    private var process: Process
    private let config: String
    /// The TLS port when the config sets `tls_port` (read from the `transport=tls` log line).
    public private(set) var tlsPort: Int?

    /// The built daemon: `$HERALDD`, else the `heraldd` next to this test binary.
    public static var executable: URL {
        if let path = ProcessInfo.processInfo.environment["HERALDD"] { return URL(fileURLWithPath: path) }
        return binaryDirectory.appendingPathComponent("heraldd")
    }

    /// The folder of the running test binary (where SwiftPM puts the products).
    public static var binaryDirectory: URL {
        URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
    }

    /// Starts the daemon with `config` (the body of a JSON5 object).
    public init(config: String = "") throws {
        directory = URL(fileURLWithPath: "/tmp").appendingPathComponent("hd-" + String(UUID().uuidString.prefix(8)))
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        unixPath = directory.appendingPathComponent("s.sock").path
        self.config = config
        let (process, port, tlsPort) = try Self.launch(directory: directory, config: config, port: 0, unixPath: unixPath)
        self.process = process
        self.port = port
        self.tlsPort = tlsPort
    }

    deinit {
        killAndReap(process)
        releasePort()
        try? FileManager.default.removeItem(at: directory)
    }

    /// A socket bound to `port`, never listening, while the daemon is stopped: connecting is
    /// refused as with no daemon, and no other test's daemon can take the port meanwhile (in
    /// the full parallel run one did, and a client "waiting for the daemon" connected to it).
    private var reservation: Int32 = -1

    private func reservePort() {
        guard reservation < 0 else { return }
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        if bound == 0 { reservation = fd } else { close(fd) }
    }

    private func releasePort() {
        guard reservation >= 0 else { return }
        close(reservation)
        reservation = -1
    }

    /// Kills the daemon (SIGKILL: no goodbye to clients, like a crash).
    ///
    /// Waits for the exit with a bounded `waitpid` loop rather than `Process.waitUntilExit()`,
    /// which was seen to hang on a test-pool thread when Foundation missed the exit.
    public func stop() {
        killAndReap(process)
        reservePort()
    }

    /// Freezes the daemon (SIGSTOP): connections stay open but nothing is answered.
    public func pause() { kill(process.processIdentifier, SIGSTOP) }

    /// Thaws a paused daemon (SIGCONT).
    public func resume() { kill(process.processIdentifier, SIGCONT) }

    /// Rewrites the config file with `newConfig` (the body of a JSON5 object) and sends
    /// SIGHUP, so the daemon applies its live keys (users and permissions among them).
    /// `restart()` still uses the config the daemon was created with.
    public func reload(config newConfig: String) throws {
        let file = directory.appendingPathComponent("heraldd.json5")
        try ("{" + newConfig + "}").write(to: file, atomically: true, encoding: .utf8)
        kill(process.processIdentifier, SIGHUP)
    }

    /// Starts a fresh daemon on the same port and socket (new epoch, empty state).
    public func restart() throws {
        killAndReap(process)
        releasePort()
        var lastError: Error?
        // The port is free again at once (SO_REUSEADDR); retry briefly in case it is not.
        for _ in 0..<50 {
            do {
                let (process, port, tlsPort) = try Self.launch(directory: directory, config: config, port: port, unixPath: unixPath)
                self.process = process
                self.port = port
                self.tlsPort = tlsPort
                return
            } catch {
                lastError = error
                usleep(100_000)
            }
        }
        throw lastError ?? TestDaemonError.didNotStart("restart failed")
    }

    private static func launch(directory: URL, config: String, port: Int, unixPath: String) throws -> (Process, Int, Int?) {
        let configFile = directory.appendingPathComponent("heraldd.json5")
        try ("{" + config + "}").write(to: configFile, atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = executable
        process.arguments = ["--config", configFile.path, "--port", String(port), "--host", "127.0.0.1", "--unix", unixPath]
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        let log = DaemonLog(reading: errors)
        try process.run()
        // The daemon logs tcp, then tls, then unix: waiting for unix covers tls too, and a Unix
        // connect made before that line could race the listener.
        guard log.wait(seconds: 15, while: process, until: { log.isListening("unix") }),
              let port = log.port(of: "tcp") else {
            killAndReap(process)
            throw TestDaemonError.didNotStart(log.all.joined(separator: "\n"))
        }
        return (process, port, log.port(of: "tls"))
    }
}

/// Why a test daemon did not come up.
public enum TestDaemonError: Error {
    /// It exited or did not log `listening` in time; carries its log.
    case didNotStart(String)
}

/// A value behind a lock, for collecting results from handlers on other threads.
public final class LockedValue<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var storage: Value

    /// Wraps `value`.
    public init(_ value: Value) { storage = value }

    /// Runs `body` with exclusive access.
    public func withLock<R>(_ body: (inout Value) -> R) -> R {
        lock.lock()
        defer { lock.unlock() }
        return body(&storage)
    }

    /// A copy of the value.
    public var value: Value { withLock { $0 } }
}

/// Polls `condition` every 10 ms until it holds or `seconds` pass; returns whether it held.
public func eventually(within seconds: Double = 10, _ condition: () -> Bool) async -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if condition() { return true }
        try? await Task.sleep(nanoseconds: 10_000_000)
    }
    return condition()
}
