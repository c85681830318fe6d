import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A real `redis-server` for cluster tests, on a free loopback port, killed when released.
///
/// Runs with `appendonly yes` and `appendfsync always` in its own folder, so a restart (after
/// `stop()`, which is SIGKILL) keeps every write it acknowledged, as the cluster's durability
/// tests need; it logs to `redis.log` there (`log`). `isAvailable` is false when Debian's
/// redis-server is not installed.
public final class TestRedis: @unchecked Sendable {
    /// The TCP port on 127.0.0.1 (kept across `restart()`).
    public let port: Int
    /// Its working folder (append-only file).
    public let directory: URL
    private var process: Process
    /// Arguments added to the command line (`--replicaof HOST PORT`), kept for `restart()`.
    private var extraArguments: [String]

    /// Whether `redis-server` can be started here.
    public static var isAvailable: Bool { FileManager.default.isExecutableFile(atPath: executable) }
    static let executable = "/usr/bin/redis-server"

    /// Starts Redis on a free port and waits until it answers; `extraArguments` go on its
    /// command line (`["--replicaof", "127.0.0.1", "6379"]` starts a replica).
    public init(extraArguments: [String] = []) throws {
        directory = URL(fileURLWithPath: "/tmp").appendingPathComponent("hr-" + String(UUID().uuidString.prefix(8)))
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        port = try Self.freePort()
        self.extraArguments = extraArguments
        process = try Self.launch(port: port, directory: directory, extra: extraArguments)
        Self.portsLock.lock()
        Self.ports.insert(port)
        Self.portsLock.unlock()
    }

    private static let portsLock = NSLock()
    nonisolated(unsafe) private static var ports: Set<Int> = []

    /// Whether a `TestRedis` of this process was started on `port` (not a proxy in front
    /// of one).
    public static func isServer(port: Int) -> Bool {
        portsLock.lock()
        defer { portsLock.unlock() }
        return ports.contains(port)
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(at: directory)
    }

    /// Runs one command with `redis-cli` (Debian's redis-tools, installed with the server)
    /// and returns what it printed, trimmed: for a test that plays a lost write.
    @discardableResult
    public func command(_ arguments: String...) throws -> String {
        let cli = Process()
        cli.executableURL = URL(fileURLWithPath: "/usr/bin/redis-cli")
        cli.arguments = ["-p", String(port)] + arguments
        let output = Pipe()
        cli.standardOutput = output
        try cli.run()
        let bytes = output.fileHandleForReading.readDataToEndOfFile()
        cli.waitUntilExit()
        return String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// What Redis logged so far (warnings, in its folder): a test that must not lose a
    /// connection looks for "output buffer limits" here.
    public var log: String {
        (try? String(contentsOf: directory.appendingPathComponent("redis.log"), encoding: .utf8)) ?? ""
    }

    /// Kills Redis (SIGKILL, like a crash).
    public func stop() {
        killAndReap(process)
    }

    /// Starts it again on the same port and folder.
    public func restart() throws {
        stop()
        process = try Self.launch(port: port, directory: directory, extra: extraArguments)
    }

    /// Starts it again on the same port and folder with other extra arguments (kept for
    /// the next `restart()`), such as `--replicaof` the primary a failover promoted.
    public func restart(extraArguments: [String]) throws {
        self.extraArguments = extraArguments
        try restart()
    }

    private static func launch(port: Int, directory: URL, extra: [String]) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "yes",
                             "--appendfsync", "always", "--dir", directory.path, "--daemonize", "no",
                             "--loglevel", "warning", "--logfile", directory.appendingPathComponent("redis.log").path] + extra
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(10)
        // Answering is not enough: another test's Redis may hold the port (it picked it while
        // ours was down for a restart, say). Only ours answers with its own pid; one that
        // could not bind exits.
        while Date() < deadline && process.isRunning {
            if answers(port: port, pid: process.processIdentifier) { return process }
            usleep(10_000)
        }
        killAndReap(process)
        throw TestRedisError.notAnswering(port)
    }

    /// Whether something on the port answers `PING` with `+PONG`.
    public static func ping(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { return false }
        let request = Array("PING\r\n".utf8)
        guard write(fd, request, request.count) == request.count else { return false }
        var answer = [UInt8](repeating: 0, count: 16)
        let count = read(fd, &answer, answer.count)
        return count >= 5 && Array(answer[0..<5]) == Array("+PONG".utf8)
    }

    /// Whether something on the port answers `PING` with `-NOAUTH` (it wants a password).
    public static func asksForAuth(port: Int) -> Bool {
        guard case .error(let text) = RedisCommandLine.run(port: port, ["PING"]) else { return false }
        return text.hasPrefix("NOAUTH")
    }

    /// Whether the Redis on `port` is the process `pid` (`INFO server` names its `process_id`).
    static func answers(port: Int, pid: Int32) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { return false }
        let request = Array("INFO server\r\n".utf8)
        guard write(fd, request, request.count) == request.count else { return false }
        var reply: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        let wanted = Array("process_id:\(pid)\r".utf8)
        var timeout = timeval(tv_sec: 1, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        while reply.count < 1 << 16 {
            let count = read(fd, &chunk, chunk.count)
            guard count > 0 else { return false }
            reply += chunk[0..<count]
            if reply.starts(with: Array("-".utf8)) { return false }
            if let text = String(bytes: reply, encoding: .utf8), text.contains(String(decoding: wanted, as: UTF8.self)) { return true }
            if let text = String(bytes: reply, encoding: .utf8), text.contains("\r\n\r\n"), text.contains("process_id:") { return false }
        }
        return false
    }

    /// A free port for a test Redis or sentinel, picked at random below the kernel's
    /// ephemeral range (where the daemons under test and every client socket get theirs):
    /// a port handed out by the kernel and closed again is the next one another test's
    /// `bind(0)` gets, and a Redis restarted on its port would then find it taken.
    public static func freePort() throws -> Int {
        for _ in 0..<200 {
            let candidate = Int.random(in: 20_000..<32_000)
            if isBindable(candidate) { return candidate }
        }
        throw TestRedisError.noPort
    }

    /// Whether nothing holds `port` on 127.0.0.1 now.
    private static func isBindable(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }
}

/// Why a test Redis could not be started.
public enum TestRedisError: Error {
    case noPort
    case notAnswering(Int)
}
