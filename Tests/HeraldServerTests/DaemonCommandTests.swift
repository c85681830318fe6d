import Foundation
import Testing

/// `heraldd` flags and configuration errors, run as a process.
@Suite struct DaemonCommandTests {
    @Test func versionPrintsVersion() throws {
        let result = try runDaemon(["--version"])
        #expect(result.status == 0)
        #expect(result.output.contains("heraldd 0.1.0"))
    }

    @Test func helpListsFlags() throws {
        let result = try runDaemon(["--help"])
        #expect(result.status == 0)
        for flag in ["--config", "--host", "--port", "--unix", "--data-dir", "--workers", "--log-level", "--check-config"] {
            #expect(result.output.contains(flag))
        }
    }

    @Test func unknownFlagFailsNamingIt() throws {
        let result = try runDaemon(["--prot", "1"])
        #expect(result.status != 0)
        #expect(result.output.contains("--prot"))
    }

    @Test func unknownConfigKeyStopsStartupNamingKeyAndFile() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("bad-\(UUID().uuidString).json5")
        try "{ prot: 7400 }".write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let result = try runDaemon(["--config", file.path, "--check-config"])
        #expect(result.status != 0)
        #expect(result.output.contains("prot"))
        #expect(result.output.contains(file.lastPathComponent))
    }

    @Test func shippedConfigChecksOK() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let result = try runDaemon(["--config", root.appendingPathComponent("config/heraldd.json5").path, "--check-config"])
        #expect(result.status == 0, "\(result.output)")
    }

    @Test func takenPortFailsCleanly() throws {
        let daemon = try DaemonProcess()
        let result = try runDaemon(["--port", String(daemon.port)])
        #expect(result.status != 0)
        #expect(result.output.contains("EADDRINUSE"))
    }
}
