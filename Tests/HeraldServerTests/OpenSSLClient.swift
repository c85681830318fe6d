import Foundation
import HeraldTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// `openssl s_client` talking to the daemon's TLS port, driven like `TestClient`: request
/// lines go to its stdin, answer lines come from its stdout.
///
/// `-quiet` keeps stdout to application data (and implies `-ign_eof`, so the connection stays
/// up after stdin closes); `-verify_return_error` makes a bad certificate fail the handshake.
final class OpenSSLClient: @unchecked Sendable {
    let process = Process()
    private let input = Pipe()
    private let received = Locked<[UInt8]>([])
    private let errors = Locked<[UInt8]>([])
    /// Set when stderr reached end of file: everything `s_client` printed is in `errors`.
    private let errorsComplete = Locked(false)

    /// Starts `s_client` against `127.0.0.1:port`, trusting `caFile` and checking the IP address.
    /// - Parameter options: more `s_client` options, e.g. `["-tls1_2", "-cipher", "AES128-SHA"]`.
    init(port: Int, caFile: String, options: [String] = []) throws {
        process.executableURL = URL(fileURLWithPath: TestCertificate.opensslPath)
        process.arguments = ["s_client", "-connect", "127.0.0.1:" + String(port), "-quiet",
                             "-CAfile", caFile, "-verify_return_error", "-verify_ip", "127.0.0.1"] + options
        let output = Pipe()
        let diagnostics = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = diagnostics
        Self.collect(output.fileHandleForReading, into: received) {}
        let complete = errorsComplete
        Self.collect(diagnostics.fileHandleForReading, into: errors) { complete.withLock { $0 = true } }
        try process.run()
    }

    deinit {
        try? input.fileHandleForWriting.close()
        killAndReap(process)
    }

    private static func collect(_ handle: FileHandle, into sink: Locked<[UInt8]>, atEnd: @escaping @Sendable () -> Void) {
        Thread {
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                sink.withLock { $0.append(contentsOf: chunk) }
            }
            atEnd()
        }.start()
    }

    /// Sends one request line.
    func send(_ line: String) {
        input.fileHandleForWriting.write(Data((line + "\n").utf8))
    }

    /// The next line from the daemon, or throws on timeout.
    func line(timeout: Double = 10) throws -> String {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let line = received.withLock { buffer -> String? in
                guard let newline = buffer.firstIndex(of: 10) else { return nil }
                let line = String(decoding: buffer[..<newline], as: UTF8.self)
                buffer.removeSubrange(...newline)
                return line
            }
            if let line { return line }
            usleep(5_000)
        }
        throw TestClient.ClientError.timeout
    }

    /// The next line parsed as a JSON object.
    func frame(timeout: Double = 10) throws -> [String: Any] {
        let text = try line(timeout: timeout)
        guard let object = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else {
            throw TestClient.ClientError.notJSON(text)
        }
        return object
    }

    /// What `s_client` printed on stderr (the verification result, errors).
    var diagnostics: String { String(decoding: errors.withLock { $0 }, as: UTF8.self) }

    /// Waits for the process to end and for its stderr to be read to the end (so
    /// `diagnostics` is complete); its status, or nil when it is still running.
    func waitForExit(seconds: Double) -> Int32? {
        let deadline = Date().addingTimeInterval(seconds)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        if process.isRunning { return nil }
        while !errorsComplete.withLock({ $0 }) && Date() < deadline { usleep(10_000) }
        return process.terminationStatus
    }
}

extension DaemonProcess {
    /// The TLS listener's port, from its `listening transport=tls` log line.
    func tlsPort() throws -> Int {
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            for line in log where line.contains("listening") && line.contains("transport=tls") {
                if let range = line.range(of: #"port=(\d+)"#, options: .regularExpression), let port = Int(line[range].dropFirst(5)) {
                    return port
                }
            }
            usleep(5_000)
        }
        throw DaemonError.didNotStart(log.joined(separator: "\n"))
    }

    /// Waits until a log line contains every one of `parts`.
    func waitForLog(_ parts: String..., seconds: Double = 10) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if log.contains(where: { line in parts.allSatisfy { line.contains($0) } }) { return true }
            usleep(10_000)
        }
        return false
    }
}
