import Foundation
import HeraldTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// A real `heraldd` started for one test on an ephemeral port, stopped when released.
final class DaemonProcess: @unchecked Sendable {
    let process = Process()
    let port: Int
    let directory: URL
    private let stderr: DaemonLog
    /// The first shard's port when `TestShards` made the config a shard list.
    private var shardedPort: Int?

    /// The built daemon: `$HERALDD`, else the `heraldd` next to this test binary.
    static var executable: URL {
        if let path = ProcessInfo.processInfo.environment["HERALDD"] { return URL(fileURLWithPath: path) }
        let me = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        return me.deletingLastPathComponent().appendingPathComponent("heraldd")
    }

    /// Starts the daemon with a config file holding `config` (JSON5 object body) and `arguments`.
    /// - Parameter umask: an octal umask such as `"000"` to start it under (through `sh -c
    ///   'umask …; exec heraldd …'`, so the test process's own umask is left alone).
    /// - Parameter environment: variables added to the daemon's environment.
    init(config: String = "", arguments: [String] = [], umask: String? = nil, environment: [String: String] = [:]) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("heraldd-test-" + UUID().uuidString)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let configFile = directory.appendingPathComponent("heraldd.json5")
        let (written, shardedPort) = TestShards.sharded(config)
        self.shardedPort = shardedPort
        try ("{" + written + "}").write(to: configFile, atomically: true, encoding: .utf8)
        // HERALD_TEST_WORKERS runs the whole suite against a multi-loop daemon.
        let workers = ProcessInfo.processInfo.environment["HERALD_TEST_WORKERS"].map { ["--workers", $0] } ?? []
        let daemonArguments = ["--config", configFile.path, "--port", "0", "--host", "127.0.0.1"] + workers + arguments
        if let umask {
            // exec keeps the pid, so terminating and reaping `process` still reach heraldd.
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", "umask " + umask + " && exec \"$0\" \"$@\"", DaemonProcess.executable.path]
                + daemonArguments
        } else {
            process.executableURL = DaemonProcess.executable
            process.arguments = daemonArguments
        }
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        let stderr = DaemonLog(reading: errors)
        self.stderr = stderr
        try process.run()
        guard stderr.wait(seconds: 10, while: process, until: { stderr.port(of: "tcp") != nil }),
              let found = stderr.port(of: "tcp") else {
            process.terminate()
            throw DaemonError.didNotStart(stderr.all.joined(separator: "\n"))
        }
        port = found
        // The Unix listener starts right after the TCP one: wait for it too when asked for.
        if arguments.contains("--unix") {
            _ = stderr.wait(seconds: 10, while: process, until: { stderr.isListening("unix") })
        }
    }

    deinit {
        killAndReap(process)
        if let shardedPort { TestShards.release(shardedPort) }
        try? FileManager.default.removeItem(at: directory)
    }

    /// The bound port of the `listening transport=NAME` line (`ws`, `wss`, `tls`), waiting
    /// for it. - Throws: `DaemonError.didNotStart` when none was announced within 10 s.
    func listeningPort(_ transport: String) throws -> Int {
        guard stderr.wait(seconds: 10, while: process, until: { stderr.port(of: transport) != nil }),
              let port = stderr.port(of: transport) else {
            throw DaemonError.didNotStart(log.joined(separator: "\n"))
        }
        return port
    }

    /// The HTTP monitor's bound port (`listening transport=http … port=N`), waiting for
    /// the line when it is not logged yet.
    /// - Throws: `DaemonError.didNotStart` when no monitor was announced within 10 s.
    func monitorPort() throws -> Int {
        guard stderr.wait(seconds: 10, while: process, until: { stderr.port(of: "http") != nil }),
              let port = stderr.port(of: "http") else {
            throw DaemonError.didNotStart(log.joined(separator: "\n"))
        }
        return port
    }

    /// Everything the daemon logged so far.
    var log: [String] { stderr.all }

    /// Sends a signal to the daemon.
    func signal(_ signum: Int32) { kill(process.processIdentifier, signum) }

    /// The daemon's resident set in bytes (`VmRSS` of `/proc/PID/status`), nil once gone.
    var residentBytes: Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
              let kilobytes = Int(line.split(separator: " ")[1]) else { return nil }
        return kilobytes << 10
    }

    /// Waits for exit; nil when it did not exit in time.
    func waitForExit(seconds: Double) -> Int32? {
        let deadline = Date().addingTimeInterval(seconds)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        return process.isRunning ? nil : process.terminationStatus
    }

    /// Opens a client connection and reads the `info` frame.
    func client() throws -> TestClient {
        let client = try TestClient(port: port)
        _ = try client.frame()
        return client
    }
}

enum DaemonError: Error {
    case didNotStart(String)
}

/// Runs `heraldd` to completion with `arguments`, for flag and config checks.
func runDaemon(_ arguments: [String]) throws -> (status: Int32, output: String) {
    let process = Process()
    process.executableURL = DaemonProcess.executable
    process.arguments = arguments
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = pipe
    try process.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: data, as: UTF8.self))
}

/// A value behind a lock (the support module's, under the name these tests use).
typealias Locked = LockedValue
