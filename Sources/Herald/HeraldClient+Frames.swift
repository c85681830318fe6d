/// Incoming frames, on the I/O thread: answers, events, `info`, `ping`, `removed`, `gap`.
extension HeraldClient {
    /// Error codes after which the daemon closes the connection; they become the disconnect reason.
    private static let closingCodes: Set<String> = ["shutting_down", "slow_consumer", "timeout", "too_many_errors", "forbidden",
                                                          "too_many_attempts", "node_reset"]

    func handleLine(_ line: [UInt8]) {
        guard let frame = ServerFrame(line) else {
            report(.malformedFrame(String(decoding: line.prefix(200), as: UTF8.self)))
            return
        }
        let kind = frame.kind
        // Anything but an event may end a subscription or wake a caller: the events before it
        // go to their handlers first.
        if kind != "event" { loop.deliveries.flush() }
        switch kind {
        case "event":
            deliverEvent(frame)
        case "ok":
            if let rid = frame.int("rid") { complete(rid: rid, with: .success(frame)) }
        case "pong":
            if let rid = frame.int("rid") { complete(rid: rid, with: .success(frame)) }
        case "error":
            handleError(frame)
        case "ping":
            loop.backlog.append(contentsOf: FrameWriter(op: "pong").finished())
        case "info":
            handleInfo(frame)
        case "removed":
            handleRemoved(frame)
        case "gap":
            handleGap(frame)
        case "signal":
            handleSignalOffer(frame)
        case "callback":
            handleSignalCallback(frame)
        default:
            // Frames of later protocol features are ignored, not fatal.
            break
        }
    }

    /// Completes the pending answer for `rid`, if it is still pending (exactly once).
    private func complete(rid: Int, with result: Result<ServerFrame, HeraldClientError>) {
        let entry = state.withLock { state in
            state.abandoned.remove(rid) == nil ? state.pending.removeValue(forKey: rid) : nil
        }
        entry?.complete(result)
    }

    private func handleError(_ frame: ServerFrame) {
        let code = frame.string("error") ?? "unknown"
        let error = HeraldClientError.server(code: code, message: frame.string("message") ?? "", op: frame.string("op"))
        if let rid = frame.int("rid"), state.withLock({ $0.pending[rid] != nil || $0.abandoned.contains(rid) }) {
            complete(rid: rid, with: .failure(error))
            return
        }
        // A late `req` timeout (its caller gave up already) is about a request, not the link.
        if Self.closingCodes.contains(code), frame.string("op") != "req" { loop.closingErrorCode = code }
        // The node starts a new incarnation and closes: a lost connection like any other (the
        // client reconnects and restores), reported once, for information.
        report(code == "node_reset" ? .nodeReset(message: frame.string("message") ?? "") : error)
    }

    // MARK: Handshake and restore

    private func handleInfo(_ frame: ServerFrame) {
        guard let body = frame.range("info"), let fields = ServerFrame(Array(frame.bytes[body])) else {
            lose(.failure("malformed info frame"))
            return
        }
        let info = ServerInfo(
            server: fields.string("server") ?? "", version: fields.string("version") ?? "",
            client: fields.string("client") ?? "", epoch: fields.string("epoch") ?? "",
            heartbeatMs: fields.int("heartbeat_ms") ?? 0, maxLine: fields.int("max_line") ?? 1 << 20,
            node: fields.string("node"))
        let configuration = self.configuration
        let line = state.withLock { state -> [UInt8] in
            state.info = info
            let rid = state.register(timeout: nil) { [weak self] result in self?.helloAnswered(result) }
            var writer = FrameWriter(op: "hello", rid: rid)
            writer.string("name", configuration.name)
            writer.string("token", configuration.token)
            if !configuration.echo { writer.bool("echo", false) }
            writer.raw("info", helloInfo)
            return writer.finished()
        }
        loop.backlog.append(contentsOf: line)
    }

    private func helloAnswered(_ result: Result<ServerFrame, HeraldClientError>) {
        switch result {
        case .failure(let error):
            guard case .server(let code, let message, _) = error else { return }
            if code == "forbidden" || code == "auth_required" {
                lose(.authRejected(code: code, message: message))
            } else {
                lose(.failure("hello refused: \(error)"))
            }
        case .success:
            linkEstablished()
        }
    }

    /// `hello` answered: restore (`restoreLines`, all in one write), then open the link to callers.
    private func linkEstablished() {
        let (observers, restored, waiters, lines, epochChange) = state.withLock { state in
            let lines = restoreLines(&state) + outboxLines(&state)
            state.linkUp = true
            state.everConnected = true
            let observers = state.transition(to: .connected)
            let restored = state.restoredIfDone()
            state.retryFirstConnect = false
            var epochChange: HeraldClientError?
            if let previous = state.previousEpoch, let current = state.info?.epoch, previous != current {
                epochChange = .epochChanged(previous: previous, current: current)
            }
            defer { state.connectWaiters = [:] }
            return (observers, restored, Array(state.connectWaiters.values), lines, epochChange)
        }
        loop.backlog.append(contentsOf: lines)
        loop.phase = .running
        loop.attempt = 0
        // Path news from before this connection are stale now.
        _ = loop.takePathReturned()
        notify(observers, of: .connected)
        if let epochChange { report(epochChange) }
        notify(restored, of: .restored)
        for waiter in waiters { waiter.resume(returning: .success(())) }
    }

    /// Builds a `sub` frame for `record` and registers its answer handling, followed by the
    /// locks this client holds on the subscription's name (taking a lock again is a no-op, so
    /// sending them with every `sub` keeps them across reconnects and re-binds).
    /// - Parameters:
    ///   - restoring: sent to restore the subscription on a new connection (a refusal that may
    ///     pass is retried, a final one reported as `.restoreFailed`).
    ///   - retry: the restore retry this is, nil for a first attempt.
    func subscribeLine(_ record: SubscriptionRecord, since: Int?, restoring: Bool, retry: RestoreRetry? = nil,
                       state: inout ClientState) -> [UInt8] {
        let attempt = SubscribeAttempt(since: since, restoring: restoring, retry: retry, generation: state.generation)
        var lines = bareSubscribeLine(record, attempt, state: &state)
        let name = record.binding.name
        for lock in state.locks where lock.sub == name {
            lines += restoreLine(.lock(lock), state: &state)
        }
        return lines
    }

    /// Builds a `sub` frame for `record` and registers its answer handling.
    private func bareSubscribeLine(_ record: SubscriptionRecord, _ attempt: SubscribeAttempt, state: inout ClientState) -> [UInt8] {
        let binding = record.binding
        let channel = record.channel
        let isHandler = record.signalHandler != nil
        let current = record.current
        // Handlers have no history to lose; `current` subscriptions get the state again; one
        // that never had an event (no `seq`) missed nothing it could catch up on. A caller's
        // own `since` is checked on the first `sub` too.
        let reportLoss = (attempt.restoring && record.everAcked && record.lastSeq != nil && !isHandler && !current
                          && !record.refetchesOnRestore)
            || (!record.everAcked && record.requestedSince != nil)
        let rid = state.register(timeout: nil) { [weak self] result in
            self?.subscribeAnswered(binding, channel: channel, result: result, attempt: attempt, checksRecovery: reportLoss)
        }
        var writer = FrameWriter(op: "sub", rid: rid)
        writer.string("ch", record.channel.name)
        writer.string("sub", record.binding.name)
        writer.string("group", record.group)
        writer.int("max", record.remaining)
        writer.raw("args", record.args)
        writer.int("since", attempt.since)
        if isHandler { writer.bool("handle", true) }
        if current { writer.bool("current", true) }
        return writer.finished()
    }

    /// The answer to a `sub`. `checksRecovery`: events may have been missed (a restore of a
    /// subscription that had events, or the caller's own `since`), so the outcome is recorded
    /// on the token. A `since` the daemon could not serve is reported as `historyLost` to the
    /// subscription's own error handler (else the client's); a restore on a new data set
    /// (no `since` asked) is covered by the one `epochChanged` notice of the reconnect.
    private func subscribeAnswered(_ binding: SubscriptionBinding, channel: Channel, result: Result<ServerFrame, HeraldClientError>,
                                   attempt: SubscribeAttempt, checksRecovery: Bool) {
        let name = binding.name
        switch result {
        case .success(let frame):
            state.withLock { state in
                guard state.subscriptions[name]?.binding === binding else { return }
                state.subscriptions[name]?.acked = true
                state.subscriptions[name]?.everAcked = true
            }
            let recovered = attempt.since != nil && frame.bool("recovered") == true
            // Recorded before `settle`, so a caller woken by `ready()` reads the outcome.
            if checksRecovery { binding.recordRecovery(recovered) }
            binding.onAcknowledged?()
            binding.settle(.success(()))
            if checksRecovery, !recovered, attempt.since != nil {
                report(.historyLost(subscription: name, channel: channel.name), to: binding.onError)
            }
            if attempt.restoring { settle(.subscription(binding, since: attempt.since), generation: attempt.generation) }
        case .failure(.server(let code, let message, let op)):
            if attempt.since != nil, code == "bad_field" {
                // A daemon without history refuses `since`: subscribe again without it.
                let line = state.withLock { state -> [UInt8] in
                    guard state.linkUp, let record = state.subscriptions[name], record.binding === binding else { return [] }
                    return subscribeLine(record, since: nil, restoring: attempt.restoring, retry: attempt.retry, state: &state)
                }
                if !line.isEmpty {
                    loop.backlog.append(contentsOf: line)
                    return
                }
            }
            subscribeRefused(binding, channel: channel, error: .server(code: code, message: message, op: op), attempt: attempt)
        case .failure:
            // Disconnected or closed: the next connection restores it.
            break
        }
    }

    /// A refused `sub`: a restore refused with an error that may pass is retried; otherwise the
    /// subscription ends (`.refused`) and is reported (`.restoreFailed` for a restore).
    private func subscribeRefused(_ binding: SubscriptionBinding, channel: Channel, error: HeraldClientError, attempt: SubscribeAttempt) {
        let item = RestoreItem.subscription(binding, since: attempt.since)
        if attempt.restoring, case .server(let code, _, _) = error, item.retries(code),
           retryRestore(item, after: attempt.retry, generation: attempt.generation) { return }
        let failure = state.withLock { state -> HeraldClientError? in
            let failure = attempt.restoring ? item.failure(error, in: state)
                : .subscriptionEnded(subscription: binding.name, channel: channel.name, reason: error.description)
            return item.forget(in: &state) ? failure : nil
        }
        binding.settle(.failure(error))
        if let failure {
            binding.end(.refused(error))
            report(failure, to: binding.onError)
        }
        if attempt.restoring { settle(item, generation: attempt.generation) }
    }

    // MARK: Events

    private func deliverEvent(_ frame: ServerFrame) {
        guard let event = IncomingEvent(frame: frame) else {
            report(.malformedFrame(String(decoding: frame.bytes.prefix(200), as: UTF8.self)))
            return
        }
        route(event)
    }

    /// Reads an `event` line straight from the read buffer, without copying the line.
    /// - Returns: nil when it is not a well-formed event frame: the caller then handles (and
    ///   reports) the line on the general path, `handleLine`.
    /// - Parameter strings: the previous event's strings (`RecentStrings`).
    func incomingEvent(line: UnsafeRawBufferPointer, strings: inout RecentStrings) -> IncomingEvent? {
        guard let fields = EventFields(line: line) else { return nil }
        return IncomingEvent(line: line, fields: fields, strings: &strings)
    }

    /// Counts an event against its subscription and queues it for the handler.
    private func route(_ event: IncomingEvent) {
        route([event])
    }

    /// Counts events against their subscriptions and queues them for their handlers, in order,
    /// under one lock.
    ///
    /// Why together: a read holds hundreds of events, and taking the lock and hashing the
    /// subscription's name per event was a good part of the raw path; consecutive events for
    /// one subscription (the usual case) reuse its dictionary index.
    func route(_ events: [IncomingEvent]) {
        state.withLock { state in
            var cachedName: String?
            var cachedIndex: Dictionary<String, SubscriptionRecord>.Index?
            for event in events {
                let name = event.metadata.subscription
                let index: Dictionary<String, SubscriptionRecord>.Index
                if let cachedIndex, cachedName == name {
                    index = cachedIndex
                } else {
                    guard let found = state.subscriptions.index(forKey: name) else { continue }
                    (cachedName, cachedIndex, index) = (name, found, found)
                }
                // In place (`inout` through the dictionary's modify accessor): copying the record
                // out and back per event cost a dozen retains and releases. (Changing a value
                // keeps the dictionary's indices valid; removing a key below does not.)
                let seq = event.metadata.kind == "current" ? nil : event.metadata.seq
                let outcome = Self.countDelivery(&state.subscriptions.values[index], seq: seq, isLast: event.metadata.isLast)
                guard let (binding, finished, ownerGone) = outcome else { continue }
                if ownerGone || finished {
                    state.subscriptions[name] = nil
                    (cachedName, cachedIndex) = (nil, nil)
                }
                if ownerGone {
                    _ = state.enqueue(unsubscribeLine(name))
                    binding.cancel()
                    continue
                }
                loop.deliveries.append(binding, event, finished: finished)
            }
        }
    }

    /// One event for `record`: counts it against `max`, remembers its `seq`.
    /// - Returns: the binding, whether the subscription is finished, whether its owner is gone
    ///   (nothing counted then); nil when the record's `sub` is not confirmed yet.
    private static func countDelivery(_ record: inout SubscriptionRecord, seq: Int?, isLast: Bool) -> (SubscriptionBinding, Bool, Bool)? {
        guard record.acked else { return nil }
        if let alive = record.binding.ownerAlive, !alive() { return (record.binding, false, true) }
        var finished = isLast
        if let remaining = record.remaining {
            record.remaining = remaining - 1
            if remaining - 1 <= 0 { finished = true }
        }
        if let seq, !record.isPattern { record.lastSeq = seq }
        return (record.binding, finished, false)
    }

    /// `{"removed":CH,"sub":NAME}`: the daemon dropped the subscription with its instance
    /// channel (or, with `"reason":"forbidden"`, because a reload revoked the permission). It
    /// ends in the client too, and says so on the subscription (not as an error).
    private func handleRemoved(_ frame: ServerFrame) {
        guard let name = frame.string("sub"), let channel = frame.string("removed") else {
            report(.malformedFrame(String(decoding: frame.bytes.prefix(200), as: UTF8.self)))
            return
        }
        let binding = state.withLock { state -> SubscriptionBinding? in
            // Unacknowledged: the frame is about an older subscription under this name (the
            // daemon answers a new `sub` before anything else about it), so the new one stays.
            guard let record = state.subscriptions[name], record.acked else { return nil }
            state.subscriptions[name] = nil
            return record.binding
        }
        binding?.end(frame.string("reason") == "forbidden" ? .forbidden(pattern: channel) : .removed(channel: channel))
    }

    /// `{"gap":CH,"sub":NAME,"from":F,"to":T}`: events F…T on CH will never reach the
    /// subscription. Its `onGap` hears of it where its handler runs, after the events before
    /// (flushed by `handleLine`), else the error handler does. Unacknowledged or unknown names
    /// are skipped: the frame is about an older subscription under that name.
    private func handleGap(_ frame: ServerFrame) {
        guard let gap = EventGap(frame: frame) else {
            report(.malformedFrame(String(decoding: frame.bytes.prefix(200), as: UTF8.self)))
            return
        }
        let binding = state.withLock { state -> SubscriptionBinding? in
            guard let record = state.subscriptions[gap.subscription], record.acked else { return nil }
            return record.binding
        }
        guard let binding, !binding.isCancelled else { return }
        if !binding.tell(gap) { report(.gap(gap)) }
    }

    /// Drops subscriptions whose weak owner is gone, and tells the daemon.
    func sweepDeadOwners() {
        sweepDeadObjectOwners()
        let probed = state.withLock { state in state.subscriptions.values.compactMap { $0.binding.ownerProbe == nil ? nil : $0.binding } }
        for binding in probed { binding.ownerProbe?(binding) }
        let dead = state.withLock { state -> [SubscriptionBinding] in
            let names = state.subscriptions.filter { $0.value.binding.ownerAlive.map { !$0() } ?? false }.map(\.key)
            return names.compactMap { name in
                guard let record = state.subscriptions.removeValue(forKey: name) else { return nil }
                if state.linkUp { _ = state.enqueue(unsubscribeLine(name)) }
                return record.binding
            }
        }
        for binding in dead { binding.cancel() }
    }

    func unsubscribeLine(_ name: String) -> [UInt8] {
        var writer = FrameWriter(op: "unsub")
        writer.string("sub", name)
        return writer.finished()
    }

}
