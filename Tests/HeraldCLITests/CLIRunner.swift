import Foundation
import HeraldTestSupport

/// What one `herald` run produced.
struct CLIResult {
    let status: Int32
    let stdout: String
    let stderr: String
}

/// Runs the built `herald` binary to completion.
func herald(_ arguments: [String], stdin: String? = nil) throws -> CLIResult {
    let process = try startHerald(arguments, stdin: stdin)
    return process.finish()
}

/// A running `herald` (e.g. `sub`), read to the end by `finish()`.
final class HeraldProcess {
    let process = Process()
    private let out = Pipe()
    private let err = Pipe()
    private let collected = LockedValue(Data())
    private let reader: Thread

    init(_ arguments: [String], stdin: String?) throws {
        process.executableURL = TestDaemon.binaryDirectory.appendingPathComponent("herald")
        process.arguments = arguments
        process.standardOutput = out
        process.standardError = err
        let input = Pipe()
        process.standardInput = input
        let handle = out.fileHandleForReading
        let collected = self.collected
        reader = Thread {
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                collected.withLock { $0.append(chunk) }
            }
        }
        reader.start()
        try process.run()
        if let stdin { input.fileHandleForWriting.write(Data(stdin.utf8)) }
        try input.fileHandleForWriting.close()
    }

    /// Standard output so far.
    var outputSoFar: String { String(decoding: collected.value, as: UTF8.self) }

    /// Waits for exit and returns everything it printed.
    func finish() -> CLIResult {
        let errors = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        // The reader ends at end of file, which follows the exit.
        let deadline = Date().addingTimeInterval(5)
        while reader.isExecuting && Date() < deadline { usleep(1_000) }
        return CLIResult(status: process.terminationStatus, stdout: outputSoFar, stderr: String(decoding: errors, as: UTF8.self))
    }
}

func startHerald(_ arguments: [String], stdin: String? = nil) throws -> HeraldProcess {
    try HeraldProcess(arguments, stdin: stdin)
}

/// `--port N` for a test daemon.
func at(_ daemon: TestDaemon) -> [String] { ["--port", String(daemon.port)] }

/// Waits until the daemon counts `count` subscriptions (so a `herald sub` is listening).
func waitForSubscriptions(_ daemon: TestDaemon, count: Int) throws -> Bool {
    let deadline = Date().addingTimeInterval(15)
    while Date() < deadline {
        let result = try herald(["stats", "--json"] + at(daemon))
        if let object = try? JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any],
           let subs = object["subscriptions"] as? Int, subs >= count {
            return true
        }
        usleep(20_000)
    }
    return false
}
