import Foundation
import HeraldTLS
#if canImport(Glibc)
import Glibc
#endif

/// A blocking TLS line client over a `TestClient`'s socket, driving `TLSEngine` by hand so a
/// test can do what `openssl s_client` cannot: shut the TCP sending side under the TLS
/// session and keep reading the answers.
final class TLSLineClient {
    /// The TCP connection underneath.
    let socket: TestClient
    /// The client side of the TLS session, over memory BIOs.
    private let engine: TLSEngine
    /// Decrypted bytes not yet split into lines.
    private var plaintext: [UInt8] = []
    /// Set once the daemon closed (TCP EOF or its close_notify).
    private var peerClosed = false

    /// Failures of the test's own TLS side.
    enum Failure: Error { case handshake(String), closedDuringHandshake, write(String) }

    /// Connects to `127.0.0.1:port` and completes the handshake (the certificate is not
    /// checked: this client is about the byte stream, `TLSServingTests` covers verification).
    init(port: Int) throws {
        socket = try TestClient(port: port)
        engine = try TLSEngine(context: try TLSContext.client(trust: .insecure))
        while true {
            let progress = engine.handshake()
            sendCiphertext()
            switch progress {
            case .complete: return
            case .failed(let error): throw Failure.handshake(error.description)
            case .inProgress: guard readCiphertext(timeout: 10) else { throw Failure.closedDuringHandshake }
            }
        }
    }

    /// Seals and sends one request line.
    func send(_ line: String) throws {
        try send(bytes: Array((line + "\n").utf8))
    }

    /// Seals and sends bytes as they are (a WebSocket upgrade and frames, `wss_port`).
    func send(bytes: [UInt8]) throws {
        let failure = bytes.withUnsafeBytes { buffer -> TLSError? in
            do throws(TLSError) {
                try engine.write(buffer)
                return nil
            } catch {
                return error
            }
        }
        if let failure { throw Failure.write(failure.description) }
        sendCiphertext()
    }

    /// Shuts the TCP sending side under the TLS session (no close_notify): the daemon reads EOF.
    func shutdownSending() {
        socket.shutdownSending()
    }

    /// Sends close_notify (TLS's own end of input), leaving the TCP connection open both ways.
    func sendCloseNotify() {
        engine.shutdown()
        sendCiphertext()
    }

    /// Every plaintext line until the daemon closes (TCP EOF or its close_notify), or `timeout`.
    /// - Returns: the lines, and whether the connection was closed (false: timed out).
    func linesUntilClosed(timeout: Double = 10) -> (lines: [String], closed: Bool) {
        let deadline = Date().addingTimeInterval(timeout)
        while !peerClosed {
            let left = deadline.timeIntervalSinceNow
            guard left > 0, readCiphertext(timeout: left) else { break }
            decrypt()
        }
        decrypt()
        let text = String(decoding: plaintext, as: UTF8.self)
        return (text.split(separator: "\n").map(String.init), peerClosed)
    }

    /// Moves every plaintext byte the engine can produce into `plaintext`; notes close_notify.
    private func decrypt() {
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let result = chunk.withUnsafeMutableBytes { engine.read(into: $0) }
            switch result {
            case .bytes(let count): plaintext.append(contentsOf: chunk[..<count])
            case .closed:
                peerClosed = true
                return
            case .needMore, .failed: return
            }
        }
    }

    /// Sends whatever ciphertext the engine produced (handshake, records, close_notify).
    private func sendCiphertext() {
        var out: [UInt8] = []
        engine.takeCiphertext(appendingTo: &out)
        if !out.isEmpty { socket.send(bytes: out) }
    }

    /// Waits for ciphertext and feeds it to the engine.
    /// - Returns: false on timeout or when the socket reached EOF (then `peerClosed` is set).
    private func readCiphertext(timeout: Double) -> Bool {
        var poller = pollfd(fd: socket.fd, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, Int32(timeout * 1000) + 1) > 0 else { return false }
        var chunk = [UInt8](repeating: 0, count: 65536)
        let count = chunk.withUnsafeMutableBytes { read(socket.fd, $0.baseAddress, $0.count) }
        guard count > 0 else {
            peerClosed = true
            return false
        }
        chunk.withUnsafeBytes { engine.feed(UnsafeRawBufferPointer(rebasing: $0[..<count])) }
        return true
    }
}
