import CLibUV

/// Asks the sentinels where the primary is now, on the loop and without blocking it: a
/// short-lived `RedisLink` per sentinel, tried in the configured order, each given
/// `attemptTimeoutMs` to answer `SENTINEL get-master-addr-by-name`. Callers that ask while
/// a question is under way share its answer (both of the engine's links ask when Redis goes).
///
/// Handle rules as `RedisLink`: only the loop's thread calls it; `close` closes its timer.
final class SentinelResolver {
    /// The sentinels and the master's name.
    let settings: SentinelSettings
    /// How long one sentinel gets to connect and answer.
    static let attemptTimeoutMs: UInt64 = 1_000

    /// The loop the queries run on.
    private let loop: UnsafeMutablePointer<uv_loop_t>
    /// Bounds each sentinel's turn.
    private let timer = UnsafeMutablePointer<uv_timer_t>.allocate(capacity: 1)
    /// Who waits for the answer under way.
    private var waiters: [(RedisAddress?) -> Void] = []
    /// The sentinel being asked (index into `settings.addresses`) and its connection.
    private var attempt = 0
    private var query: RedisLink?
    /// The last closed query, kept until the next one ends: it is closed from inside its
    /// own callbacks, which must not free the object they run on.
    private var retired: RedisLink?
    /// Set by `close`: nothing is asked any more.
    private var isClosed = false

    /// Creates the resolver on `loop`.
    init(_ settings: SentinelSettings, loop: UnsafeMutablePointer<uv_loop_t>) {
        self.settings = settings
        self.loop = loop
        uv_timer_init(loop, timer)
        timer.pointee.data = Unmanaged.passUnretained(self).toOpaque()
    }

    /// Calls `done` with the primary's address once a sentinel names it, or with nil when
    /// none did.
    func resolve(_ done: @escaping (RedisAddress?) -> Void) {
        guard !isClosed else { return done(nil) }
        waiters.append(done)
        guard waiters.count == 1 else { return }
        attempt = 0
        ask()
    }

    /// Stops asking; waiting callers get nil.
    func close() {
        guard !isClosed else { return }
        finish(nil)
        isClosed = true
        uv_timer_stop(timer)
        uv_close(UnsafeMutableRawPointer(timer).assumingMemoryBound(to: uv_handle_t.self)) { $0?.deallocate() }
    }

    /// Asks sentinel `attempt`.
    private func ask() {
        guard attempt < settings.addresses.count else { return finish(nil) }
        let address = settings.addresses[attempt]
        let link = RedisLink(host: address.host, port: address.port, loop: loop)
        link.reconnects = false
        link.credentials = settings.credentials
        let asked = attempt
        link.onConnect = { [weak self, unowned link] in
            let command = ["SENTINEL", "get-master-addr-by-name"].map { Array($0.utf8) } + [Array(self?.settings.master.utf8 ?? "".utf8)]
            link.send(command) { [weak self] reply in
                guard let self, attempt == asked, query != nil else { return }
                if let primary = SentinelLookup.primaryAddress(in: reply) { return finish(primary) }
                next()
            }
        }
        link.onDisconnect = { [weak self] _ in
            guard let self, attempt == asked, query != nil else { return }
            next()
        }
        query = link
        uv_timer_start(timer, { timer in
            guard let data = timer?.pointee.data else { return }
            Unmanaged<SentinelResolver>.fromOpaque(data).takeUnretainedValue().next()
        }, Self.attemptTimeoutMs, 0)
        link.start()
    }

    /// The current sentinel failed or took too long: the next one.
    private func next() {
        endQuery()
        attempt += 1
        ask()
    }

    /// Ends the question with an answer for every waiting caller.
    private func finish(_ address: RedisAddress?) {
        endQuery()
        attempt = settings.addresses.count
        let waiting = waiters
        waiters = []
        for done in waiting { done(address) }
    }

    /// Stops the turn's timer and closes its connection.
    private func endQuery() {
        uv_timer_stop(timer)
        guard let link = query else { return }
        query = nil
        retired = link
        link.close()
    }
}
