import Synchronization

/// Offline publishes (``OfflinePublishing``) and backpressure for `post`.
extension HeraldClient {
    /// Publishes through the outbox and waits for the daemon's answer, across reconnects.
    ///
    /// No request timeout applies while the publish waits for a connection; a cancelled task
    /// stops waiting at once (`.cancelled`), but the publish stays kept and is still sent.
    func publishKept(raw data: RawJSON?, channel: String, bound: OfflinePublishing) async throws(HeraldClientError) -> ServerFrame {
        let slot = CancellationSlot()
        let outcome: Result<ServerFrame, HeraldClientError> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let once = Mutex<CheckedContinuation<Result<ServerFrame, HeraldClientError>, Never>?>(continuation)
                let resume: @Sendable (Result<ServerFrame, HeraldClientError>) -> Void = { result in
                    once.withLock { taken in
                        defer { taken = nil }
                        return taken
                    }?.resume(returning: result)
                }
                if case .failure(let error) = keep(data, channel: channel, bound: bound, complete: resume) {
                    resume(.failure(error))
                } else {
                    slot.arm { resume(.failure(.cancelled)) }
                }
            }
        } onCancel: {
            slot.cancel()
        }
        return try outcome.get()
    }

    /// Posts through the outbox: returns once kept; a refusal by the daemon goes to the error
    /// handler.
    func postKept(raw data: RawJSON?, channel: String, bound: OfflinePublishing) throws(HeraldClientError) {
        try keep(data, channel: channel, bound: bound) { [weak self] result in
            if case .failure(let error) = result, error != .closed { self?.report(error) }
        }.get()
    }

    /// Keeps a publish and sends it now when the link is up.
    private func keep(_ data: RawJSON?, channel: String, bound: OfflinePublishing,
                      complete: @escaping @Sendable (Result<ServerFrame, HeraldClientError>) -> Void) -> Result<Void, HeraldClientError> {
        let sent = state.withLock { state -> Result<Bool, HeraldClientError> in
            if state.closed { return .failure(.closed) }
            guard let serial = state.outbox.add(idPrefix: publishIDPrefix, channel: channel, data: data, bound: bound,
                                                complete: complete) else {
                return .failure(.offlineQueueFull(count: bound.maxCount, bytes: bound.maxBytes))
            }
            guard state.linkUp else { return .success(false) }
            return .success(state.enqueue(outboxLine(serial, state: &state)))
        }
        switch sent {
        case .failure(let error): return .failure(error)
        case .success(let wake):
            if wake { loop.wake() }
            return .success(())
        }
    }

    /// The `pub` frame (with its `id`) for a kept publish, its answer registered; empty when
    /// it was answered meanwhile.
    func outboxLine(_ serial: Int, state: inout ClientState) -> [UInt8] {
        guard let entry = state.outbox.entries[serial] else { return [] }
        let rid = state.register(timeout: nil) { [weak self] result in self?.outboxAnswered(serial, result) }
        var writer = FrameWriter(op: "pub", rid: rid)
        writer.string("ch", entry.channel)
        writer.string("id", entry.id)
        writer.raw("data", entry.data)
        return writer.finished()
    }

    /// Every kept publish, in order, for a new connection (after its restore).
    func outboxLines(_ state: inout ClientState) -> [UInt8] {
        var lines: [UInt8] = []
        for serial in state.outbox.serialsInOrder { lines += outboxLine(serial, state: &state) }
        return lines
    }

    /// A kept publish was answered: forgotten and its caller told. A lost connection keeps it:
    /// the next connection sends it again with the same `id`.
    private func outboxAnswered(_ serial: Int, _ result: Result<ServerFrame, HeraldClientError>) {
        if case .failure(.disconnected) = result { return }
        let entry = state.withLock { $0.outbox.remove(serial) }
        entry?.complete(result)
    }

    /// Waits until the bytes queued for the daemon are under
    /// ``ClientConfiguration/maxOutboundBytes``: `post` past the bound throws
    /// ``HeraldClientError/outboundFull(bytes:)``, so a producer faster than the network awaits
    /// this before posting on. Returns at once when there is room or no connection (a `post`
    /// then throws `.notConnected`, or is kept offline).
    /// - Throws: `.closed`, `.cancelled` (the waiting task was cancelled).
    public func waitForOutboundRoom() async throws(HeraldClientError) {
        let slot = CancellationSlot()
        let outcome: Result<Void, HeraldClientError> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let registered = state.withLock { state -> Result<Int, HeraldClientError>? in
                    if state.closed { return .failure(.closed) }
                    guard state.linkUp, state.outboundBytes > configuration.maxOutboundBytes else { return nil }
                    let id = state.nextRoomWaiter
                    state.nextRoomWaiter += 1
                    state.roomWaiters[id] = continuation
                    return .success(id)
                }
                switch registered {
                case nil: continuation.resume(returning: .success(()))
                case .failure(let error)?: continuation.resume(returning: .failure(error))
                case .success(let id)?:
                    slot.arm { [weak self] in
                        let waiter = self?.state.withLock { $0.roomWaiters.removeValue(forKey: id) }
                        waiter?.resume(returning: .failure(.cancelled))
                    }
                }
            }
        } onCancel: {
            slot.cancel()
        }
        try outcome.get()
    }
}
