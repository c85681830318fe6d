import CLibUV
import HeraldBroker
#if canImport(Glibc)
import Glibc
#endif

/// A connection whose `hello` the broker parked: reading stops, the bytes behind the `hello`
/// are held, the token is verified on the thread pool (`TokenVerification`), and back on
/// this loop the verdict is handed to the broker, the held lines are framed as if just read,
/// and reading resumes. The loop serves everyone else meanwhile.
extension Connection {
    /// Stops reading and queues the verification of a parked `hello`.
    func startVerification(_ pending: PendingVerification) {
        isHolding = true
        uv_read_stop(stream)
        let job = TokenVerification(pending, for: self)
        guard job.start(on: worker.loop) else {
            worker.server.logger.error("cannot queue a token verification; closing", ["client": "c" + String(session.id)])
            close()
            return
        }
    }

    /// Back on this loop with the verdict: the broker answers the `hello`, then the held bytes
    /// are framed (they may park another `hello`), then reading resumes.
    /// - Parameters:
    ///   - job: the finished verification.
    ///   - cancelled: libuv cancelled the work (it is never asked to); the connection closes.
    func verificationFinished(_ job: TokenVerification, cancelled: Bool) {
        guard !cancelled else {
            close()
            return
        }
        let now = worker.now
        let (closing, parked) = worker.shared.withLock { broker -> (Bool, PendingVerification?) in
            broker.completeVerification(of: session, accepted: job.accepted, now: now)
            guard !isClosing else { return (true, nil) }
            isHolding = false
            let rest = held
            held = []
            let consumed = rest.withUnsafeBytes { frameLines($0, broker: broker, now: now) }
            if consumed < rest.count { held = Array(rest[consumed...]) }
            return (session.closeAfterFlush, broker.takeVerification(for: session))
        }
        guard !isClosing, !closing else { return }
        if let parked {
            startVerification(parked)
        } else {
            startReading()
        }
    }

    /// The peer's IP address as text (`127.0.0.1`, `::1`), without the port: failed
    /// `hello`s are counted per address. Empty when the kernel cannot say.
    static func peerAddress(of tcp: UnsafeMutablePointer<uv_tcp_t>) -> [UInt8] {
        var storage = sockaddr_storage()
        var length = Int32(MemoryLayout<sockaddr_storage>.size)
        let status = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { uv_tcp_getpeername(tcp, $0, &length) }
        }
        guard status == 0 else { return [] }
        var text = [CChar](repeating: 0, count: 64)
        let isIPv6 = Int32(storage.ss_family) == AF_INET6
        let named: Int32 = withUnsafePointer(to: &storage) { pointer in
            if isIPv6 {
                return pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { uv_ip6_name($0, &text, text.count) }
            }
            return pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { uv_ip4_name($0, &text, text.count) }
        }
        guard named == 0 else { return [] }
        return text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
    }
}
