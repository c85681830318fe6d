import CLibUV

/// How far behind the slowest live node is in reading its events: the output Redis holds for
/// the nodes' pub/sub connections (`omem` in `CLIENT LIST TYPE pubsub`), asked on the control
/// link every 100 ms while this node feeds Redis fast (docs/cluster.md, "Backpressure and the
/// control link"). A node that publishes little asks nothing: it cannot fill anyone's
/// buffer, and the nodes that do ask.
///
/// Why: bounding the command link slows publishers to what Redis runs, but a node slower at
/// taking its events than Redis is at making them lets Redis's output buffer for it grow, and
/// past `client-output-buffer-limit pubsub` (32 MB by default) Redis closes that connection:
/// every event in it is lost to that node (seen in `ClusterFloodServingTests`, a debug build's
/// subscriber node behind two publishers). Redis gives pub/sub no flow control, so every
/// publishing node watches the figure and counts a backlog over `max_outstanding_bytes` as
/// congestion, which pauses its publishers like a full command link does.
///
/// Each node names its pub/sub connection (`CLIENT SETNAME`, `name(prefix:node:)`) so that
/// the listing tells which entries are this cluster's and which node each is; only nodes the
/// engine counts as live are taken, so a stopped node holds publishers only until it is
/// declared down. A server that refuses the listing (an older or Redis-like server) turns the
/// probe off: the backlog then counts as 0, as before it existed.
///
/// Handle rules: the timer is initialised here, on the engine's loop, and closed in `close`.
final class PubSubBacklog {
    /// The largest backlog of a live node at the last answer, in bytes (0: none, unknown, or
    /// the probe is off).
    private(set) var largest = 0
    /// Whether to go on asking, given the bytes this node sent since the last tick (the
    /// engine: fast enough to matter, or publishers are paused).
    var isWanted: (_ sentSinceLastTick: Int) -> Bool = { _ in false }
    /// The bytes this node has sent on its command link so far (`RedisLink.sentBytes`).
    var sentBytes: () -> Int = { 0 }
    /// Whether a node index counts (the engine's live nodes).
    var isLive: (Int) -> Bool = { _ in true }
    /// Runs after every answer or failure (the engine looks at its bounds again).
    var onChange: () -> Void = {}
    /// Runs once if the server refuses the listing (the probe is then off), with its error.
    var onOff: (String) -> Void = { _ in }

    private let link: RedisLink
    private let namePrefix: [UInt8]
    private let timer = UnsafeMutablePointer<uv_timer_t>.allocate(capacity: 1)
    private var isAsking = false
    private var sentAtLastTick = 0
    private var isTicking = false
    private var isOff = false
    private var isClosed = false

    /// How often it asks while wanted, in ms.
    static let periodMs: UInt64 = 100

    /// A probe asking on `link` (the control link) for the connections named with `prefix`.
    init(link: RedisLink, prefix: String, loop: UnsafeMutablePointer<uv_loop_t>) {
        self.link = link
        namePrefix = PubSubBacklog.namePrefix(prefix)
        uv_timer_init(loop, timer)
        timer.pointee.data = Unmanaged.passUnretained(self).toOpaque()
    }

    /// The name node `node` gives its pub/sub connection: the key prefix (bytes Redis does
    /// not take in a name replaced by `_`), `n`, the index.
    static func name(prefix: String, node: Int) -> [UInt8] {
        namePrefix(prefix) + Array(String(node).utf8)
    }

    /// What every node's name starts with: the sanitised prefix and `n`.
    static func namePrefix(_ prefix: String) -> [UInt8] {
        sanitized(prefix) + [UInt8(ascii: "n")]
    }

    private static func sanitized(_ prefix: String) -> [UInt8] {
        prefix.utf8.map { $0 > 0x20 && $0 < 0x7F ? $0 : UInt8(ascii: "_") }
    }

    /// Starts asking every `periodMs` unless it does already (it stops by itself once no
    /// longer wanted).
    func keepAsking() {
        guard !isTicking, !isClosed, !isOff else { return }
        isTicking = true
        uv_timer_start(timer, { timer in
            guard let data = timer?.pointee.data else { return }
            Unmanaged<PubSubBacklog>.fromOpaque(data).takeUnretainedValue().tick()
        }, PubSubBacklog.periodMs, PubSubBacklog.periodMs)
    }

    /// Stops the timer for good (the engine is closing).
    func close() {
        guard !isClosed else { return }
        isClosed = true
        uv_timer_stop(timer)
        uv_close(UnsafeMutableRawPointer(timer).assumingMemoryBound(to: uv_handle_t.self)) { $0?.deallocate() }
    }

    private func tick() {
        let total = sentBytes()
        defer { sentAtLastTick = total }
        guard isWanted(total &- sentAtLastTick) else {
            uv_timer_stop(timer)
            isTicking = false
            settle(0)
            return
        }
        guard !isAsking else { return }
        isAsking = true
        let asked = link.send(["CLIENT", "LIST", "TYPE", "pubsub"].map { Array($0.utf8) }) { [weak self] reply in
            self?.answered(reply)
        }
        // No connection (Redis away): nothing is known to be behind.
        if !asked { answered(.disconnected) }
        link.flush()
    }

    private func answered(_ reply: RedisReply) {
        isAsking = false
        guard let listing = reply.bytes else {
            // A server still loading its data, or busy with a script, answers later ones.
            if case .error(let text) = reply, !text.hasPrefix("LOADING"), !text.hasPrefix("BUSY") {
                isOff = true
                uv_timer_stop(timer)
                isTicking = false
                onOff(text)
            }
            return settle(0)
        }
        settle(Self.largestBacklog(in: listing, namePrefix: namePrefix, isLive: isLive))
    }

    private func settle(_ value: Int) {
        largest = value
        onChange()
    }

    /// The largest `omem` among `listing`'s lines (a `CLIENT LIST` answer) whose name is
    /// `namePrefix` followed by the index of a node `isLive` takes.
    static func largestBacklog(in listing: [UInt8], namePrefix: [UInt8], isLive: (Int) -> Bool) -> Int {
        var largest = 0
        for line in listing.split(separator: 10) {
            var node: Int?
            var omem = 0
            for field in line.split(separator: 32) {
                if field.starts(with: Array("name=".utf8)) {
                    node = index(inName: field.dropFirst(5), namePrefix: namePrefix)
                } else if field.starts(with: Array("omem=".utf8)) {
                    omem = Int(String(decoding: field.dropFirst(5), as: UTF8.self)) ?? 0
                }
            }
            if let node, isLive(node) { largest = max(largest, omem) }
        }
        return largest
    }

    /// The node index in a connection name of this cluster, or nil.
    private static func index(inName name: ArraySlice<UInt8>, namePrefix: [UInt8]) -> Int? {
        guard name.starts(with: namePrefix) else { return nil }
        let digits = name.dropFirst(namePrefix.count)
        guard !digits.isEmpty, digits.count < 10, digits.allSatisfy({ $0 >= 48 && $0 <= 57 }) else { return nil }
        return Int(String(decoding: digits, as: UTF8.self))
    }
}
