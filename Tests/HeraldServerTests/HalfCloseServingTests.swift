import Foundation
import HeraldTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Issue 13, item 1: a peer that shuts its sending side (`nc -q1` at the end of its input,
/// `shutdown(SHUT_WR)`) gets every answer to what it sent, over TCP, the Unix socket and TLS,
/// and is closed after the last one.
@Suite struct HalfCloseServingTests {
    /// A fresh data folder; the caller removes it.
    private static func dataDirectory() throws -> String {
        let path = NSTemporaryDirectory() + "heraldd-halfclose-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// The config of a daemon journaling to `dataDir`, so every `set` answer is held until durable.
    private static func journaling(_ dataDir: String, fsync: String = "always") -> String {
        #"data_dir: "\#(dataDir)", fsync: "\#(fsync)","#
    }

    /// `count` sets of `hc.N` (rid `sN`, value N) and a get of the last one (rid `get`), one line each.
    private static func setsAndGet(_ count: Int) -> [String] {
        (0..<count).map { #"{"op":"set","ch":"hc.\#($0)","value":\#($0),"rid":"s\#($0)"}"# }
            + [#"{"op":"get","ch":"hc.\#(count - 1)","rid":"get"}"#]
    }

    /// The lines parsed as JSON objects (lines that are not are left out).
    private static func frames(_ lines: [String]) -> [[String: Any]] {
        lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    /// Checks that every set of `setsAndGet(count)` was acknowledged and the get saw the last value.
    private static func expectEverySetAndTheGet(_ lines: [String], count: Int) {
        let frames = frames(lines)
        let sets = frames.filter { $0["ok"] as? String == "set" }.compactMap { $0["rid"] as? String }
        #expect(sets == (0..<count).map { "s" + String($0) }, "every set answered, in order")
        let get = frames.first { $0["rid"] as? String == "get" }
        #expect(get?["value"] as? Int == count - 1, "the get answered after the sets: \(lines.suffix(2))")
    }

    /// The Debian `nc` binary (netcat-openbsd, installed by scripts/bootstrap), if present.
    private static var netcat: String? {
        ["/usr/bin/nc.openbsd", "/bin/nc.openbsd", "/usr/bin/nc", "/bin/nc"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// The reproduction of issue 13: 100 sets and a get piped through `nc -q1` with a data
    /// folder. Before the fix only the `info` line came back (the held answers were dropped).
    @Test func netcatHalfCloseGetsEveryAnswerHeldForTheDataFolder() throws {
        let nc = try #require(Self.netcat, "netcat-openbsd is missing: run scripts/bootstrap")
        let dataDir = try Self.dataDirectory()
        defer { try? FileManager.default.removeItem(atPath: dataDir) }
        let daemon = try DaemonProcess(config: Self.journaling(dataDir))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: nc)
        process.arguments = ["-q1", "127.0.0.1", String(daemon.port)]
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        input.fileHandleForWriting.write(Data((Self.setsAndGet(100).joined(separator: "\n") + "\n").utf8))
        try input.fileHandleForWriting.close()
        // nc's `-q1` quits by SIGALRM, which the test runner's signal mask (inherited by
        // children) blocks: read its output until the answers are in, then kill it.
        let lines = Self.lines(from: output.fileHandleForReading.fileDescriptor, until: 102, seconds: 15)
        killAndReap(process)
        #expect(lines.count == 102, "info + 101 answers, got \(lines.count)")
        Self.expectEverySetAndTheGet(lines, count: 100)
    }

    /// Lines read from `fd` until there are `count` of them, EOF, or `seconds` pass.
    private static func lines(from fd: Int32, until count: Int, seconds: Double) -> [String] {
        let deadline = Date().addingTimeInterval(seconds)
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while bytes.count(where: { $0 == 10 }) < count {
            let left = deadline.timeIntervalSinceNow
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard left > 0, poll(&poller, 1, Int32(left * 1000) + 1) > 0 else { break }
            let got = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            guard got > 0 else { break }
            bytes.append(contentsOf: chunk[..<got])
        }
        return String(decoding: bytes, as: UTF8.self).split(separator: "\n").map(String.init)
    }

    /// A `req` sent just before `shutdown(SHUT_WR)` gets the reply its responder sends later;
    /// then the daemon closes.
    @Test func halfClosedRequesterGetsTheReplyThatComesLater() throws {
        let daemon = try DaemonProcess()
        let responder = try daemon.client()
        #expect(try responder.request(#"{"op":"sub","ch":"svc.echo"}"#)["ok"] as? String == "sub")
        let requester = try daemon.client()
        requester.send(#"{"op":"req","ch":"svc.echo","data":21,"timeout_ms":5000,"rid":"r1"}"#)
        requester.shutdownSending()
        let event = try responder.frame()
        let token = try #require(event["reply"] as? String)
        usleep(300_000)
        responder.send(#"{"op":"reply","to":"\#(token)","data":42}"#)
        let (lines, closed) = requester.linesUntilClosed()
        let answer = Self.frames(lines).first { $0["rid"] as? String == "r1" }
        #expect(answer?["ok"] as? String == "req", "the reply arrives: \(lines)")
        #expect(answer?["data"] as? Int == 42)
        #expect(closed, "the daemon closes once the answer is written")
    }

    /// A `req` sent just before `shutdown(SHUT_WR)` that nobody answers gets its `timeout`.
    @Test func halfClosedRequesterGetsItsTimeout() throws {
        let daemon = try DaemonProcess()
        let responder = try daemon.client()
        #expect(try responder.request(#"{"op":"sub","ch":"svc.silent"}"#)["ok"] as? String == "sub")
        let requester = try daemon.client()
        requester.send(#"{"op":"req","ch":"svc.silent","timeout_ms":300,"rid":"r2"}"#)
        requester.shutdownSending()
        let (lines, closed) = requester.linesUntilClosed()
        let answer = Self.frames(lines).first { $0["rid"] as? String == "r2" }
        #expect(answer?["error"] as? String == "timeout", "the timeout arrives: \(lines)")
        #expect(closed)
        _ = responder
    }

    /// The same over the Unix socket: sets held for the data folder, then a get.
    @Test func halfCloseOverTheUnixSocketGetsEveryAnswer() throws {
        let dataDir = try Self.dataDirectory()
        defer { try? FileManager.default.removeItem(atPath: dataDir) }
        let socketPath = "/tmp/hh-" + String(UUID().uuidString.prefix(8)) + ".sock"
        defer { unlink(socketPath) }
        let daemon = try DaemonProcess(config: Self.journaling(dataDir), arguments: ["--unix", socketPath])
        let client = try TestClient(unixPath: socketPath)
        for line in Self.setsAndGet(50) { client.send(line) }
        client.shutdownSending()
        let (lines, closed) = client.linesUntilClosed()
        Self.expectEverySetAndTheGet(lines, count: 50)
        #expect(closed)
        _ = daemon
    }

    /// The same over TLS, ending the input either way: the TCP sending side shut under the
    /// session (as `nc` would on a TLS tunnel), or a close_notify with TCP left open. The
    /// answers still come, sealed, then the daemon's close_notify and the close.
    @Test(arguments: [false, true]) func halfCloseUnderTLSGetsEveryAnswer(closeNotify: Bool) throws {
        let dataDir = try Self.dataDirectory()
        defer { try? FileManager.default.removeItem(atPath: dataDir) }
        let certificate = try TestCertificate()
        defer { certificate.remove() }
        let daemon = try DaemonProcess(config: certificate.daemonConfig + Self.journaling(dataDir))
        let client = try TLSLineClient(port: try daemon.tlsPort())
        for line in Self.setsAndGet(50) { try client.send(line) }
        if closeNotify { client.sendCloseNotify() } else { client.shutdownSending() }
        let (lines, closed) = client.linesUntilClosed()
        Self.expectEverySetAndTheGet(lines, count: 50)
        #expect(closed)
    }

    /// By decision (docs/protocol.md, "Half-close"), a half-closed subscriber's subscriptions
    /// end with its input, as with redis and nats-server: it gets its `ok`, nothing published
    /// afterwards, and is closed.
    @Test func halfClosedSubscriberIsClosedAfterItsAnswers() throws {
        let daemon = try DaemonProcess()
        let subscriber = try daemon.client()
        subscriber.send(#"{"op":"sub","ch":"news.x","rid":"s"}"#)
        subscriber.shutdownSending()
        let (lines, closed) = subscriber.linesUntilClosed()
        #expect(Self.frames(lines).map { $0["ok"] as? String } == ["sub"])
        #expect(closed)
        let publisher = try daemon.client()
        #expect(try publisher.request(#"{"op":"pub","ch":"news.x","data":1,"rid":1}"#)["receivers"] as? Int == 0)
    }
}
