/// A raw answer to a request: who answered and the raw `data`.
public struct RawReply: Sendable {
    /// The answering connection's id.
    public let from: String?
    /// The reply's `data`; nil when the responder sent none.
    public let data: RawJSON?
}

/// Request/reply (docs/protocol.md "Request/reply"): `req` fans a request out with a reply
/// token, the first `reply` to that token is the answer.
extension HeraldClient {
    /// The daemon's accepted range for `timeout_ms`.
    static let requestTimeoutRange = 1...3_600_000

    /// Sends a request on its type's home channel and waits for the first reply, typed.
    ///
    ///     let sum = try await client.request(Add(a: 1, b: 2), timeout: .milliseconds(500))   // Int
    /// - Parameters:
    ///   - request: the request; its type's `channel` must be concrete.
    ///   - timeout: how long the daemon waits for a reply (its `timeout_ms`, 1 ms … 1 h); nil:
    ///     `ClientConfiguration.requestTimeout`.
    /// - Returns: the decoded reply.
    /// - Throws: `.noResponders` (at once: nobody listens), `.timeout` (no reply in time),
    ///   `.decoding` (the reply is not a `Reply`), `.badChannel`, `.notConnected`, `.disconnected`, ….
    public func request<Request: HeraldRequest>(_ request: Request, timeout: Duration? = nil) async throws(HeraldClientError) -> Request.Reply {
        try await self.request(request, to: Request.topic, timeout: timeout)
    }

    /// The `Double` form of ``request(_:timeout:)-(_,Duration?)``: `timeout` in seconds.
    /// - Parameters:
    ///   - request: the request.
    ///   - timeout: seconds.
    /// - Returns: the decoded reply.
    /// - Throws: as the `Duration` form.
    @available(*, deprecated, message: "pass a Duration: timeout: .seconds(5)")
    public func request<Request: HeraldRequest>(_ request: Request, timeout: Double) async throws(HeraldClientError) -> Request.Reply {
        try await self.request(request, to: Request.topic, timeout: .clamped(seconds: timeout))
    }

    /// Sends a request on a topic (e.g. an instance channel) and waits for the first reply.
    /// - Parameters:
    ///   - request: the request.
    ///   - topic: a concrete channel carrying `Request`.
    ///   - timeout: how long the daemon waits for a reply; nil: `ClientConfiguration.requestTimeout`.
    /// - Returns: the decoded reply.
    /// - Throws: `.noResponders`, `.timeout`, `.decoding`, `.badChannel`, `.notConnected`, ….
    public func request<Request: HeraldRequest>(_ request: Request, to topic: Topic<Request>, timeout: Duration? = nil) async throws(HeraldClientError) -> Request.Reply {
        let reply = try await self.request(raw: try RawJSON(encoding: request), to: topic.channel, timeout: timeout)
        do {
            return try (reply.data ?? .null).decode(as: Request.Reply.self)
        } catch {
            if case .decoding(let type, _, let message) = error {
                throw .decoding(type: type, channel: topic.channel.name, message: message)
            }
            throw error
        }
    }

    /// The `Double` form of ``request(_:to:timeout:)-(_,_,Duration?)``: `timeout` in seconds.
    /// - Parameters:
    ///   - request: the request.
    ///   - topic: a concrete channel carrying `Request`.
    ///   - timeout: seconds.
    /// - Returns: the decoded reply.
    /// - Throws: as the `Duration` form.
    @available(*, deprecated, message: "pass a Duration: timeout: .seconds(5)")
    public func request<Request: HeraldRequest>(_ request: Request, to topic: Topic<Request>, timeout: Double) async throws(HeraldClientError) -> Request.Reply {
        try await self.request(request, to: topic, timeout: .clamped(seconds: timeout))
    }

    /// The `Double` form of ``request(raw:to:timeout:)-(_,_,Duration?)``: `timeout` in seconds.
    /// - Parameters:
    ///   - data: the request's data, or nil.
    ///   - channel: a concrete channel.
    ///   - timeout: seconds.
    /// - Returns: the raw reply and who sent it.
    /// - Throws: as the `Duration` form.
    @available(*, deprecated, message: "pass a Duration: timeout: .seconds(5)")
    public func request(raw data: RawJSON?, to channel: Channel, timeout: Double) async throws(HeraldClientError) -> RawReply {
        try await request(raw: data, to: channel, timeout: .clamped(seconds: timeout))
    }

    /// Sends a raw request and waits for the first reply.
    ///
    /// Cancelling the calling task throws `.cancelled` at once and withdraws the request on
    /// the daemon as well (`cancel`): a reply sent after that reaches nobody.
    /// - Parameters:
    ///   - data: the request's data, or nil.
    ///   - channel: a concrete channel.
    ///   - timeout: how long the daemon waits for a reply (clamped to 1 ms … 1 h); nil:
    ///     `ClientConfiguration.requestTimeout`.
    /// - Returns: the raw reply and who sent it.
    /// - Throws: `.noResponders`, `.timeout`, the daemon's other errors, `.notConnected`, ….
    public func request(raw data: RawJSON?, to channel: Channel, timeout: Duration? = nil) async throws(HeraldClientError) -> RawReply {
        let name = try channel.validatedConcrete().name
        let milliseconds = Self.timeoutMilliseconds(timeout?.inSeconds ?? configuration.requestTimeout)
        do {
            // The daemon times the request out itself and answers `timeout`; the client's own
            // limit only guards against that answer being lost.
            // A cancelled caller withdraws the request on the daemon too (`cancel`), so its
            // waiter does not outlive the caller until `timeout_ms`.
            let frame = try await ask("req", timeout: Double(milliseconds) / 1000 + 5, withdrawsOnCancel: true) { writer in
                writer.string("ch", name)
                writer.int("timeout_ms", milliseconds)
                writer.raw("data", data)
            }
            return RawReply(from: frame.string("from"), data: frame.raw("data"))
        } catch .server(code: "no_responders", _, _) {
            throw .noResponders(channel: name)
        } catch .server(code: "timeout", _, _) {
            throw .timeout
        }
    }

    /// Seconds to the daemon's `timeout_ms`, clamped into its range (NaN and ≤ 0 become 1 ms).
    static func timeoutMilliseconds(_ seconds: Double) -> Int {
        let range = requestTimeoutRange
        guard seconds.isFinite, seconds > 0 else { return seconds == .infinity ? range.upperBound : range.lowerBound }
        let milliseconds = (seconds * 1000).rounded(.up)
        return milliseconds >= Double(range.upperBound) ? range.upperBound : Swift.max(range.lowerBound, Int(milliseconds))
    }

    /// Answers requests of a type on its home channel: the handler's return value is the reply.
    /// - Parameters:
    ///   - type: the request type; its `channel` (name or pattern) is subscribed.
    ///   - options: name, `group` (responders in one group share the requests), delivery.
    ///   - handler: computes the reply.
    /// - Returns: the subscription token (releasing it stops responding).
    /// - Throws: `.badChannel`, `.closed`.
    public func respond<Request: HeraldRequest>(
        to type: Request.Type, options: SubscriptionOptions = SubscriptionOptions(),
        handler: @escaping @Sendable (Request, EventMetadata) async throws -> Request.Reply
    ) throws(HeraldClientError) -> Subscription {
        try respond(to: Request.topic, options: options, handler: handler)
    }

    /// Answers requests on a topic: the handler's return value is sent as the reply.
    ///
    /// Each request runs the handler in its own task, so a slow answer does not hold up the
    /// next request. A handler that throws sends no reply (the requester gets `.timeout`; put
    /// expected failures in the `Reply` type instead) and the error goes to the error handler
    /// (`.responderFailed`). Plain events on the channel (a `pub`, no reply token) are ignored.
    /// With `options.group`, the daemon gives each request to one member of the group.
    /// - Parameters:
    ///   - topic: the channel or pattern requests arrive on.
    ///   - options: name, group, delivery.
    ///   - handler: computes the reply.
    /// - Returns: the subscription token (releasing it stops responding).
    /// - Throws: `.badChannel`, `.closed`.
    public func respond<Request: HeraldRequest>(
        to topic: Topic<Request>, options: SubscriptionOptions = SubscriptionOptions(),
        handler: @escaping @Sendable (Request, EventMetadata) async throws -> Request.Reply
    ) throws(HeraldClientError) -> Subscription {
        try subscribe(topic, options: options) { [weak self] request, metadata in
            guard let token = metadata.replyToken else { return }
            Task { [weak self] in
                do {
                    let reply = try await handler(request, metadata)
                    try self?.reply(to: token, with: reply)
                } catch let error as HeraldClientError {
                    self?.report(error)
                } catch {
                    self?.report(.responderFailed(subscription: metadata.subscription, channel: metadata.channel.name,
                                                  message: String(describing: error)))
                }
            }
        }
    }

    /// Sends a typed reply to a request's token (fire-and-forget; the first reply wins).
    /// - Parameters:
    ///   - token: `EventMetadata.replyToken` of the request.
    ///   - reply: the reply.
    /// - Throws: `.encoding`, `.notConnected`, `.closed`.
    public func reply<Reply: Encodable>(to token: String, with reply: Reply) throws(HeraldClientError) {
        try self.reply(to: token, raw: try RawJSON(encoding: reply))
    }

    /// Sends a raw reply to a request's token (fire-and-forget; the first reply wins; replies
    /// to an answered or expired request are ignored by the daemon).
    /// - Parameters:
    ///   - token: `EventMetadata.replyToken` of the request.
    ///   - data: the reply's data.
    /// - Throws: `.notConnected`, `.closed`.
    public func reply(to token: String, raw data: RawJSON?) throws(HeraldClientError) {
        var writer = FrameWriter(op: "reply")
        writer.string("to", token)
        writer.raw("data", data)
        try send(writer)
    }
}
