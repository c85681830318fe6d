import Foundation
import HeraldServer
import HeraldTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Issue 12: the Unix socket listener never takes over a live daemon's socket nor deletes
/// what is not a socket, replaces only a stale socket, and gets `unix_mode` whatever the umask.
@Suite struct UnixSocketServingTests {
    /// A short socket path (sun_path holds 107 bytes) in a fresh folder, and the folder.
    private static func socketPath() throws -> (path: String, folder: String) {
        let folder = "/tmp/hu-" + String(UUID().uuidString.prefix(8))
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        return (folder + "/heraldd.sock", folder)
    }

    /// The file type and permission bits at `path` (lstat), or nil when nothing is there.
    private static func lstatMode(_ path: String) -> mode_t? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        return info.st_mode
    }

    /// Runs a daemon that is expected to refuse to start, with a time limit: one that starts
    /// after all (the old takeover) is killed, and nil is returned.
    private static func runRefusingDaemon(_ arguments: [String], seconds: Double = 10) throws -> (status: Int32, output: String)? {
        let process = Process()
        process.executableURL = DaemonProcess.executable
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let deadline = Date().addingTimeInterval(seconds)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        if process.isRunning {
            killAndReap(process)
            return nil
        }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    /// Connects over the Unix socket, reads the `info` frame and pings.
    /// - Returns: whether the daemon answered `pong`.
    private static func pings(_ path: String) throws -> Bool {
        let client = try TestClient(unixPath: path)
        guard try client.frame()["info"] != nil else { return false }
        return try client.request(#"{"op":"ping"}"#)["pong"] != nil
    }

    /// Leaves a socket file nobody listens on, as a daemon killed with SIGKILL does.
    private static func leaveStaleSocket(at path: String) {
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in raw.copyBytes(from: bytes) }
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        close(descriptor)
    }

    @Test func unixSocketGetsTheDefaultMode0660UnderUmaskZero() throws {
        let (path, folder) = try Self.socketPath()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let daemon = try DaemonProcess(arguments: ["--unix", path], umask: "000")
        #expect(try Self.pings(path))
        #expect(Self.lstatMode(path).map { $0 & 0o7777 } == 0o660)
        #expect(daemon.waitForLog("listening", "transport=unix", "mode=0660"))
    }

    @Test func unixModeFromTheConfigIsApplied() throws {
        let (path, folder) = try Self.socketPath()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let daemon = try DaemonProcess(config: #"unix_mode: "0600","#, arguments: ["--unix", path], umask: "000")
        #expect(try Self.pings(path))
        #expect(Self.lstatMode(path).map { $0 & 0o7777 } == 0o600)
        // Its own socket goes when it stops.
        daemon.signal(SIGTERM)
        #expect(daemon.waitForExit(seconds: 10) == 0)
        #expect(Self.lstatMode(path) == nil)
    }

    @Test func secondDaemonRefusesToTakeOverALiveSocket() throws {
        let (path, folder) = try Self.socketPath()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let first = try DaemonProcess(arguments: ["--unix", path])
        let result = try Self.runRefusingDaemon(["--port", "0", "--unix", path])
        let refused = try #require(result, "the second daemon started and took the socket over")
        #expect(refused.status == Daemon.startError)
        #expect(refused.output.contains("unix " + path + ": another process is listening"), "\(refused.output)")
        // The first daemon still owns the socket and serves it.
        #expect(try Self.pings(path))
        _ = first
    }

    @Test func regularFileAtTheUnixPathIsRefusedAndKept() throws {
        let (path, folder) = try Self.socketPath()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try "precious\n".write(toFile: path, atomically: false, encoding: .utf8)
        let result = try Self.runRefusingDaemon(["--port", "0", "--unix", path])
        let refused = try #require(result, "the daemon started over a regular file")
        #expect(refused.status == Daemon.startError)
        #expect(refused.output.contains("unix " + path + " exists and is not a socket"), "\(refused.output)")
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "precious\n")
    }

    @Test func staleSocketIsReplacedAndTheRemovalLogged() throws {
        let (path, folder) = try Self.socketPath()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        Self.leaveStaleSocket(at: path)
        #expect(Self.lstatMode(path).map { $0 & S_IFMT } == S_IFSOCK)
        let daemon = try DaemonProcess(arguments: ["--unix", path])
        #expect(try Self.pings(path))
        #expect(daemon.waitForLog("removed a stale unix socket", "path=" + path))
    }

    @Test func stoppingRemovesOnlyItsOwnSocket() throws {
        let (path, folder) = try Self.socketPath()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let daemon = try DaemonProcess(arguments: ["--unix", path])
        // Someone replaced the socket file while the daemon ran: stopping must not delete theirs.
        unlink(path)
        try "theirs\n".write(toFile: path, atomically: false, encoding: .utf8)
        daemon.signal(SIGTERM)
        #expect(daemon.waitForExit(seconds: 10) == 0)
        #expect((try? String(contentsOfFile: path, encoding: .utf8)) == "theirs\n", "\(daemon.log.joined(separator: "\n"))")
    }

    @Test func badUnixModeIsAStartupErrorNamingTheKey() throws {
        for bad in [#""660x""#, #""0999""#, #""10660""#, "660", #""""#] {
            #expect(throws: ConfigError.self, "\(bad)") {
                try Config.decode(json5: Data("{ unix_mode: \(bad) }".utf8), source: "heraldd.json5")
            }
        }
        do throws(ConfigError) {
            _ = try Config.decode(json5: Data(#"{ unix_mode: "0866" }"#.utf8), source: "heraldd.json5")
            Issue.record("0866 is not an octal mode")
        } catch {
            #expect(error.description.hasPrefix(#"heraldd.json5: bad value for "unix_mode": "0866""#), "\(error.description)")
        }
        #expect(try Config.decode(json5: Data(#"{ unix_mode: "640" }"#.utf8), source: "f").unixMode == 0o640)
        #expect(try Config.decode(json5: Data("{}".utf8), source: "f").unixMode == 0o660)
    }
}
