/// Sending signals (docs/protocol.md "Signals (responder chain)"): the signal bubbles up the
/// channel hierarchy until a handler stops it; handlers may call back before answering.
extension HeraldClient {
    /// Sends a typed signal on its type's home channel; callbacks stay raw.
    ///
    ///     let call = try client.signal(Save(), timeout: .seconds(1))
    ///     for await progress in call.callbacks { print(progress.value) }
    ///     let result = try await call.result()      // handledBy, at, hops, timeouts
    /// - Parameters:
    ///   - value: the signal; its type's `channel` must be concrete (else use `on:`).
    ///   - channel: where it starts; nil: the type's home channel.
    ///   - tag: JSON handed to every handler unchanged (`SignalContext.tag`).
    ///   - timeout: how long each handler gets to answer (the daemon's `timeout_ms`, 1 ms … 1 h).
    /// - Returns: the signal under way.
    /// - Throws: `.badChannel`, `.encoding`, `.notConnected`, `.closed`.
    public func signal<Signal: HeraldEvent>(_ value: Signal, on channel: Channel? = nil, tag: RawJSON? = nil,
                                            timeout: Duration = .seconds(1)) throws(HeraldClientError) -> SignalCall<RawJSON?> {
        try signal(raw: try Self.signalPayload(value), on: channel ?? Signal.channel, tag: tag, timeout: timeout)
    }

    /// The `Double` form of ``signal(_:on:tag:timeout:)-(_,_,_,Duration)``: `timeout` in seconds.
    /// - Parameters:
    ///   - value: the signal.
    ///   - channel: where it starts; nil: the type's home channel.
    ///   - tag: JSON handed to every handler.
    ///   - timeout: seconds.
    /// - Returns: the signal under way.
    /// - Throws: as the `Duration` form.
    @available(*, deprecated, message: "pass a Duration: timeout: .seconds(5)")
    public func signal<Signal: HeraldEvent>(_ value: Signal, on channel: Channel? = nil, tag: RawJSON? = nil,
                                            timeout: Double) throws(HeraldClientError) -> SignalCall<RawJSON?> {
        try signal(value, on: channel, tag: tag, timeout: .clamped(seconds: timeout))
    }

    /// Sends a typed signal and decodes its callbacks as `Callback`.
    ///
    /// A callback that does not decode is reported to the error handler and skipped.
    /// - Parameters:
    ///   - value: the signal.
    ///   - channel: where it starts; nil: the type's home channel.
    ///   - callbacks: the type handlers send back.
    ///   - tag: JSON handed to every handler.
    ///   - timeout: how long each handler gets to answer.
    /// - Returns: the signal under way, with typed callbacks.
    /// - Throws: `.badChannel`, `.encoding`, `.notConnected`, `.closed`.
    public func signal<Signal: HeraldEvent, Callback: Decodable & Sendable>(
        _ value: Signal, on channel: Channel? = nil, callbacks: Callback.Type, tag: RawJSON? = nil, timeout: Duration = .seconds(1)
    ) throws(HeraldClientError) -> SignalCall<Callback> {
        let channel = channel ?? Signal.channel
        return try startSignal(data: try Self.signalPayload(value), channel: channel, tag: tag, timeout: timeout.inSeconds) { data throws(HeraldClientError) in
            do throws(HeraldClientError) {
                return try (data ?? .null).decode(as: Callback.self)
            } catch {
                if case .decoding(let type, _, let message) = error {
                    throw .decoding(type: type, channel: channel.name, message: message)
                }
                throw error
            }
        }
    }

    /// The `Double` form of ``signal(_:on:callbacks:tag:timeout:)-(_,_,_,_,Duration)``:
    /// `timeout` in seconds.
    /// - Parameters:
    ///   - value: the signal.
    ///   - channel: where it starts; nil: the type's home channel.
    ///   - callbacks: the type handlers send back.
    ///   - tag: JSON handed to every handler.
    ///   - timeout: seconds.
    /// - Returns: the signal under way, with typed callbacks.
    /// - Throws: as the `Duration` form.
    @available(*, deprecated, message: "pass a Duration: timeout: .seconds(5)")
    public func signal<Signal: HeraldEvent, Callback: Decodable & Sendable>(
        _ value: Signal, on channel: Channel? = nil, callbacks: Callback.Type, tag: RawJSON? = nil, timeout: Double
    ) throws(HeraldClientError) -> SignalCall<Callback> {
        try signal(value, on: channel, callbacks: callbacks, tag: tag, timeout: .clamped(seconds: timeout))
    }

    /// Sends a raw signal; callbacks are the raw `data` handlers sent (nil when none).
    /// - Parameters:
    ///   - data: the signal's data, or nil.
    ///   - channel: a concrete channel, where the route starts.
    ///   - tag: JSON handed to every handler.
    ///   - timeout: how long each handler gets to answer.
    /// - Returns: the signal under way.
    /// - Throws: `.badChannel`, `.notConnected`, `.closed`.
    public func signal(raw data: RawJSON?, on channel: Channel, tag: RawJSON? = nil,
                       timeout: Duration = .seconds(1)) throws(HeraldClientError) -> SignalCall<RawJSON?> {
        try startSignal(data: data, channel: channel, tag: tag, timeout: timeout.inSeconds) { data throws(HeraldClientError) in data }
    }

    /// The `Double` form of ``signal(raw:on:tag:timeout:)-(_,_,_,Duration)``: `timeout` in seconds.
    /// - Parameters:
    ///   - data: the signal's data, or nil.
    ///   - channel: a concrete channel, where the route starts.
    ///   - tag: JSON handed to every handler.
    ///   - timeout: seconds.
    /// - Returns: the signal under way.
    /// - Throws: as the `Duration` form.
    @available(*, deprecated, message: "pass a Duration: timeout: .seconds(5)")
    public func signal(raw data: RawJSON?, on channel: Channel, tag: RawJSON? = nil,
                       timeout: Double) throws(HeraldClientError) -> SignalCall<RawJSON?> {
        try signal(raw: data, on: channel, tag: tag, timeout: .clamped(seconds: timeout))
    }

    private func startSignal<Callback: Sendable>(
        data: RawJSON?, channel: Channel, tag: RawJSON?, timeout: Double,
        decode: @escaping @Sendable (RawJSON?) throws(HeraldClientError) -> Callback
    ) throws(HeraldClientError) -> SignalCall<Callback> {
        let name = try channel.validatedConcrete().name
        let milliseconds = Self.timeoutMilliseconds(timeout)
        let call = SignalCall<Callback>()
        let sink = SignalSink(
            yield: { [weak self] from, data in
                do throws(HeraldClientError) {
                    call.yield(SignalCallback(from: from, value: try decode(data)))
                } catch {
                    self?.report(error)
                }
            },
            finish: { call.finish($0) })
        let (wake, rid) = try state.withLock { state throws(HeraldClientError) -> (Bool, Int) in
            if state.closed { throw .closed }
            guard state.linkUp else { throw .notConnected }
            // No client deadline: every handler is timed by the daemon, so an answer comes;
            // a lost connection fails it like any pending answer.
            let rid = state.nextRid
            _ = state.register(timeout: nil) { [weak self] result in self?.signalAnswered(rid: rid, result) }
            state.signals.sinks[rid] = sink
            var writer = FrameWriter(op: "signal", rid: rid)
            writer.string("ch", name)
            writer.int("timeout_ms", milliseconds)
            writer.raw("tag", tag)
            writer.raw("data", data)
            return (state.enqueue(writer.finished()), rid)
        }
        call.onWithdraw { [weak self] in self?.withdrawSignal(rid: rid) }
        if wake { loop.wake() }
        return call
    }

    /// A cancelled signal: its sink is swapped for a silent one, so callbacks already on their
    /// way are still matched to it (and not mistaken for another unnamed signal's, see
    /// `SignalTable`) but go nowhere, and the daemon is asked to end its route (`cancel`).
    /// Once it answered, no callback or result can follow: the entry is removed then (or by
    /// the signal's own `ok`, when that came first).
    private func withdrawSignal(rid: Int) {
        let wake = state.withLock { state -> Bool in
            guard state.signals.sinks[rid] != nil else { return false }
            state.signals.sinks[rid] = SignalSink(yield: { _, _ in }, finish: { _ in })
            return queueWithdrawal(of: rid, in: &state) { [weak self] in self?.endWithdrawnSignal(rid: rid) }
        }
        if wake { loop.wake() }
    }

    /// The daemon withdrew the signal (or had ended it already): its entries go, through the
    /// same path as a result.
    private func endWithdrawnSignal(rid: Int) {
        let entry = state.withLock { $0.pending.removeValue(forKey: rid) }
        entry?.complete(.failure(.cancelled))
    }

    /// The `ok` (or failure) of a signal: flush callbacks kept for it, then finish it.
    private func signalAnswered(rid: Int, _ result: Result<ServerFrame, HeraldClientError>) {
        let id = (try? result.get())?.string("id")
        let (sink, buffered) = state.withLock { $0.signals.finish(rid: rid, id: id) }
        guard let sink else { return }
        for callback in buffered { sink.yield(callback.from, callback.data) }
        sink.finish(result.map(SignalResult.init(frame:)))
    }

    /// `{"callback":G,"from":C,"data":…}`: to the signal it belongs to (see `SignalTable`).
    func handleSignalCallback(_ frame: ServerFrame) {
        guard let id = frame.string("callback") else {
            report(.malformedFrame(String(decoding: frame.bytes.prefix(200), as: UTF8.self)))
            return
        }
        let from = frame.string("from")
        let data = frame.raw("data")
        let sink = state.withLock { $0.signals.route(id: id, from: from, data: data) }
        sink?.yield(from, data)
    }
}
