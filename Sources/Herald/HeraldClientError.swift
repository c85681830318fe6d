/// Everything the client reports as a failure, to a thrown call or to the error handler.
///
/// Server errors keep the daemon's stable wire code (`ServerErrorCode` is its raw string), so a
/// caller can branch on `code` without parsing messages.
public enum HeraldClientError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The daemon answered with an error frame, e.g. `bad_channel` or `unknown_op`.
    case server(code: String, message: String, op: String?)
    /// No connection is up (never connected, closed, or between reconnects).
    case notConnected
    /// The connection dropped before the answer arrived.
    case disconnected
    /// The client was closed.
    case closed
    /// The calling task was cancelled (Swift's `CancellationError`, in this type's typed-throws
    /// form): the call stopped waiting at once and withdrew what it had registered.
    case cancelled
    /// No answer arrived in time; for a request: no responder replied within its timeout
    /// (the daemon's `timeout`).
    case timeout
    /// A request reached no responder: nothing subscribes to the channel, every responder is
    /// locked, or the only one is the requester's own with `echo:false` (the daemon's
    /// `no_responders`, answered at once).
    case noResponders(channel: String)
    /// A responder's handler threw, so no reply was sent (the requester will time out).
    case responderFailed(subscription: String, channel: String, message: String)
    /// Connecting failed (name resolution, refused, timed out, bad handshake).
    case connectionFailed(String)
    /// A channel or pattern is not valid where it was used.
    case badChannel(String)
    /// An event or value could not be encoded.
    case encoding(String)
    /// An event, answer or value could not be decoded into the expected type.
    case decoding(type: String, channel: String?, message: String)
    /// A server frame could not be understood at all.
    case malformedFrame(String)
    /// After a reconnect a subscription could not catch up on what it missed
    /// (the daemon said `recovered:false`, has no history, or restarted).
    case historyLost(subscription: String, channel: String)
    /// A subscription ended because the daemon refused its `sub` (its token's end is
    /// ``SubscriptionEnd/refused(_:)``). A refused restore is ``restoreFailed(kind:channel:cause:)``.
    case subscriptionEnded(subscription: String, channel: String, reason: String)
    /// Something this client held could not be restored after a reconnect, and is forgotten
    /// (no longer in ``HeraldClient/links``, ``HeraldClient/declaredChannels``, its lock or
    /// subscription gone; a subscription's token ends with ``SubscriptionEnd/refused(_:)``).
    ///
    /// `cause` is the daemon's last refusal: a non-passing one at once (`forbidden`, `cycle`,
    /// `limit`, …), or a passing one (`conflict` for an instance channel or a link, `unavailable`)
    /// that still held when ``ClientConfiguration/restoreRetryTimeout`` ran out. `channel` is the
    /// channel or pattern (for a lock by subscription name, that subscription's).
    indirect case restoreFailed(kind: RestoreKind, channel: String, cause: HeraldClientError)
    /// The client's node was declared down by its cluster while it ran, and closed the
    /// connection (`{"error":"node_reset"}`): not a failure of the client. It reconnects (to
    /// the next endpoint) and restores everything, as after any lost connection; reported once
    /// per reset, for information.
    case nodeReset(message: String)
    /// The client reconnected to a new data set: the daemon (or the cluster) started afresh
    /// since the last connection (another `epoch` in `info`), so no `since` can catch up and
    /// retained values may differ. Reported once per such reconnect, to the client's error
    /// handler, instead of one ``historyLost(subscription:channel:)`` per subscription; each
    /// subscription that had events says so on its token (``Subscription/recovered`` is
    /// `false`), one that never had an event is not concerned. Mirrors read their state again.
    case epochChanged(previous: String, current: String)
    /// A publish could not be kept for sending after the reconnect: the outbox
    /// (``ClientConfiguration/offlinePublishing``) already holds `count` publishes or `bytes`
    /// bytes, its bound. Nothing was kept or sent.
    case offlineQueueFull(count: Int, bytes: Int)
    /// `post` found more than `bytes` (``ClientConfiguration/maxOutboundBytes``) queued for the
    /// daemon: nothing was queued; await ``HeraldClient/waitForOutboundRoom()`` and post again.
    case outboundFull(bytes: Int)
    /// Events one subscription will never get (the daemon's `gap` frame), for a subscription
    /// without ``SubscriptionOptions/onGap``.
    case gap(EventGap)

    /// A signal handler failed (threw, or the signal did not decode); the offer was passed on.
    case signalHandlerFailed(subscription: String, channel: String, message: String)
    /// A compare-and-set lost: the channel's `rev` was not the one given; `rev` is the
    /// channel's revision as read right after the refusal.
    case conflict(channel: String, rev: Int)

    /// Whether this is the daemon's `unknown_op`, i.e. the daemon does not implement the op.
    public var isUnsupportedByDaemon: Bool {
        if case .server(let code, _, _) = self { return code == "unknown_op" }
        return false
    }

    /// A one-line human description.
    public var description: String {
        switch self {
        case .server(let code, let message, let op):
            return "\(code): \(message)" + (op.map { " (op \($0))" } ?? "")
        case .notConnected: return "not connected"
        case .disconnected: return "connection lost before the answer arrived"
        case .closed: return "client closed"
        case .cancelled: return "cancelled"
        case .timeout: return "timed out"
        case .noResponders(let channel): return "no responders on \(channel)"
        case .responderFailed(let sub, let channel, let message):
            return "responder \(sub) on \(channel) failed, no reply sent: \(message)"
        case .connectionFailed(let why): return "cannot connect: \(why)"
        case .badChannel(let why): return "bad channel: \(why)"
        case .encoding(let why): return "cannot encode: \(why)"
        case .decoding(let type, let channel, let message):
            return "cannot decode \(type)" + (channel.map { " from \($0)" } ?? "") + ": \(message)"
        case .malformedFrame(let why): return "malformed server frame: \(why)"
        case .historyLost(let sub, let channel):
            return "subscription \(sub) on \(channel) may have missed events while disconnected"
        case .signalHandlerFailed(let sub, let channel, let message):
            return "signal handler \(sub) on \(channel) failed, passed on: \(message)"
        case .conflict(let channel, let rev):
            return "conflict on \(channel): its rev is now \(rev)"
        case .subscriptionEnded(let sub, let channel, let reason):
            return "subscription \(sub) on \(channel) ended: \(reason)"
        case .restoreFailed(let kind, let channel, let cause):
            return "could not restore the \(kind.naming(channel)) after a reconnect, forgotten: \(cause)"
        case .nodeReset(let message):
            return "node reset by the cluster, reconnecting: \(message)"
        case .gap(let gap):
            return gap.description
        case .offlineQueueFull(let count, let bytes):
            return "offline publish refused: the outbox holds its bound (\(count) publishes or \(bytes) bytes)"
        case .outboundFull(let bytes):
            return "post refused: more than \(bytes) bytes wait to be written"
        case .epochChanged(let previous, let current):
            return "reconnected to a new data set (epoch \(previous) -> \(current)): events published while away are not replayed"
        }
    }
}

extension HeraldClientError {
    /// The cause without the `cannot connect:` prefix, for nesting.
    var reason: String {
        if case .connectionFailed(let why) = self { return why }
        return description
    }
}
