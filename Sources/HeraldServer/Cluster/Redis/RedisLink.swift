import CHiredis
import CLibUV

/// One asynchronous Redis connection on a libuv loop: hiredis with its libuv adapter, so
/// replies and pub/sub messages arrive as callbacks on that loop (docs/cluster.md).
///
/// Commands written during one loop pass go out together (hiredis buffers them): `flush`
/// writes them at once, and the adapter writes what is left before the loop next polls
/// (`shim.h`), so a pass's commands cost one write and no extra loop pass. When the connection drops,
/// every pending command is answered `.disconnected`, `onDisconnect` runs, and the link
/// reconnects by itself with backoff (100 ms doubling to 5 s) until `close`.
///
/// Under Sentinel (`resolve` set) each reconnect first asks where the primary is now, the
/// backoff stops at 1 s (a failover is followed within a second of the sentinels knowing),
/// a new connection counts only once `ROLE` says `master`, and a `READONLY` error reply
/// (the primary was turned into a replica) drops the connection so the next one asks again.
///
/// Handle rules (docs/architecture.md, "libuv handle rules"): only the loop's thread calls
/// it; the reconnect timer is closed in `close`, the adapter's poll handle by hiredis when
/// the context is freed.
final class RedisLink {
    /// Where it connects (under Sentinel: the primary last named).
    private(set) var host: String
    /// The TCP port.
    private(set) var port: Int
    /// Asks where to connect before each reconnect, calling back with the address (nil:
    /// nobody knew; the link waits out its backoff and asks again). Set for Sentinel.
    var resolve: ((@escaping (RedisAddress?) -> Void) -> Void)? {
        didSet { maxBackoffMs = resolve == nil ? RedisLink.maxBackoffMs : RedisLink.maxResolvingBackoffMs }
    }
    /// Sent as `AUTH` first on every connection (nil: Redis needs none).
    var credentials: RedisCredentials?
    /// Whether to reconnect after a failure (a one-shot sentinel query does not).
    var reconnects = true
    /// Runs on every (re)connect, before any queued command is answered.
    var onConnect: (() -> Void)?
    /// Runs when an established connection or a connect attempt fails, with the reason.
    var onDisconnect: ((String) -> Void)?
    /// Called with the text of every error reply, before the command's own handler.
    var onErrorReply: ((String) -> Void)?
    /// Whether the connection is up.
    private(set) var isConnected = false
    /// Commands sent and not answered yet (the monitor's pending cluster ops).
    private(set) var inFlight = 0
    /// The bytes of those commands as sent (RESP): with `inFlight`, what the engine bounds
    /// for backpressure (`ClusterEngine+Backpressure`).
    private(set) var outstandingBytes = 0
    /// Whether a `whenDrained` action waits.
    var isWatchingDrain: Bool { drainWatch != nil }
    /// Bytes of every command sent since the link was made (how fast this node feeds Redis).
    private(set) var sentBytes = 0

    private let loop: UnsafeMutablePointer<uv_loop_t>
    private var context: UnsafeMutablePointer<redisAsyncContext>?
    private let timer = UnsafeMutablePointer<uv_timer_t>.allocate(capacity: 1)
    private var backoffMs = RedisLink.firstBackoffMs
    /// The backoff's ceiling (lower under Sentinel).
    private var maxBackoffMs = RedisLink.maxBackoffMs
    /// A resolve under way (its answer is ignored when the link closed meanwhile).
    private var isResolving = false
    private var isClosed = false
    /// Handlers hiredis calls more than once (subscriptions), alive as long as the link.
    private var persistent: [RedisReplyHandler] = []
    /// What runs once the outstanding commands are at or below a mark (`whenDrained`).
    private var drainWatch: (ops: Int, bytes: Int, action: () -> Void)?

    /// The first reconnect's delay.
    static let firstBackoffMs = 100
    /// The longest reconnect delay.
    static let maxBackoffMs = 5_000
    /// The longest reconnect delay under Sentinel.
    static let maxResolvingBackoffMs = 1_000

    /// Creates the link; `start` connects.
    init(host: String, port: Int, loop: UnsafeMutablePointer<uv_loop_t>) {
        self.host = host
        self.port = port
        self.loop = loop
        uv_timer_init(loop, timer)
        timer.pointee.data = Unmanaged.passUnretained(self).toOpaque()
    }

    /// Starts connecting (the outcome arrives through `onConnect`/`onDisconnect`).
    func start() {
        connectNow()
    }

    /// Sends one command; `handler` gets its reply, or `.disconnected` when the connection
    /// goes first. - Returns: false (and does not call `handler`) when there is no connection.
    @discardableResult
    func send(_ arguments: [[UInt8]], _ handler: @escaping (RedisReply) -> Void) -> Bool {
        guard let context, isConnected else { return false }
        let bytes = RedisLink.encodedSize(arguments)
        let box = Unmanaged.passRetained(RedisReplyHandler { [weak self] reply in
            self?.answered(bytes: bytes)
            if let self, case .error(let text) = reply {
                if self.resolve != nil, text.hasPrefix("READONLY") { self.drop() }
                self.onErrorReply?(text)
            }
            handler(reply)
        }).toOpaque()
        let status = RedisLink.withTerminated(arguments) { command, count in
            redisAsyncFormattedCommand(context, redisLinkReply, box, command, count)
        }
        guard status == REDIS_OK else {
            Unmanaged<RedisReplyHandler>.fromOpaque(box).release()
            return false
        }
        inFlight += 1
        outstandingBytes += bytes
        sentBytes &+= bytes
        return true
    }

    /// Writes the commands sent so far now, in this loop pass, rather than when the adapter
    /// next runs (before the loop polls); a no-op inside this link's own reply callbacks,
    /// where writing is not safe (`herald_redis_flush`).
    func flush() {
        guard let context else { return }
        herald_redis_flush(context)
    }

    /// Runs `action` once, as soon as at most `ops` commands of at most `bytes` bytes are
    /// outstanding (at once, when that holds now). A lost connection answers every pending
    /// command, so the action runs then at the latest. A later call replaces an earlier one.
    func whenDrained(ops: Int, bytes: Int, _ action: @escaping () -> Void) {
        drainWatch = (ops, bytes, action)
        checkDrained()
    }

    /// A command was answered (or failed with the connection): it is no longer outstanding.
    private func answered(bytes: Int) {
        inFlight -= 1
        outstandingBytes -= bytes
        checkDrained()
    }

    private func checkDrained() {
        guard let watch = drainWatch, inFlight <= watch.ops, outstandingBytes <= watch.bytes else { return }
        drainWatch = nil
        watch.action()
    }

    /// Subscribes to pub/sub channels on this connection (which then takes no other
    /// commands); `handler` gets every `["message", channel, payload]` and the confirmations.
    @discardableResult
    func subscribe(_ channels: [[UInt8]], _ handler: @escaping (RedisReply) -> Void) -> Bool {
        guard let context, isConnected else { return false }
        let box = RedisReplyHandler(handler)
        persistent.append(box)
        let status = RedisLink.withTerminated([Array("SUBSCRIBE".utf8)] + channels) { command, count in
            redisAsyncFormattedCommand(context, redisLinkMessage, Unmanaged.passUnretained(box).toOpaque(), command, count)
        }
        return status == REDIS_OK
    }

    /// Calls `body` with the command encoded as RESP (`RESPCommand.encode`'s bytes) and its
    /// length, a NUL byte after its end: hiredis 0.14 scans a formatted command with `strchr`
    /// to spot (un)subscribe commands, walking past the last argument of a SUBSCRIBE into
    /// whatever follows, so without the NUL it read beyond the buffer and failed an assertion
    /// (`async.c:590: nextArgument`), now and then.
    ///
    /// One pass into one buffer of the exact size (headers written digit by digit): a
    /// `publish` call carries three arguments per event, and encoding them through `String`s
    /// and then copying the whole command again to add the NUL was a fifth of a publishing
    /// node's instructions (callgrind, docs/benchmarks.md "Cluster mode").
    static func withTerminated(_ arguments: [[UInt8]], _ body: (UnsafePointer<CChar>?, Int) -> Int32) -> Int32 {
        let total = encodedSize(arguments) + 1
        let command = [UInt8](unsafeUninitializedCapacity: total) { buffer, initialized in
            guard let base = buffer.baseAddress else { return }
            var at = 0
            func header(_ kind: UInt8, _ value: Int) {
                base[at] = kind
                at += 1
                let count = digits(value)
                var rest = value
                for position in stride(from: at + count - 1, through: at, by: -1) {
                    base[position] = UInt8(truncatingIfNeeded: 48 + rest % 10)
                    rest /= 10
                }
                at += count
                base[at] = 13
                base[at + 1] = 10
                at += 2
            }
            header(UInt8(ascii: "*"), arguments.count)
            for argument in arguments {
                header(UInt8(ascii: "$"), argument.count)
                argument.withUnsafeBufferPointer { bytes in
                    if let source = bytes.baseAddress, bytes.count > 0 {
                        (base + at).update(from: source, count: bytes.count)
                    }
                }
                at += argument.count
                base[at] = 13
                base[at + 1] = 10
                at += 2
            }
            base[at] = 0
            initialized = at + 1
        }
        return command.withUnsafeBytes { bytes in
            body(bytes.baseAddress?.assumingMemoryBound(to: CChar.self), command.count - 1)
        }
    }

    /// The length of the command as RESP (`*N` then `$LEN` and the bytes of each argument).
    static func encodedSize(_ arguments: [[UInt8]]) -> Int {
        var total = 1 + digits(arguments.count) + 2
        for argument in arguments { total += 1 + digits(argument.count) + 2 + argument.count + 2 }
        return total
    }

    /// Decimal digits of a count (at least 1).
    private static func digits(_ value: Int) -> Int {
        var count = 1
        var rest = value
        while rest >= 10 {
            rest /= 10
            count += 1
        }
        return count
    }

    /// Cuts the connection now, as if it had been lost (Redis stopped answering, e.g. a
    /// partition that keeps the TCP connection up): pending commands are answered
    /// `.disconnected`, `onDisconnect` runs, and the link reconnects with backoff (asking
    /// the sentinels first, under Sentinel).
    func cut(_ reason: String) {
        guard !isClosed, let context else { return }
        self.context = nil
        isConnected = false
        // Pending callbacks run inside with no reply; they find the link already without a
        // context, so only this call reports the loss.
        redisAsyncFree(context)
        persistent.removeAll()
        retry(reason)
    }

    /// Ends the connection (it reconnects, asking `resolve` first): commands already sent
    /// still get their replies, new ones are refused until the next connection.
    func drop() {
        guard let context, !isClosed else { return }
        isConnected = false
        redisAsyncDisconnect(context)
    }

    /// Disconnects for good: pending commands are answered `.disconnected`; no reconnect.
    func close() {
        guard !isClosed else { return }
        isClosed = true
        uv_timer_stop(timer)
        uv_close(UnsafeMutableRawPointer(timer).assumingMemoryBound(to: uv_handle_t.self)) { handle in
            handle?.deallocate()
        }
        if let context {
            self.context = nil
            isConnected = false
            context.pointee.data = nil
            redisAsyncFree(context)
        }
    }

    /// The backoff ended: asks where to go (under Sentinel), then connects.
    private func reconnect() {
        guard let resolve else { return connectNow() }
        guard !isResolving else { return }
        isResolving = true
        resolve { [weak self] address in
            guard let self else { return }
            isResolving = false
            guard !isClosed else { return }
            guard let address else { return retry("no sentinel named a primary") }
            host = address.host
            port = address.port
            connectNow()
        }
    }

    private func connectNow() {
        guard !isClosed, context == nil else { return }
        guard let made = redisAsyncConnect(host, Int32(port)) else { return retry("out of memory") }
        if made.pointee.err != 0 {
            let reason = made.pointee.errstr.map { String(cString: $0) } ?? "connect failed"
            redisAsyncFree(made)
            return retry(reason)
        }
        guard herald_redis_attach(made, loop) == REDIS_OK else {
            redisAsyncFree(made)
            return retry("could not attach to the loop")
        }
        made.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        redisAsyncSetConnectCallback(made, redisLinkConnected)
        redisAsyncSetDisconnectCallback(made, redisLinkDisconnected)
        context = made
    }

    /// hiredis: the connect attempt ended.
    fileprivate func connected(ok: Bool, reason: String) {
        guard ok else {
            context = nil  // hiredis frees a context whose connect failed
            return retry(reason)
        }
        isConnected = true
        authenticate { [weak self] in self?.checkRole() }
    }

    /// Sends `AUTH` first when there are credentials; a refusal (`WRONGPASS`, or
    /// `ERR … no password is set`) ends the connection with Redis's words, never the
    /// password, and the link tries again with backoff (the password may be fixed in Redis).
    private func authenticate(_ then: @escaping () -> Void) {
        guard let credentials else { return then() }
        send(credentials.authArguments) { [weak self] reply in
            guard let self, isConnected else { return }
            if let failure = reply.failure { return cut("Redis refused the credentials (\(credentials)): " + failure) }
            then()
        }
    }

    /// Connected (and authenticated): a link that follows Sentinel checks that it reached a
    /// primary first.
    private func checkRole() {
        guard resolve != nil else {
            backoffMs = RedisLink.firstBackoffMs
            onConnect?()
            return
        }
        // Sentinel named it, but it may have been demoted since: only a primary will do.
        send([Array("ROLE".utf8)]) { [weak self] reply in
            guard let self, isConnected else { return }
            guard SentinelLookup.isPrimary(reply) else { return drop() }
            backoffMs = RedisLink.firstBackoffMs
            onConnect?()
        }
    }

    /// hiredis: an established connection ended (it frees the context afterwards).
    fileprivate func disconnected(reason: String) {
        guard context != nil else { return }  // already noticed through a pending reply
        context = nil
        isConnected = false
        persistent.removeAll()
        retry(reason)
    }

    /// hiredis answered a pending command with no reply: it is freeing the context (the only
    /// place it does that). Noticed here as well as in the disconnect callback, which
    /// hiredis 0.14 was seen to skip now and then after a peer reset, leaving the link
    /// believing it was connected to a context already freed.
    fileprivate func freeing() {
        guard context != nil else { return }
        context = nil
        isConnected = false
        persistent.removeAll()
        retry("connection to Redis lost")
    }

    private func retry(_ reason: String) {
        onDisconnect?(reason)
        guard !isClosed, reconnects else { return }
        uv_timer_start(timer, { timer in
            guard let data = timer?.pointee.data else { return }
            Unmanaged<RedisLink>.fromOpaque(data).takeUnretainedValue().reconnect()
        }, UInt64(backoffMs), 0)
        backoffMs = min(backoffMs * 2, maxBackoffMs)
    }
}

/// A Swift closure hiredis carries as a command's private data.
final class RedisReplyHandler {
    let handle: (RedisReply) -> Void

    init(_ handle: @escaping (RedisReply) -> Void) {
        self.handle = handle
    }
}

/// hiredis reply callback for one-shot commands: called exactly once per command.
private func redisLinkReply(_ context: UnsafeMutablePointer<redisAsyncContext>?, _ reply: UnsafeMutableRawPointer?,
                            _ privdata: UnsafeMutableRawPointer?) {
    guard let privdata else { return }
    let handler = Unmanaged<RedisReplyHandler>.fromOpaque(privdata).takeRetainedValue()
    guard let reply else {
        handler.handle(.disconnected)
        if let data = context?.pointee.data { Unmanaged<RedisLink>.fromOpaque(data).takeUnretainedValue().freeing() }
        return
    }
    handler.handle(RedisReply(UnsafePointer(reply.assumingMemoryBound(to: redisReply.self))))
}

/// hiredis callback for subscriptions: called for every message; the link owns the handler.
private func redisLinkMessage(_ context: UnsafeMutablePointer<redisAsyncContext>?, _ reply: UnsafeMutableRawPointer?,
                              _ privdata: UnsafeMutableRawPointer?) {
    guard let privdata, let reply else { return }
    let handler = Unmanaged<RedisReplyHandler>.fromOpaque(privdata).takeUnretainedValue()
    handler.handle(RedisReply(UnsafePointer(reply.assumingMemoryBound(to: redisReply.self))))
}

private func redisLinkConnected(_ context: UnsafePointer<redisAsyncContext>?, _ status: Int32) {
    guard let context, let data = context.pointee.data else { return }
    let reason = status == REDIS_OK ? "" : context.pointee.errstr.map { String(cString: $0) } ?? "connect failed"
    Unmanaged<RedisLink>.fromOpaque(data).takeUnretainedValue().connected(ok: status == REDIS_OK, reason: reason)
}

private func redisLinkDisconnected(_ context: UnsafePointer<redisAsyncContext>?, _ status: Int32) {
    guard let context, let data = context.pointee.data else { return }
    let reason = status == REDIS_OK ? "disconnected" : context.pointee.errstr.map { String(cString: $0) } ?? "connection lost"
    Unmanaged<RedisLink>.fromOpaque(data).takeUnretainedValue().disconnected(reason: reason)
}
