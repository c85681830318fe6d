import HeraldBroker
import HeraldWire

/// Drives one broker the way the server does, for one fuzz input, and checks what it says.
///
/// Four connection slots stand in for four clients; directives in the stream pick the slot,
/// advance the clock, hang up, pause reading (so `max_pending` and the overflow policies are
/// reached), acknowledge journal records, shut down, reply, reload the auth settings and
/// hold token verifications.
struct FuzzSession {
    /// Connection slots a directive can pick.
    static let slotCount = 4

    let broker: Broker
    /// The input's config flags (byte 0).
    let flags: UInt8
    /// Violated invariants, in the order found.
    var violations: [String] = []
    /// Every frame a client was handed, `(connection id, frame)`, when the caller asked.
    var recorded: [(ConnectionID, [UInt8])]?
    /// The connection in each slot; nil after a hang-up until the slot's next line, so a
    /// refused connection is not retried in a loop.
    var slots: [Session?] = []
    /// Slots whose client has stopped reading.
    var paused: [Bool]
    /// Per slot, what arrived while its `hello` waited for verification: the server holds
    /// those bytes and frames them once the verdict is in (`Connection+Verification`).
    var held: [[HeldLine]]
    /// Verifications the server would be running off the loop, oldest first.
    var parked: [(session: Session, pending: PendingVerification)] = []
    /// While set (directive 0x0B), parked verifications wait, so several `hello`s can follow
    /// one verification; otherwise each is completed as soon as it is parked.
    var defersVerifications = false
    var current = 0
    var now = 0
    var nextID = 1
    var spare: [UInt8] = []
    let validator = RequestScanner(maxDepth: 80)
    /// Reads the requests the harness checks the answers to (`channels`, `lock`).
    let requestReader = RequestScanner()
    var journalPosition = 0
    /// The state a restart would rebuild: every journal record, encoded and decoded as the
    /// persistence layer does, applied in order. It must end equal to the broker's store.
    let replica = StateStore()
    var encoded: [UInt8] = []
    /// The last reply token seen in any frame (directive 0x07 answers it).
    var lastToken: [UInt8]?

    /// A line kept for a connection whose `hello` is being verified.
    enum HeldLine {
        case line([UInt8])
        case tooLong(Int)
    }

    init(flags: UInt8) {
        self.flags = flags
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
        broker.budgets = Self.budgets(flags: flags)
        paused = Array(repeating: false, count: Self.slotCount)
        held = Array(repeating: [], count: Self.slotCount)
        for slot in 0..<Self.slotCount { slots.append(connect(peer: Self.peer(ofSlot: slot))) }
        drain()
    }

    /// The current slot's connection, connecting one when the slot is empty.
    mutating func connected() -> Session {
        if let session = slots[current] { return session }
        let session = connect(peer: Self.peer(ofSlot: current))
        slots[current] = session
        drain()
        return session
    }

    mutating func connect(peer: [UInt8]) -> Session {
        let session = broker.connect(id: nextID, now: now)
        session.peer = peer
        nextID += 1
        return session
    }

    /// Handles one framed line: a directive or a request for the current slot.
    mutating func handle(_ framed: FramedLine) {
        switch framed {
        case .tooLong(let length):
            let session = connected()
            broker.heard(from: session, now: now)
            if session.awaitsVerification {
                held[current].append(.tooLong(length))
            } else {
                broker.lineTooLong(from: session, length: length, now: now)
            }
        case .line(let line):
            if Self.isDirective(line[0]) {
                directive(line)
            } else {
                let session = connected()
                broker.heard(from: session, now: now)
                if session.awaitsVerification {
                    held[current].append(.line(Array(line)))
                } else {
                    request(line, from: session)
                }
            }
        }
        completeVerificationsUnlessDeferred()
        drain()
        checkPendingBound()
        checkPendingTotal()
        checkAudit()
    }

    /// Whether a line's first byte makes it a harness directive: 0x01…0x08 and 0x0B
    /// (0x09 is a tab and 0x0A a newline, both legitimately at a request's start or end).
    static func isDirective(_ byte: UInt8) -> Bool {
        (byte >= 0x01 && byte <= 0x08) || byte == 0x0B
    }

    /// Hands a request line to the broker as the server does, then checks the answers the
    /// harness can predict and takes a `hello` the broker parked.
    mutating func request(_ line: UnsafeRawBufferPointer, from session: Session) {
        let expectation = expectation(for: line, from: session)
        let before = session.outbound.count
        broker.handleLine(line, from: session, now: now)
        if let expectation { check(expectation, answeredTo: session, after: before) }
        takeVerification(of: session)
    }

    /// Slack over `max_pending` for the one frame that crossed it: the largest frame these
    /// limits allow (a `subs` list of 8 subscriptions with 1 KiB `args` each) is under it.
    static let pendingSlack = 32 * 1024

    /// A client that stops reading must cost at most `max_pending` plus one frame, under
    /// either overflow policy: that bound is what protects the daemon's memory.
    mutating func checkPendingBound() {
        let bound = broker.config.maxPending + Self.pendingSlack
        for case let session? in slots where session.pendingBytes > bound {
            violations.append("limit: c\(session.id) holds \(session.pendingBytes) outbound bytes, past max_pending + slack \(bound)")
        }
    }

    /// After a flush, the connections not being closed hold at most `max_pending_total`
    /// together: past it the broker cuts the heaviest until the total is under, or until only
    /// connections already closing hold anything.
    mutating func checkPendingTotal() {
        var total = 0
        for case let session? in slots where !session.closeAfterFlush { total += session.pendingBytes }
        if total > broker.config.maxPendingTotal {
            violations.append("limit: open connections hold \(total) outbound bytes after a flush, past max_pending_total \(broker.config.maxPendingTotal)")
        }
    }

    /// The broker's own counters and indexes must agree with its tables after every line.
    mutating func checkAudit() {
        for problem in broker.audit().problems { violations.append("audit: " + problem) }
    }

    mutating func directive(_ line: UnsafeRawBufferPointer) {
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
        case 0x07:
            replyToLastToken(ridFlag: a)
        case 0x08:
            reload(a)
        default:
            defersVerifications.toggle()
        }
    }

    /// SIGHUP: the server installs a new `BrokerConfig` and re-applies the auth settings.
    /// `selector` picks the users (`AuthMode`, low two bits) and whether the abuse caps hold
    /// (0x80); what cannot change live (journaling, `max_line`) stays.
    mutating func reload(_ selector: Int) {
        let mode = AuthMode.allCases[selector % AuthMode.allCases.count]
        let reloaded = (flags & 0x7F) | UInt8(selector & 0x80)
        broker.config = Self.config(flags: reloaded, authMode: mode)
        broker.applyAuthSettings(now: now)
    }

    /// Answers the last request token any slot was sent: tokens are 128 random bits, which
    /// the fuzzer cannot guess, so without this the reply path would never be reached.
    mutating func replyToLastToken(ridFlag: Int) {
        guard let token = lastToken else { return }
        var line = Array(#"{"op":"reply","to":""#.utf8)
        line += token
        line += Array((ridFlag & 1 == 0 ? #"","data":1}"# : #"","rid":7}"#).utf8)
        let session = connected()
        broker.heard(from: session, now: now)
        if session.awaitsVerification {
            held[current].append(.line(line))
            return
        }
        line.withUnsafeBytes { request($0, from: session) }
    }

    /// Remembers the last `"reply":"TOKEN"` in a frame a slot was sent.
    mutating func noteToken(in frame: UnsafeRawBufferPointer) {
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

    static let replyKey = Array(#""reply":""#.utf8)

    /// Plays the persistence writer: everything drained so far becomes durable at once.
    mutating func acknowledgeRecords() {
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
    mutating func replay(_ record: StateRecord) {
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
    /// and empties its slot (the next line for the slot connects anew). Bytes held behind a
    /// parked `hello` go with it; the verification itself runs on, as on the thread pool.
    mutating func hangUp(_ session: Session) {
        guard let slot = slots.firstIndex(where: { $0 === session }) else { return }
        take(session)
        broker.disconnect(session)
        slots[slot] = nil
        paused[slot] = false
        held[slot] = []
    }

    /// Plays the server's flush: reading slots take their bytes, closes happen once flushed.
    mutating func drain() {
        var closing: [Session] = []
        // As the server's workers do once per loop pass: a slice of queued teardown first.
        if broker.hasDeferredWork { broker.continueDeferredWork() }
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
    mutating func take(_ session: Session) {
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

    mutating func check(frame: UnsafeRawBufferPointer, to session: Session) {
        noteToken(in: frame)
        recorded?.append((session.id, Array(frame)))
        do throws(HeraldError) {
            try validator.scan(frame)
        } catch {
            violations.append("frames: c\(session.id) got invalid JSON (\(error.message)): "
                + String(decoding: frame.prefix(300), as: UTF8.self))
        }
    }
}
