#if canImport(Network)
import Foundation
import Network
import Synchronization

/// The Apple transport: one `NWConnection` (TCP, or a Unix socket), TLS through
/// `NWProtocolTLS`; no OpenSSL.
///
/// Network.framework calls back on its own dispatch queue; this class turns that into the
/// non-blocking `read`/`write` the shared I/O thread expects: received bytes collect in an
/// inbox, sends are handed over at once (up to `sendWindow` unprocessed bytes), and every
/// callback signals the I/O thread's `ConditionWake`.
final class NetworkTransport: Transport, @unchecked Sendable {
    // @unchecked: `connection` is thread-safe (Network.framework), the rest is behind `shared`.
    private let connection: NWConnection
    private let queue = DispatchQueue(label: "herald.network")
    private let wakeSignal: ConditionWake
    private let shared = Mutex(Shared())
    /// Where viability and better-path news go (the client's I/O loop).
    private let pathNews: @Sendable (PathNews) -> Void

    /// Bytes handed to `send` and not yet processed before `write` takes no more.
    static let sendWindow = 1 << 20
    /// Received bytes not yet read before receiving pauses (TCP flow control takes over).
    static let inboxLimit = 4 << 20

    private enum Phase {
        case setup
        case ready
        case failed(String)
    }

    private struct Shared {
        var phase = Phase.setup
        var inbox: [UInt8] = []
        var inboxOffset = 0
        var receivePaused = false
        var ended = false
        var failure: String?
        var unsent = 0
        /// Why the connection is `.waiting` before `ready` (no path), for the timeout's message.
        var waitingReason: String?
    }

    private init(connection: NWConnection, wake: ConditionWake, pathNews: @escaping @Sendable (PathNews) -> Void) {
        self.connection = connection
        self.wakeSignal = wake
        self.pathNews = pathNews
    }

    /// Starts an `NWConnection` and waits until it is ready (TLS handshake included).
    ///
    /// `.waiting` with no usable path is waiting, not failure: Network.framework tries again by
    /// itself when the path changes, so the attempt goes on until `timeout`. `.waiting` while
    /// the path is satisfied means the daemon refused or cannot be reached: that fails at once,
    /// so the client moves on to its next endpoint.
    /// - Throws: `.connectionFailed` naming the endpoint and Network.framework's error,
    ///   "connect timed out" (naming what it waited for) or "connect interrupted" (closing).
    static func connect(to endpoint: Endpoint, tls: TLSOptions?, timeout: Double,
                        wake: ConditionWake, pathNews: @escaping @Sendable (PathNews) -> Void) throws(HeraldClientError) -> NetworkTransport {
        let target: NWEndpoint
        switch endpoint {
        case .tcp(let host, let port):
            guard (1...65535).contains(port), let number = NWEndpoint.Port(rawValue: UInt16(port)) else {
                throw .connectionFailed("\(endpoint): port out of range")
            }
            target = .hostPort(host: NWEndpoint.Host(host), port: number)
        case .unix(let path):
            target = .unix(path: path)
        }
        let tcp = NWProtocolTCP.Options()
        tcp.noDelay = true
        tcp.connectionTimeout = Int(max(1, timeout.rounded(.up)))
        let tlsOptions = try tls.map { options throws(HeraldClientError) in try Self.tlsOptions(options, endpoint: endpoint) }
        let parameters = NWParameters(tls: tlsOptions, tcp: tcp)
        let transport = NetworkTransport(connection: NWConnection(to: target, using: parameters), wake: wake, pathNews: pathNews)
        try transport.start(timeout: timeout, endpoint: endpoint)
        return transport
    }

    private func start(timeout: Double, endpoint: Endpoint) throws(HeraldClientError) {
        connection.stateUpdateHandler = { [weak self] state in self?.stateChanged(state) }
        connection.viabilityUpdateHandler = { [weak self] viable in self?.pathNews(.viable(viable)) }
        connection.betterPathUpdateHandler = { [weak self] available in
            if available { self?.pathNews(.betterPathAvailable) }
        }
        connection.start(queue: queue)
        let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(max(0.001, timeout) * 1e9)
        while true {
            switch shared.withLock({ $0.phase }) {
            case .ready:
                receiveNext()
                return
            case .failed(let why):
                connection.cancel()
                throw .connectionFailed("\(endpoint): \(why)")
            case .setup:
                break
            }
            let now = DispatchTime.now().uptimeNanoseconds
            guard now < deadline else {
                connection.cancel()
                let waitingFor = shared.withLock { $0.waitingReason }.map { " (waiting for a network path: \($0))" } ?? ""
                throw .connectionFailed("\(endpoint): connect timed out\(waitingFor)")
            }
            if wakeSignal.waitForNews(milliseconds: Int((deadline - now) / 1_000_000) + 1),
               case .setup = shared.withLock({ $0.phase }) {
                connection.cancel()
                throw .connectionFailed("\(endpoint): connect interrupted")
            }
        }
    }

    /// Network.framework's state changes: ready, or a failure (before or after ready).
    private func stateChanged(_ state: NWConnection.State) {
        shared.withLock { shared in
            let failure: String?
            switch state {
            case .ready:
                if case .setup = shared.phase { shared.phase = .ready }
                failure = nil
            case .waiting(let error):
                // Before `ready` with no usable path: waiting (Network.framework retries when
                // the path changes). With a path, or once the stream was up: this stream failed.
                if case .setup = shared.phase, connection.currentPath?.status != .satisfied {
                    shared.waitingReason = Self.describe(error)
                    failure = nil
                } else {
                    failure = Self.describe(error)
                }
            case .failed(let error):
                failure = Self.describe(error)
            case .cancelled:
                failure = "connection cancelled"
            default:
                failure = nil
            }
            guard let failure else { return }
            if case .setup = shared.phase {
                shared.phase = .failed(failure)
            } else if shared.failure == nil {
                shared.failure = failure
            }
        }
        wakeSignal.transportChanged()
    }

    /// Asks for the next chunk; each completion appends to the inbox and asks again, unless the
    /// stream ended, failed, or the inbox is over `inboxLimit` (then `read` resumes it).
    private func receiveNext() {
        connection.receive(minimumIncompleteLength: 1, maximumLength: 65536) { [weak self] data, _, isComplete, error in
            guard let self else { return }
            let again = self.shared.withLock { shared -> Bool in
                if let data, !data.isEmpty { shared.inbox.append(contentsOf: data) }
                if let error {
                    if shared.failure == nil { shared.failure = Self.describe(error) }
                    return false
                }
                if isComplete {
                    shared.ended = true
                    return false
                }
                if shared.inbox.count - shared.inboxOffset > Self.inboxLimit {
                    shared.receivePaused = true
                    return false
                }
                return true
            }
            self.wakeSignal.transportChanged()
            if again { self.receiveNext() }
        }
    }

    /// Copies received bytes; then reports the end of the stream (0) or its failure.
    func read(into buffer: inout [UInt8]) throws(HeraldClientError) -> Int {
        let capacity = buffer.count
        var chunk: [UInt8] = []
        let (count, resume, failure) = shared.withLock { shared -> (Int, Bool, String?) in
            let available = shared.inbox.count - shared.inboxOffset
            if available > 0 {
                let count = min(available, capacity)
                chunk = Array(shared.inbox[shared.inboxOffset..<(shared.inboxOffset + count)])
                shared.inboxOffset += count
                if shared.inboxOffset == shared.inbox.count {
                    shared.inbox.removeAll(keepingCapacity: shared.inbox.capacity <= 1 << 20)
                    shared.inboxOffset = 0
                } else if shared.inboxOffset > 1 << 20 {
                    shared.inbox.removeFirst(shared.inboxOffset)
                    shared.inboxOffset = 0
                }
                let resume = shared.receivePaused && shared.inbox.count - shared.inboxOffset <= Self.inboxLimit
                if resume { shared.receivePaused = false }
                return (count, resume, nil)
            }
            if shared.ended { return (0, false, nil) }
            if let failure = shared.failure { return (0, false, failure) }
            return (-1, false, nil)
        }
        if let failure { throw .connectionFailed(failure) }
        if resume { receiveNext() }
        if count > 0 { buffer.replaceSubrange(0..<count, with: chunk) }
        return count
    }

    /// Hands up to the free part of `sendWindow` to `send`; the completion frees it again.
    func write(_ bytes: [UInt8], from offset: Int) throws(HeraldClientError) -> Int {
        let (room, failure) = shared.withLock { shared in (Self.sendWindow - shared.unsent, shared.failure) }
        if let failure { throw .connectionFailed(failure) }
        guard room > 0, offset < bytes.count else { return 0 }
        let count = min(room, bytes.count - offset)
        shared.withLock { $0.unsent += count }
        connection.send(content: Data(bytes[offset..<(offset + count)]), completion: .contentProcessed { [weak self] error in
            guard let self else { return }
            self.shared.withLock { shared in
                shared.unsent -= count
                if let error, shared.failure == nil { shared.failure = Self.describe(error) }
            }
            self.wakeSignal.transportChanged()
        })
        return count
    }

    /// Whether sends are still being processed (the I/O thread waits for their completion).
    var hasPendingOutput: Bool { shared.withLock { $0.unsent > 0 } }

    /// Network.framework sends on its own; this only reports a failure.
    func flushPending() throws(HeraldClientError) {
        if let failure = shared.withLock({ $0.failure }) { throw .connectionFailed(failure) }
    }

    /// Whether the inbox holds bytes (or the stream's end) to read without waiting.
    var hasBufferedInput: Bool {
        shared.withLock { $0.inbox.count > $0.inboxOffset || $0.ended || $0.failure != nil }
    }

    /// Waits on the condition that Network.framework's callbacks and other threads signal.
    func wait(milliseconds: Int, writable: Bool, wake: ConditionWake) -> Bool {
        if hasBufferedInput { return true }
        wake.waitForNews(milliseconds: milliseconds)
        return hasBufferedInput
    }

    /// `forceCancel()`: the I/O thread sees the failure and reconnects.
    var cutter: @Sendable () -> Void {
        { [weak self] in self?.connection.forceCancel() }
    }

    /// Cancels the connection gracefully (TLS close_notify, then FIN).
    func close() {
        connection.stateUpdateHandler = nil
        connection.viabilityUpdateHandler = nil
        connection.betterPathUpdateHandler = nil
        connection.cancel()
    }

    private static func describe(_ error: NWError) -> String {
        if case .tls = error { return "TLS handshake failed: \(error)" }
        return "\(error)"
    }
}
#endif
