import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A real `redis-sentinel` for failover tests, on a free loopback port, monitoring one
/// primary under the name `master`, killed when released. Tuned to fail over fast:
/// `down-after-milliseconds` and `failover-timeout` are parameters (quorum 2, so three
/// of them are a test's usual set).
public final class TestSentinel: @unchecked Sendable {
    /// The TCP port on 127.0.0.1.
    public let port: Int
    /// The monitored primary's name.
    public let master: String
    /// Its folder (config file, which Sentinel rewrites).
    private let directory: URL
    /// The running sentinel.
    private let process: Process

    /// Whether `redis-sentinel` (Debian's package) is installed.
    public static var isAvailable: Bool { FileManager.default.isExecutableFile(atPath: executable) }
    /// Debian's redis-sentinel.
    static let executable = "/usr/bin/redis-sentinel"

    /// Starts a sentinel monitoring 127.0.0.1:`primaryPort` and waits until it answers.
    /// `extra` lines go at the end of its config (`requirepass`, `sentinel auth-pass …`).
    public init(master: String, primaryPort: Int, downAfterMs: Int = 1_000, failoverTimeoutMs: Int = 2_000,
                extra: [String] = []) throws {
        self.master = master
        directory = URL(fileURLWithPath: "/tmp").appendingPathComponent("hs-" + String(UUID().uuidString.prefix(8)))
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        port = try TestRedis.freePort()
        // Sentinel rewrites its config file as it learns (replicas, other sentinels, epochs).
        let config = """
            port \(port)
            bind 127.0.0.1
            dir \(directory.path)
            loglevel warning
            logfile ""
            sentinel monitor \(master) 127.0.0.1 \(primaryPort) 2
            sentinel down-after-milliseconds \(master) \(downAfterMs)
            sentinel failover-timeout \(master) \(failoverTimeoutMs)
            sentinel parallel-syncs \(master) 1
            \(extra.joined(separator: "\n"))

            """
        let file = directory.appendingPathComponent("sentinel.conf")
        try config.write(to: file, atomically: true, encoding: .utf8)
        process = Process()
        process.executableURL = URL(fileURLWithPath: Self.executable)
        process.arguments = [file.path]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if TestRedis.ping(port: port) || TestRedis.asksForAuth(port: port) { return }
            usleep(10_000)
        }
        killAndReap(process)
        throw TestRedisError.notAnswering(port)
    }

    deinit {
        killAndReap(process)
        try? FileManager.default.removeItem(at: directory)
    }

    /// The primary's port this sentinel names now, nil when it does not answer.
    public func primaryPort() -> Int? {
        guard let parts = RedisCommandLine.run(port: port, ["SENTINEL", "get-master-addr-by-name", master])?.elements,
              parts.count == 2 else { return nil }
        return parts[1].text.flatMap { Int($0) }
    }

    /// The flags of each replica it knows (`slave`, `s_down,slave`, …), by port.
    public func replicaFlags() -> [Int: String] {
        var flags: [Int: String] = [:]
        for entry in RedisCommandLine.run(port: port, ["SENTINEL", "replicas", master])?.elements ?? [] {
            let fields = entry.elements?.compactMap(\.text) ?? []
            var values: [String: String] = [:]
            for index in stride(from: 0, to: fields.count - 1, by: 2) { values[fields[index]] = fields[index + 1] }
            if let port = values["port"].flatMap({ Int($0) }) { flags[port] = values["flags"] ?? "" }
        }
        return flags
    }

    /// How many other sentinels it knows of.
    public func otherSentinels() -> Int {
        RedisCommandLine.run(port: port, ["SENTINEL", "sentinels", master])?.elements?.count ?? 0
    }
}
