import HeraldBroker
import HeraldWire

/// The end of a run: every connection goes, and nothing any of them owned may be left.
extension FuzzSession {
    /// Ends the run: verifications finish, records become durable, every connection closes,
    /// then the broker must hold nothing a connection made (checked from its tables with
    /// `Broker.audit()`, and from `stats` as a client sees it).
    mutating func finish() {
        defersVerifications = false
        completeVerifications()
        drain()
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
        checkNothingHeld()
        checkRecordsCollected()
        probeStats()
    }

    /// With no connection left: no lock, link, instance channel, request, timer, signal,
    /// parked verification, pending output or user charge (accounts may remain only for the
    /// records they created that history or retained state still hold).
    private mutating func checkNothingHeld() {
        let audit = broker.audit()
        for problem in audit.problems { violations.append("audit: " + problem) }
        let figures: [(String, Int)] = [
            ("locks", audit.locks), ("links", audit.links), ("instance channels", audit.instanceChannels),
            ("requests", audit.requests), ("timers", audit.timers), ("signals", audit.signals),
            ("finished signal offers", audit.finishedOfferHolders), ("unauthenticated", audit.unauthenticated),
            ("verifications in flight", audit.verificationsInFlight), ("pending_total", audit.pendingTotal),
            ("sessions holding answers", audit.heldSessions), ("accounts charged", audit.accountsInUse),
        ]
        for (name, value) in figures where value != 0 {
            violations.append("leak: \(name) is \(value) with no connection left")
        }
    }

    /// After the sweep has passed over every name (one tick with the daemon's budget, several
    /// with the harness's tiny one), every client record left is held by history or retained
    /// state, and the directory holds nothing but records.
    private mutating func checkRecordsCollected() {
        while broker.hasDeferredWork { broker.continueDeferredWork() }
        let ticks = broker.audit().directoryNames / max(broker.budgets.sweep, 1) + 2
        for _ in 0..<ticks { _ = broker.tick(now: now) }
        drain()
        let audit = broker.audit()
        for problem in audit.problems { violations.append("audit after sweep: " + problem) }
        if audit.idleChannelRecords != 0 {
            violations.append("leak: \(audit.idleChannelRecords) channel records nothing holds survived \(ticks) sweeps")
        }
        if audit.directoryNames != audit.allChannelRecords {
            violations.append("leak: directory holds \(audit.directoryNames) names for \(audit.allChannelRecords) records with no connection left")
        }
    }

    /// A new client authenticates (token `a` is accepted in every auth mode) and asks `stats`.
    private mutating func probeStats() {
        let probe = connect(peer: Array("probe".utf8))
        slots = [probe]
        paused = [true]
        held = [[]]
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
        for name in ["connections", "subscriptions", "locks", "instance_channels", "requests", "timers", "signals", "links",
                     "unauthenticated"] {
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
