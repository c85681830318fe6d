import Synchronization

/// A handler's verdict on a signal offered to it.
public enum SignalAction: String, Sendable {
    /// Not mine: offer it to the next handler (or level).
    case pass
    /// Handled: the route ends here.
    case stop
}

/// One signal offer from the daemon: `{"signal":LEVEL,"id":G,"sub":S,"origin":…,"data":…}`.
struct IncomingSignal: Sendable {
    let level: String
    let id: String
    let subscription: String
    let origin: String?
    let sender: String?
    let tag: RawJSON?
    let args: RawJSON?
    let isLast: Bool
    let data: RawJSON?

    init?(frame: ServerFrame) {
        guard let level = frame.string("signal"), let id = frame.string("id"), let sub = frame.string("sub") else { return nil }
        self.level = level
        self.id = id
        subscription = sub
        origin = frame.string("origin")
        sender = frame.string("from")
        tag = frame.raw("tag")
        args = frame.raw("args")
        isLast = frame.bool("last") == true
        data = frame.raw("data")
    }
}

/// What a signal handler knows about the offer, and its way back to the sender.
///
/// `callback` sends data to the signal's sender at once; the sender sees every callback
/// before the signal's result, because the client sends the `handled` answer only after the
/// handler returned. After that the offer is answered and `callback` throws.
public final class SignalContext: Sendable {
    /// The daemon's id of the signal.
    public let id: String
    /// The level this offer is at (a channel up the route from `origin`).
    public let level: Channel
    /// Where the signal started.
    public let origin: Channel
    /// The sender's client id.
    public let sender: String?
    /// The sender's `tag`, unchanged.
    public let tag: RawJSON?
    /// The handler subscription's `args`.
    public let args: RawJSON?
    /// The handler subscription's name.
    public let subscription: String
    private weak let client: HeraldClient?
    private let answered = Atomic<Bool>(false)

    init(offer: IncomingSignal, client: HeraldClient) {
        id = offer.id
        level = Channel(verbatim: offer.level)
        origin = Channel(verbatim: offer.origin ?? offer.level)
        sender = offer.sender
        tag = offer.tag
        args = offer.args
        subscription = offer.subscription
        self.client = client
    }

    /// Sends a typed callback to the signal's sender (before the handler returns).
    /// - Parameter value: any `Encodable` value.
    /// - Throws: `.encoding`, `.notConnected`, `.closed`, or `not_found` after the handler returned.
    public func callback<Value: Encodable>(_ value: Value) throws(HeraldClientError) {
        try callback(raw: try RawJSON(encoding: value))
    }

    /// Sends a raw callback to the signal's sender.
    /// - Parameter data: the callback's data, or nil for none.
    /// - Throws: `.notConnected`, `.closed`, or `not_found` after the handler returned.
    public func callback(raw data: RawJSON?) throws(HeraldClientError) {
        guard !answered.load(ordering: .acquiring) else {
            throw .server(code: "not_found", message: "signal \(id) was already answered", op: "callback")
        }
        guard let client else { throw .closed }
        var writer = FrameWriter(op: "callback")
        writer.string("id", id)
        writer.raw("data", data)
        try client.send(writer)
    }

    /// Sends `handled` once; later calls do nothing.
    /// Answers the offer now instead of when the handler returns; the handler's own result
    /// (and any later call) is then ignored, and `callback` throws.
    ///
    /// Useful when the handler goes on working after deciding, or when the caller must know
    /// the answer is queued (it is sent before any frame the client writes after this call).
    /// - Parameter action: `.pass` (next level) or `.stop`.
    public func answer(_ action: SignalAction) {
        guard !answered.exchange(true, ordering: .acquiringAndReleasing), let client else { return }
        // A lost connection makes the daemon count the offer as `pass`: nothing to report.
        try? client.send(HeraldClient.handledLine(id: id, action: action))
    }
}
