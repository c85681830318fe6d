import Foundation
import Testing

/// The systemd unit shipped in `config/heraldd.service` must start the daemon this build makes.
@Suite struct ServiceUnitTests {
    private static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The unit's `key=value` lines for `key`, in file order.
    private static func values(of key: String) throws -> [String] {
        let text = try String(contentsOf: root.appendingPathComponent("config/heraldd.service"), encoding: .utf8)
        return text.split(separator: "\n").compactMap { line in
            line.hasPrefix(key + "=") ? String(line.dropFirst(key.count + 1)) : nil
        }
    }

    /// The unit's command line with the installed paths swapped for this checkout's.
    private static func localArguments(_ command: String) -> [String] {
        command.split(separator: " ").dropFirst().map { word in
            word == "/etc/herald/heraldd.json5" ? root.appendingPathComponent("config/heraldd.json5").path : String(word)
        }
    }

    @Test func execStartFlagsAreAcceptedByTheDaemonWithTheShippedConfig() throws {
        let starts = try Self.values(of: "ExecStart")
        #expect(starts.count == 1)
        let command = try #require(starts.first)
        #expect(command.hasPrefix("/usr/local/bin/heraldd "))
        let result = try runDaemon(Self.localArguments(command) + ["--check-config"])
        #expect(result.status == 0, "\(result.output)")
    }

    @Test func execStartPreChecksTheSameConfigTheServiceStarts() throws {
        let pre = try #require(try Self.values(of: "ExecStartPre").first)
        let start = try #require(try Self.values(of: "ExecStart").first)
        #expect(pre == start + " --check-config")
        let result = try runDaemon(Self.localArguments(pre))
        #expect(result.status == 0, "\(result.output)")
    }

    @Test func reloadSendsSIGHUPAndStopSendsSIGTERM() throws {
        #expect(try Self.values(of: "ExecReload") == ["/bin/kill -HUP $MAINPID"])
        #expect(try Self.values(of: "KillSignal") == ["SIGTERM"])
    }

    @Test func configIsInstalledReadableOnlyByRootAndTheHeraldGroup() throws {
        let install = "install -m 0640 -g herald config/heraldd.json5 /etc/herald/heraldd.json5"
        let unit = try String(contentsOf: Self.root.appendingPathComponent("config/heraldd.service"), encoding: .utf8)
        let operations = try String(contentsOf: Self.root.appendingPathComponent("docs/operations.md"), encoding: .utf8)
        for (name, text) in [("config/heraldd.service", unit), ("docs/operations.md", operations)] {
            #expect(text.contains(install), "\(name) does not install the config 0640")
            #expect(!text.contains("install -m 0644 config/heraldd.json5"), "\(name) still installs the config 0644")
            #expect(text.contains("groupadd --system herald"), "\(name) does not create the herald group")
        }
        // The dynamic user reads the 0640 file through the static group.
        #expect(try Self.values(of: "SupplementaryGroups") == ["herald"])
        #expect(try Self.values(of: "UMask") == ["0077"])
    }

    @Test func workingDirectoryIsTheStateDirectorySoDataDirIsKept() throws {
        #expect(try Self.values(of: "StateDirectory") == ["herald"])
        #expect(try Self.values(of: "WorkingDirectory") == ["/var/lib/herald"])
    }
}
