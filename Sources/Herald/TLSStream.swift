#if !canImport(Network)
import Glibc
import HeraldTLS

/// The TLS layer of a client `SocketTransport`: an engine over memory BIOs plus the ciphertext the
/// socket has not taken yet. Owned by the I/O thread, like the socket.
final class TLSStream {
    private let engine: TLSEngine
    /// Sealed records waiting for the kernel; `write` accepts no new plaintext until they are out.
    private var pending: [UInt8] = []
    private var pendingOffset = 0
    private var scratch = [UInt8](repeating: 0, count: 65536)

    /// Largest plaintext sealed per `write`, so a big backlog does not become one big copy.
    private static let sealChunk = 64 * 1024

    private init(engine: TLSEngine) {
        self.engine = engine
    }

    /// Runs the client handshake on a connected non-blocking socket, waiting with `poll`.
    /// - Parameters:
    ///   - fd: the connected socket.
    ///   - options: trust settings and the name to check.
    ///   - host: the endpoint's host (the name checked when `options.serverName` is nil).
    ///   - timeout: seconds for the whole handshake.
    ///   - wake: a descriptor whose readability aborts the wait (the client is closing).
    /// - Returns: the established stream.
    /// - Throws: `HeraldClientError.connectionFailed` with OpenSSL's reason, e.g.
    ///   `TLS handshake failed: certificate verify failed; unable to get local issuer certificate`.
    static func handshake(fd: Int32, options: TLSOptions, host: String?, timeout: Double,
                          wake: Int32) throws(HeraldClientError) -> TLSStream {
        let stream: TLSStream
        do {
            let context = try TLSContext.client(trust: options.trust.openSSLTrust)
            stream = TLSStream(engine: try TLSEngine(context: context, serverName: options.serverName ?? host))
        } catch {
            throw .connectionFailed(error.description)
        }
        let deadline = Double(DispatchTimeNanos.now) / 1e9 + timeout
        while true {
            let progress = stream.engine.handshake()
            stream.engine.takeCiphertext(appendingTo: &stream.pending)
            try stream.sendPending(fd: fd)
            switch progress {
            case .complete:
                return stream
            case .failed(let error):
                throw .connectionFailed(error.description)
            case .inProgress:
                break
            }
            let left = deadline - Double(DispatchTimeNanos.now) / 1e9
            guard left > 0 else { throw .connectionFailed("TLS handshake timed out") }
            let wantsOut = stream.hasPendingOutput
            var fds = [pollfd(fd: fd, events: Int16(POLLIN) | (wantsOut ? Int16(POLLOUT) : 0), revents: 0),
                       pollfd(fd: wake, events: Int16(POLLIN), revents: 0)]
            let ready = poll(&fds, 2, Int32(max(1, left * 1000)))
            if ready > 0 && fds[1].revents != 0 { throw .connectionFailed("connect interrupted") }
            if ready > 0 && fds[0].revents & Int16(POLLIN | POLLHUP | POLLERR) != 0 {
                guard try stream.readCiphertext(fd: fd) != 0 else {
                    throw .connectionFailed("TLS handshake failed: the server closed the connection")
                }
            }
        }
    }

    /// Plaintext into `buffer`, reading the socket only when the engine needs more.
    /// - Returns: bytes produced, 0 at end of stream (EOF or close_notify), -1 when nothing is available yet.
    func read(fd: Int32, into buffer: inout [UInt8]) throws(HeraldClientError) -> Int {
        while true {
            let result = buffer.withUnsafeMutableBytes { engine.read(into: $0) }
            if engine.hasCiphertext {
                engine.takeCiphertext(appendingTo: &pending)
                try sendPending(fd: fd)
            }
            switch result {
            case .bytes(let count): return count
            case .closed: return 0
            case .failed(let error): throw .connectionFailed(error.description)
            case .needMore:
                let count = try readCiphertext(fd: fd)
                if count <= 0 { return count }
            }
        }
    }

    /// Seals up to `sealChunk` bytes of `bytes[offset...]` and sends what the kernel takes.
    /// - Returns: plaintext bytes accepted (0 while earlier records are still waiting).
    func write(fd: Int32, _ bytes: [UInt8], from offset: Int) throws(HeraldClientError) -> Int {
        try sendPending(fd: fd)
        guard !hasPendingOutput, offset < bytes.count else { return 0 }
        let count = min(bytes.count - offset, Self.sealChunk)
        let failure = bytes[offset..<(offset + count)].withUnsafeBytes { plaintext -> TLSError? in
            do throws(TLSError) {
                try engine.write(plaintext)
                return nil
            } catch {
                return error
            }
        }
        if let failure { throw .connectionFailed(failure.description) }
        engine.takeCiphertext(appendingTo: &pending)
        try sendPending(fd: fd)
        return count
    }

    /// Whether sealed records still wait for the kernel.
    var hasPendingOutput: Bool { pendingOffset < pending.count }

    /// Whether plaintext can be read without the socket becoming readable.
    var hasBufferedInput: Bool { engine.hasBufferedInput }

    /// Sends what the kernel takes of the sealed records.
    func sendPending(fd: Int32) throws(HeraldClientError) {
        while pendingOffset < pending.count {
            let n = pending[pendingOffset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n < 0 {
                let code = errno
                if code == EAGAIN || code == EWOULDBLOCK || code == EINTR { return }
                throw .connectionFailed(SocketTransport.errorText(code))
            }
            pendingOffset += n
        }
        pending.removeAll(keepingCapacity: pending.capacity <= 1 << 20)
        pendingOffset = 0
    }

    /// Queues close_notify and tries once to send it (the socket closes right after).
    func close(fd: Int32) {
        engine.shutdown()
        engine.takeCiphertext(appendingTo: &pending)
        try? sendPending(fd: fd)
    }

    /// Moves what the socket has into the engine.
    /// - Returns: bytes read, 0 at end of stream, -1 when nothing is available.
    private func readCiphertext(fd: Int32) throws(HeraldClientError) -> Int {
        let n = scratch.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
        if n > 0 {
            scratch.withUnsafeBytes { engine.feed(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
            return n
        }
        if n == 0 { return 0 }
        let code = errno
        if code == EAGAIN || code == EWOULDBLOCK || code == EINTR { return -1 }
        throw .connectionFailed(SocketTransport.errorText(code))
    }
}

/// Monotonic nanoseconds without Dispatch (the handshake deadline).
private enum DispatchTimeNanos {
    static var now: UInt64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec)
    }
}

extension TLSTrust {
    /// The same choice in `HeraldTLS`'s terms (the OpenSSL context builder's own enum).
    var openSSLTrust: HeraldTLS.TLSTrust {
        switch self {
        case .certificateAuthorities(let file): return .certificateAuthorities(file: file)
        case .system: return .system
        case .insecure: return .insecure
        }
    }
}
#endif
