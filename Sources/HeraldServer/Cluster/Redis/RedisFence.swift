import CLibUV

/// Freezes the writes of every client of one Redis server for a while (`CLIENT PAUSE ms
/// WRITE`), on a connection of its own: the engine's links may have writes in flight that
/// another node's pause already holds, and a fence sent behind them would wait with them.
/// Used on a primary that is being replaced (issue 31): no node's write lands there once any
/// node may write to the new one. Ends (calling `done` once) at the reply, at a failure, or
/// after its timeout (`timeoutMs` unless given).
///
/// Handle rules as `RedisLink`: only the loop's thread calls it; it closes its own handles,
/// and its owner keeps it until `isFinished` (it ends inside its link's callbacks, which
/// must not free the object they run on).
final class RedisFence {
    /// How long a fence may take to be confirmed before the caller goes on anyway (an old
    /// primary that does not answer takes no writes either).
    static let timeoutMs: UInt64 = 300

    private let link: RedisLink
    private let timer = UnsafeMutablePointer<uv_timer_t>.allocate(capacity: 1)
    private var done: ((String?) -> Void)?
    /// Whether it ended (the owner may let it go).
    var isFinished: Bool { done == nil }

    /// The fence: every client's writes wait `ms` (scripts included).
    static func pause(ms: Int) -> [String] { ["CLIENT", "PAUSE", String(ms), "WRITE"] }
    /// Lifts it (a failover that was aborted).
    static let unpause = ["CLIENT", "UNPAUSE"]

    /// Sends `command` (`pause` or `unpause`) to `address`; `done` gets nil once Redis
    /// confirmed it, or why it was not confirmed.
    init(_ address: RedisAddress, command: [String], credentials: RedisCredentials?, timeoutMs: UInt64 = RedisFence.timeoutMs,
         loop: UnsafeMutablePointer<uv_loop_t>, done: @escaping (String?) -> Void) {
        link = RedisLink(host: address.host, port: address.port, loop: loop)
        link.reconnects = false
        link.credentials = credentials
        self.done = done
        uv_timer_init(loop, timer)
        timer.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        link.onConnect = { [unowned self] in
            link.send(command.map { Array($0.utf8) }) { [unowned self] reply in finish(reply.failure) }
            link.flush()
        }
        link.onDisconnect = { [unowned self] reason in finish(reason) }
        uv_timer_start(timer, { timer in
            guard let data = timer?.pointee.data else { return }
            Unmanaged<RedisFence>.fromOpaque(data).takeUnretainedValue().finish("no answer in time")
        }, timeoutMs, 0)
        link.start()
    }

    private func finish(_ failure: String?) {
        guard let done else { return }
        self.done = nil
        uv_timer_stop(timer)
        uv_close(UnsafeMutableRawPointer(timer).assumingMemoryBound(to: uv_handle_t.self)) { $0?.deallocate() }
        link.close()
        done(failure)
    }
}
