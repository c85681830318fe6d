import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Issue 12: the data folder is 0700 and every file the daemon makes in it 0600, whatever
/// the umask it was started under; a folder found open to others is tightened, with a warning.
@Suite struct DataFolderModeTests {
    /// The permission bits of `path`, or nil when it does not exist.
    static func mode(_ path: String) -> mode_t? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return info.st_mode & 0o7777
    }

    /// A fresh folder under /tmp for one test, removed by the caller.
    static func scratchFolder() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("heraldd-modes-" + UUID().uuidString).path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// Waits until `path` exists.
    static func waitFor(_ path: String, seconds: Double = 10) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if FileManager.default.fileExists(atPath: path) { return true }
            usleep(20_000)
        }
        return false
    }

    @Test func dataFolderAndStateFilesArePrivateUnderUmaskZero() throws {
        let scratch = try Self.scratchFolder()
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        // "state" does not exist either: the parent the daemon creates must be private too.
        let dataDir = scratch + "/state/data"
        let daemon = try DaemonProcess(config: #"data_dir: "\#(dataDir)", compact_min_bytes: 0, fsync: "always","#,
                                       umask: "000")
        let client = try daemon.client()
        for n in 1...5 {
            #expect(try client.request(#"{"op":"set","ch":"secret","value":\#(n)}"#)["ok"] as? String == "set")
        }
        // compact_min_bytes 0: the first records outgrow the empty snapshot, so one is written
        // (through snapshot.tmp) and a new log started.
        #expect(Self.waitFor(dataDir + "/snapshot"), "\(daemon.log.joined(separator: "\n"))")
        #expect(daemon.waitForLog("compacted"))
        #expect(try client.request(#"{"op":"set","ch":"secret","value":6}"#)["ok"] as? String == "set")
        #expect(Self.mode(scratch + "/state") == 0o700)
        #expect(Self.mode(dataDir) == 0o700)
        let names = try FileManager.default.contentsOfDirectory(atPath: dataDir)
        #expect(names.contains("lock") && names.contains("snapshot") && names.contains { $0.hasPrefix("log.") }, "\(names)")
        for name in names {
            #expect(Self.mode(dataDir + "/" + name) == 0o600, "\(name) has mode \(String(Self.mode(dataDir + "/" + name) ?? 0, radix: 8))")
        }
    }

    @Test func existingDataFolderOpenToOthersIsTightenedWithAWarning() throws {
        let scratch = try Self.scratchFolder()
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let dataDir = scratch + "/data"
        try FileManager.default.createDirectory(atPath: dataDir, withIntermediateDirectories: false)
        #expect(chmod(dataDir, 0o755) == 0)
        // A log an older heraldd left readable by everyone is tightened when it is reopened.
        #expect(FileManager.default.createFile(atPath: dataDir + "/log.0", contents: Data(), attributes: [.posixPermissions: 0o644]))
        let daemon = try DaemonProcess(config: #"data_dir: "\#(dataDir)","#)
        #expect(try daemon.client().request(#"{"op":"ping"}"#)["pong"] != nil)
        #expect(Self.mode(dataDir) == 0o700)
        #expect(Self.mode(dataDir + "/log.0") == 0o600)
        #expect(daemon.waitForLog("warn", "data folder permissions", "had mode 0755; tightened to 0700"),
                "\(daemon.log.joined(separator: "\n"))")
    }

    @Test func privateDataFolderStartsWithoutAWarning() throws {
        let scratch = try Self.scratchFolder()
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let dataDir = scratch + "/data"
        let daemon = try DaemonProcess(config: #"data_dir: "\#(dataDir)","#)
        #expect(try daemon.client().request(#"{"op":"ping"}"#)["pong"] != nil)
        #expect(Self.mode(dataDir) == 0o700)
        #expect(!daemon.log.contains { $0.contains("data folder permissions") })
    }
}
