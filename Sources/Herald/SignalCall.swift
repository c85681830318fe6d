import Foundation
import Synchronization

/// How a signal's route ended, as the daemon's `ok` reports it.
public struct SignalResult: Sendable, Equatable {
    /// The daemon's id of the signal (`g7`).
    public let id: String
    /// The global id of the handler that stopped it (`c3/screen`); nil when nobody did.
    public let handledBy: String?
    /// The level (channel) where it was stopped; nil when nobody stopped it.
    public let at: String?
    /// How many handlers it was offered to.
    public let hops: Int
    /// Handlers that did not answer in time (counted as `pass`).
    public let timeouts: [String]

    /// Whether a handler stopped the signal.
    public var wasHandled: Bool { handledBy != nil }

    init(frame: ServerFrame) {
        id = frame.string("id") ?? ""
        handledBy = frame.string("handled_by")
        at = frame.string("at")
        hops = frame.int("hops") ?? 0
        // A malformed list is not worth failing the whole result over: it reads as empty.
        timeouts = (try? (frame.raw("timeouts") ?? RawJSON("[]")).decode(as: [String].self)) ?? []
    }
}

/// One callback a handler sent to the signal's sender.
public struct SignalCallback<Value: Sendable>: Sendable {
    /// The client id of the handler's connection.
    public let from: String?
    /// The callback's data, decoded (or raw).
    public let value: Value
}

/// A signal under way: its callbacks as they arrive, then its one result.
///
/// Why an object and not one `async` call: callbacks ("saving…", progress) are meant to be
/// seen while the route is still running, before the result. `callbacks` finishes when the
/// result is known (or the signal failed), so `for await` over it ends on its own.
/// `AsyncStream` is unicast: iterate `callbacks` from one task only. Its buffer is unbounded:
/// a signal's callbacks are bounded by what its handlers send for it.
public final class SignalCall<Callback: Sendable>: Sendable {
    /// The callbacks in the order the handlers sent them; finishes with the result.
    public let callbacks: AsyncStream<SignalCallback<Callback>>
    private let continuation: AsyncStream<SignalCallback<Callback>>.Continuation
    private let outcome = Mutex<Outcome>(Outcome())

    private struct Outcome {
        var result: Result<SignalResult, HeraldClientError>?
        var waiters: [CheckedContinuation<Result<SignalResult, HeraldClientError>, Never>] = []
        /// Withdraws the signal from the client (its answer and callbacks are then dropped).
        var withdraw: (@Sendable () -> Void)?
    }

    init() {
        (callbacks, continuation) = AsyncStream.makeStream(of: SignalCallback<Callback>.self, bufferingPolicy: .unbounded)
    }

    /// Waits for the route to end.
    /// - Returns: who handled it, where, after how many hops, who timed out.
    /// - Throws: `.disconnected` (the connection dropped first), `.closed`, the daemon's
    ///   refusal (`bad_channel`, `bad_field`, `forbidden`).
    public func result() async throws(HeraldClientError) -> SignalResult {
        let slot = CancellationSlot()
        let result: Result<SignalResult, HeraldClientError> = await withTaskCancellationHandler {
            await withCheckedContinuation { waiter in
                let known = outcome.withLock { outcome -> Result<SignalResult, HeraldClientError>? in
                    if let result = outcome.result { return result }
                    outcome.waiters.append(waiter)
                    return nil
                }
                if let known {
                    waiter.resume(returning: known)
                } else {
                    slot.arm { [weak self] in self?.cancel() }
                }
            }
        } onCancel: {
            slot.cancel()
        }
        return try result.get()
    }

    /// Gives up on the signal: `result()` throws `.cancelled`, `callbacks` finishes, and the
    /// daemon is asked to end its route (`cancel`): no further handler is offered it and no
    /// callback or result reaches this client. The handler holding it when the cancel arrives
    /// is not told; its later callbacks are refused (`not_found`) and its verdict ignored.
    /// Cancelling the task awaiting `result()` does the same.
    public func cancel() {
        let withdraw = outcome.withLock { $0.withdraw }
        finish(.failure(.cancelled))
        withdraw?()
    }

    /// Installs what `cancel()` does in the client (remove the signal's entries).
    func onWithdraw(_ action: @escaping @Sendable () -> Void) {
        outcome.withLock { $0.withdraw = action }
    }

    func yield(_ callback: SignalCallback<Callback>) {
        continuation.yield(callback)
    }

    /// Records the outcome once: finishes `callbacks` first, then wakes `result()` waiters.
    func finish(_ result: Result<SignalResult, HeraldClientError>) {
        let waiters = outcome.withLock { outcome -> [CheckedContinuation<Result<SignalResult, HeraldClientError>, Never>]? in
            guard outcome.result == nil else { return nil }
            outcome.result = result
            outcome.withdraw = nil
            defer { outcome.waiters = [] }
            return outcome.waiters
        }
        guard let waiters else { return }
        continuation.finish()
        for waiter in waiters { waiter.resume(returning: result) }
    }
}

/// Where a sent signal's callbacks and result go (type-erased, kept in `ClientState`).
struct SignalSink: Sendable {
    let yield: @Sendable (String?, RawJSON?) -> Void
    let finish: @Sendable (Result<SignalResult, HeraldClientError>) -> Void
}

/// The signals this client sent that are still under way.
///
/// The daemon names a signal (`g7`) only in its final `ok`, but its callbacks (`{"callback":
/// "g7",…}`) come before that. So a callback with an id not seen yet is matched to the one
/// signal still unnamed when there is exactly one (the usual case: delivered live); with
/// several unnamed it is kept until an `ok` names its signal, and delivered just before that
/// signal's result. Either way every callback reaches its own signal, in order, before the result.
struct SignalTable {
    var sinks: [Int: SignalSink] = [:]
    var ridByID: [String: Int] = [:]
    var orphans: [String: [(from: String?, data: RawJSON?)]] = [:]

    /// The sink for a callback with `id`, or nil when it was buffered.
    mutating func route(id: String, from: String?, data: RawJSON?) -> SignalSink? {
        if let rid = ridByID[id] { return sinks[rid] }
        if orphans[id] == nil {
            let named = Set(ridByID.values)
            let unnamed = sinks.keys.filter { !named.contains($0) }
            if unnamed.count == 1, let rid = unnamed.first {
                ridByID[id] = rid
                return sinks[rid]
            }
            // No signal of ours is under way: a stray callback, dropped.
            if unnamed.isEmpty { return nil }
        }
        orphans[id, default: []].append((from, data))
        return nil
    }

    /// Removes the signal sent with `rid`; returns its sink and the callbacks kept for it.
    mutating func finish(rid: Int, id: String?) -> (SignalSink?, [(from: String?, data: RawJSON?)]) {
        let sink = sinks.removeValue(forKey: rid)
        var buffered: [(from: String?, data: RawJSON?)] = []
        if let id {
            buffered = orphans.removeValue(forKey: id) ?? []
            ridByID[id] = nil
        }
        for (key, value) in ridByID where value == rid { ridByID[key] = nil }
        if sinks.isEmpty {
            ridByID = [:]
            orphans = [:]
        }
        return (sink, buffered)
    }
}
