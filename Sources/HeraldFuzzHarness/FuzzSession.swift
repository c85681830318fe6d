import HeraldBroker
import HeraldWire

/// Drives one broker the way the server does, for one fuzz input, and checks what it says.
///
/// Four connection slots stand in for four clients; directives in the stream pick the slot,
/// advance the clock, hang up, pause reading (so `max_pending` and the overflow policies are
/// reached), acknowledge journal records and shut down.
struct FuzzSession {
    /// Connection slots a directive can pick.
    static let slotCount = 4

    let broker: Broker
    /// Violated invariants, in the order found.
    var violations: [String] = []
    /// Every frame a client was handed, `(connection id, frame)`, when the caller asked.
    var recorded: [(ConnectionID, [UInt8])]?
    /// The connection in each slot; nil after a hang-up until the slot's next line, so a
    /// refused connection is not retried in a loop.
    private var slots: [Session?] = []
    /// Slots whose client has stopped reading.
    private var paused: [Bool]
    private var current = 0
    private var now = 0
    private var nextID = 1
    private var spare: [UInt8] = []
    private let validator = RequestScanner(maxDepth: 80)
    private var journalPosition = 0
    /// The state a restart would rebuild: every journal record, encoded and decoded as the
    /// persistence layer does, applied in order. It must end equal to the broker's store.
    private let replica = StateStore()
    private var encoded: [UInt8] = []
    /// The last reply token seen in any frame (directive 0x07 answers it).
    private var lastToken: [UInt8]?

    /// The broker's tunables for an input: small limits, so every limit is reachable within
    /// a few kilobytes of input; `flags` (the input's first byte) picks variants.
    static func config(flags: UInt8) -> BrokerConfig {
        var config = BrokerConfig(
            maxLine: 1024, maxErrors: 8, heartbeatMs: flags & 0x01 == 0 ? 5_000 : 0,
            maxPending: flags & 0x02 == 0 ? 16_384 : 2_048,
            overflow: flags & 0x04 == 0 ? .disconnect : .drop,
            version: "0.0.0-fuzz", epoch: "fuzz")
        config.history = flags & 0x08 == 0 ? 4 : 0
        config.historyBytes = 2_048
        config.maxConnections = flags & 0x10 == 0 ? slotCount + 1 : slotCount - 1
        config.maxSubs = 8
        config.maxChannels = 24
        config.maxRequests = 3
        config.maxSignals = 3
        config.stateLimits = StateLimits(maxValueBytes: 256, maxListLength: 6, maxRetainedBytes: 2_048)
        config.journaling = flags & 0x20 != 0
        if flags & 0x40 != 0 { config.auth = authSettings }
        return config
    }

    /// Flag 0x40: auth on, with one unrestricted user (token `a`) and one whose permissions
    /// allow and deny overlapping patterns (token `b`), so the gate, the permission checks and
    /// the wildcard coverage rule all see fuzzed input.
    static var authSettings: AuthSettings {
        let rule = { (allow: [String]?, deny: [String]) in
            ChannelRule(allow: allow.map { $0.map { Array($0.utf8) } }, deny: deny.map { Array($0.utf8) })
        }
        return AuthSettings(users: [
            AuthUser(name: "a", credential: TokenCredential(plainToken: Array("a".utf8)), isPlainToken: true),
            AuthUser(name: "b", credential: TokenCredential(plainToken: Array("b".utf8)), isPlainToken: true,
                     publish: rule(["x.>", "y.*", "$sys.>"], ["x.z", "x.*.q"]),
                     subscribe: rule(["x.>", "$sys.>"], ["x.*.q"])),
        ], timeoutMs: 500, maxLine: 256)
    }

    init(flags: UInt8) {
        var word: UInt64 = 0x9E37_79B9_7F4A_7C15
        broker = Broker(
            config: Self.config(flags: flags), now: 0, wallClock: { 1_700_000_000_000 },
            randomWord: {
                // splitmix64: repeatable tokens, so a crash replays exactly.
                word &+= 0x9E37_79B9_7F4A_7C15
                var z = word
                z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
                z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
                return z ^ (z >> 31)
            })
        paused = Array(repeating: false, count: Self.slotCount)
        for _ in 0..<Self.slotCount { slots.append(connect()) }
        drain()
    }

    /// The current slot's connection, connecting one when the slot is empty.
    private mutating func connected() -> Session {
        if let session = slots[current] { return session }
        let session = connect()
        slots[current] = session
        drain()
        return session
    }

    private mutating func connect() -> Session {
        let session = broker.connect(id: nextID, now: now)
        nextID += 1
        return session
    }

    /// Handles one framed line: a directive or a request for the current slot.
    mutating func handle(_ framed: FramedLine) {
        switch framed {
        case .tooLong(let length):
            let session = connected()
            broker.heard(from: session, now: now)
            broker.lineTooLong(from: session, length: length, now: now)
        case .line(let line):
            if line[0] >= 0x01 && line[0] <= 0x07 {
                directive(line)
            } else {
                let session = connected()
                broker.heard(from: session, now: now)
                broker.handleLine(line, from: session, now: now)
            }
        }
        drain()
        checkPendingBound()
    }

    /// Slack over `max_pending` for the one frame that crossed it: the largest frame these
    /// limits allow (a `subs` list of 8 subscriptions with 1 KiB `args` each) is under it.
    static let pendingSlack = 32 * 1024

    /// A client that stops reading must cost at most `max_pending` plus one frame, under
    /// either overflow policy: that bound is what protects the daemon's memory.
    private mutating func checkPendingBound() {
        let bound = broker.config.maxPending + Self.pendingSlack
        for case let session? in slots where session.pendingBytes > bound {
            violations.append("limit: c\(session.id) holds \(session.pendingBytes) outbound bytes, past max_pending + slack \(bound)")
        }
    }

    private mutating func directive(_ line: UnsafeRawBufferPointer) {
        let a = line.count > 1 ? Int(line[1]) : 0
        let b = line.count > 2 ? Int(line[2]) : 0
        switch line[0] {
        case 0x01:
            current = a % Self.slotCount
        case 0x02:
            // Up to about 11 minutes in 10 ms steps: past every request and signal timeout.
            now += (a | b << 8) * 10
            for session in broker.tick(now: now) { hangUp(session) }
        case 0x03:
            if let session = slots[current] { hangUp(session) }
        case 0x04:
            paused[current].toggle()
        case 0x05:
            acknowledgeRecords()
        case 0x06:
            broker.shutdown(now: now)
        default:
            replyToLastToken(ridFlag: a)
        }
    }

    /// Answers the last request token any slot was sent: tokens are 128 random bits, which
    /// the fuzzer cannot guess, so without this the reply path would never be reached.
    private mutating func replyToLastToken(ridFlag: Int) {
        guard let token = lastToken else { return }
        var request = Array(#"{"op":"reply","to":""#.utf8)
        request += token
        request += Array((ridFlag & 1 == 0 ? #"","data":1}"# : #"","rid":7}"#).utf8)
        let session = connected()
        broker.heard(from: session, now: now)
        request.withUnsafeBytes { broker.handleLine($0, from: session, now: now) }
    }

    /// Remembers the last `"reply":"TOKEN"` in a frame a slot was sent.
    private mutating func noteToken(in frame: UnsafeRawBufferPointer) {
        let key = Self.replyKey
        guard frame.count > key.count else { return }
        for start in 0..<(frame.count - key.count) where frame[start] == key[0] {
            guard UnsafeRawBufferPointer(rebasing: frame[start..<(start + key.count)]).elementsEqual(key) else { continue }
            let tokenStart = start + key.count
            guard let end = frame[tokenStart...].firstIndex(of: UInt8(ascii: "\"")) else { return }
            lastToken = Array(frame[tokenStart..<end])
            return
        }
    }

    private static let replyKey = Array(#""reply":""#.utf8)

    /// Plays the persistence writer: everything drained so far becomes durable at once.
    private mutating func acknowledgeRecords() {
        var upTo: Int?
        broker.drainRecords { records, last in
            if last < journalPosition + records.count {
                violations.append("journal: positions went back (\(journalPosition) + \(records.count) records, last \(last))")
            }
            journalPosition = last
            upTo = last
            for record in records { replay(record) }
        }
        if let upTo { broker.durable(upTo: upTo) }
    }

    /// Checks that a record survives the journal's encoding and applies to the replica.
    private mutating func replay(_ record: StateRecord) {
        encoded.removeAll(keepingCapacity: true)
        record.encode(into: &encoded)
        let decoded = encoded.withUnsafeBytes { StateRecord.decode($0) }
        guard let decoded, decoded == record else {
            violations.append("journal: record on \(String(decoding: record.channel, as: UTF8.self)) does not decode to itself")
            return
        }
        let outcome = replica.apply(decoded)
        if outcome != .applied {
            violations.append("journal: replaying rev \(record.rev) of \(String(decoding: record.channel, as: UTF8.self)) gave \(outcome)")
        }
    }

    /// Closes a connection as the server does when the peer goes or a close is overdue,
    /// and puts a new connection in its slot.
    private mutating func hangUp(_ session: Session) {
        guard let slot = slots.firstIndex(where: { $0 === session }) else { return }
        take(session)
        broker.disconnect(session)
        slots[slot] = nil
        paused[slot] = false
    }

    /// Plays the server's flush: reading slots take their bytes, closes happen once flushed.
    private mutating func drain() {
        var closing: [Session] = []
        broker.drainDirty { session in
            // A session written to just before it disconnected stays listed until this drain;
            // the server skips ids it no longer has, and so does this.
            guard let slot = slots.firstIndex(where: { $0 === session }) else { return }
            if !paused[slot] { take(session) }
            if session.closeAfterFlush && session.outbound.isEmpty { closing.append(session) }
        }
        for session in closing { hangUp(session) }
        if !closing.isEmpty { drain() }
    }

    /// Takes a session's queued bytes and checks each frame in them.
    private mutating func take(_ session: Session) {
        session.takeOutbound(into: &spare)
        guard !spare.isEmpty else { return }
        if spare.last != UInt8(ascii: "\n") {
            violations.append("frames: c\(session.id) was handed bytes not ending in a newline")
        }
        let outbound = spare
        outbound.withUnsafeBytes { bytes in
            var start = 0
            for end in bytes.indices where bytes[end] == UInt8(ascii: "\n") {
                check(frame: UnsafeRawBufferPointer(rebasing: bytes[start..<end]), to: session)
                start = end + 1
            }
        }
    }

    private mutating func check(frame: UnsafeRawBufferPointer, to session: Session) {
        noteToken(in: frame)
        recorded?.append((session.id, Array(frame)))
        do throws(HeraldError) {
            try validator.scan(frame)
        } catch {
            violations.append("frames: c\(session.id) got invalid JSON (\(error.message)): "
                + String(decoding: frame.prefix(300), as: UTF8.self))
        }
    }

    /// Ends the run: every connection goes, then nothing any of them owned may be left.
    mutating func finish() {
        acknowledgeRecords()
        drain()
        if broker.config.journaling && replica.snapshot() != broker.store.snapshot() {
            violations.append("journal: replaying the records does not rebuild the store (\(replica.snapshot().count) vs \(broker.store.snapshot().count) channels)")
        }
        for case let session? in slots { take(session); broker.disconnect(session) }
        slots.removeAll()
        drain()
        if broker.connectionCount != 0 {
            violations.append("leak: \(broker.connectionCount) sessions left after every connection closed")
        }
        let probe = connect()
        slots = [probe]
        paused = [true]
        // The hello authenticates the probe when auth is on (it also ends its auth deadline,
        // which `timers` would count); without auth it only names the connection.
        for line in [#"{"op":"hello","token":"a"}"#, #"{"op":"stats"}"#] {
            var request = Array(line.utf8)
            request.withUnsafeMutableBytes { broker.handleLine(UnsafeRawBufferPointer($0), from: probe, now: now) }
        }
        drain()
        probe.takeOutbound(into: &spare)
        let lines = spare.split(separator: UInt8(ascii: "\n"))
        guard let answer = lines.first(where: { $0.starts(with: Array(#"{"ok":"stats""#.utf8)) }) else {
            violations.append("stats: no answer to the probe: " + String(decoding: spare.prefix(300), as: UTF8.self))
            return
        }
        let frame = Array(answer)
        for name in ["connections", "subscriptions", "locks", "instance_channels", "requests", "timers", "signals", "links"] {
            let expected = name == "connections" ? 1 : 0
            let value = Self.counter(name, in: frame)
            if value != expected {
                violations.append("leak: stats \(name) is \(value.map(String.init) ?? "missing") with no client left, expected \(expected)")
            }
        }
        let config = broker.config
        if let history = Self.counter("history_bytes", in: frame), history > config.historyBytes {
            violations.append("limit: history_bytes \(history) past history_bytes limit \(config.historyBytes)")
        }
        if let retained = Self.counter("retained_bytes", in: frame), retained > config.stateLimits.maxRetainedBytes {
            violations.append("limit: retained_bytes \(retained) past \(config.stateLimits.maxRetainedBytes)")
        }
    }

    /// The integer after `"name":` in a stats frame.
    static func counter(_ name: String, in frame: [UInt8]) -> Int? {
        let key = Array(("\"" + name + "\":").utf8)
        guard frame.count >= key.count else { return nil }
        for start in 0...(frame.count - key.count) where frame[start..<(start + key.count)].elementsEqual(key) {
            var value = 0
            var index = start + key.count
            var digits = 0
            while index < frame.count, frame[index] >= UInt8(ascii: "0"), frame[index] <= UInt8(ascii: "9") {
                value = value * 10 + Int(frame[index] - UInt8(ascii: "0"))
                index += 1
                digits += 1
            }
            return digits > 0 ? value : nil
        }
        return nil
    }
}
