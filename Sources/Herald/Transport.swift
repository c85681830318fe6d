/// The byte stream to the daemon as the client's I/O thread uses it: one implementation per
/// platform, chosen by `PlatformTransport`.
///
/// Why one small protocol: everything above it (framing, frames, subscriptions, requests,
/// reconnect and restore, mirrors) is shared and tested on Linux, while the part that differs
/// per platform stays small enough to review by eye. Linux: `SocketTransport` (POSIX sockets,
/// `poll`, TLS through OpenSSL via `HeraldTLS`). Apple platforms: `NetworkTransport`
/// (Network.framework's `NWConnection`, TLS through `NWProtocolTLS`), which Linux cannot
/// compile. docs/client.md, "Platforms", lists which files each platform compiles.
///
/// Every member is called on the I/O thread only, except the `cutter` closure.
protocol Transport: AnyObject {
    /// Connects to `endpoint` within `timeout` seconds, the TLS handshake included.
    /// - Parameters:
    ///   - endpoint: TCP host and port, or a Unix socket path.
    ///   - tls: nil for plain; else the trust settings.
    ///   - timeout: seconds for the whole attempt.
    ///   - wake: a wake-up signalled while waiting aborts the attempt (the client is closing).
    ///   - pathNews: where the connection's own path news go (Apple: viability and
    ///     `betterPathUpdateHandler`), from any thread; a transport without them never calls it.
    /// - Returns: a connected transport.
    /// - Throws: `HeraldClientError.connectionFailed` naming the cause.
    static func connect(to endpoint: Endpoint, tls: TLSOptions?, timeout: Double,
                        wake: PlatformWake, pathNews: @escaping @Sendable (PathNews) -> Void) throws(HeraldClientError) -> Self

    /// Copies what has arrived into `buffer` without waiting.
    /// - Returns: bytes copied, 0 at end of stream, -1 when nothing is available yet.
    /// - Throws: `.connectionFailed` when the stream failed.
    func read(into buffer: inout [UInt8]) throws(HeraldClientError) -> Int

    /// Hands as much of `bytes[offset...]` to the stream as it takes now, without waiting.
    /// - Returns: bytes taken (0 while the stream is full).
    /// - Throws: `.connectionFailed` when the stream failed.
    func write(_ bytes: [UInt8], from offset: Int) throws(HeraldClientError) -> Int

    /// Whether bytes taken by `write` still wait inside the transport (sealed TLS records the
    /// kernel has not accepted, sends Network.framework has not processed).
    var hasPendingOutput: Bool { get }

    /// Pushes on bytes waiting inside the transport.
    /// - Throws: `.connectionFailed` when the stream failed.
    func flushPending() throws(HeraldClientError)

    /// Whether `read` has bytes without waiting (decrypted bytes `poll` cannot see).
    var hasBufferedInput: Bool { get }

    /// Waits up to `milliseconds` for input, for room to write when `writable`, or for `wake`.
    /// - Returns: true when input (or the end of the stream, or an error) is there to `read`.
    func wait(milliseconds: Int, writable: Bool, wake: PlatformWake) -> Bool

    /// Cuts the stream as a network failure would, from any thread (tests of reconnects).
    var cutter: @Sendable () -> Void { get }

    /// Closes the stream (after a best-effort TLS close_notify).
    func close()
}

/// How other threads wake the I/O thread (new frames to send, stop); one per client.
protocol TransportWake: Sendable {
    /// Creates an unsignalled wake-up.
    init()

    /// Makes the current (or next) wait return.
    func wake()

    /// Waits up to `milliseconds` or until woken, and consumes the wake-up.
    /// - Parameter milliseconds: the longest wait.
    func wait(milliseconds: Int)

    /// Forgets a wake-up already signalled.
    func drain()
}
