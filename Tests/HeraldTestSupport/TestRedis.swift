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
        while Date() < deadline {
            if ping(port: port) { return process }
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

    /// A port the kernel just handed out and nobody holds now.
    public static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestRedisError.noPort }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw TestRedisError.noPort }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

/// Why a test Redis could not be started.
public enum TestRedisError: Error {
    case noPort
    case notAnswering(Int)
}
