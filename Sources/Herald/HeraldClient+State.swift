/// A retained value and its revision, as `get` answers.
public struct Retained<Value: Sendable>: Sendable {
    /// The value; nil when the channel has none.
    public let value: Value?
    /// The channel's state revision (0 when it never had state).
    public let rev: Int
}

/// Retained values (PROTOCOL.md `set`/`get`).
extension HeraldClient {
    /// Sets a channel's retained value.
    /// - Parameters:
    ///   - value: any `Encodable` value.
    ///   - channel: a concrete channel.
    ///   - ifRev: only if the channel's `rev` is this (else the daemon's `conflict`).
    /// - Returns: the new `rev`.
    /// - Throws: `conflict`, `unknown_op` today, `.encoding`, `.notConnected`, ….
    @discardableResult
    public func set<Value: Encodable>(_ value: Value, at channel: Channel, ifRev: Int? = nil) async throws(HeraldClientError) -> Int {
        try await set(raw: try RawJSON(encoding: value), at: channel, ifRev: ifRev)
    }

    /// Sets a channel's retained value from raw JSON.
    /// - Parameters:
    ///   - value: one JSON value.
    ///   - channel: a concrete channel.
    ///   - ifRev: only if the channel's `rev` is this.
    /// - Returns: the new `rev`.
    /// - Throws: `conflict`, `unknown_op` today, `.notConnected`, ….
    @discardableResult
    public func set(raw value: RawJSON, at channel: Channel, ifRev: Int? = nil) async throws(HeraldClientError) -> Int {
        let name = try channel.validatedConcrete().name
        let frame = try await ask("set") { writer in
            writer.string("ch", name)
            writer.int("if_rev", ifRev)
            writer.raw("value", value)
        }
        return frame.int("rev") ?? 0
    }

    /// Reads a channel's retained value.
    /// - Parameters:
    ///   - type: the value's type.
    ///   - channel: a concrete channel.
    /// - Returns: the value (nil when unset) and its `rev`.
    /// - Throws: `.decoding`, `unknown_op` today, `.notConnected`, ….
    public func get<Value: Decodable & Sendable>(_ type: Value.Type, at channel: Channel) async throws(HeraldClientError) -> Retained<Value> {
        let raw = try await get(rawAt: channel)
        guard let value = raw.value, value != .null else { return Retained(value: nil, rev: raw.rev) }
        return Retained(value: try value.decode(as: Value.self), rev: raw.rev)
    }

    /// Reads a channel's retained value as raw JSON.
    /// - Parameter channel: a concrete channel.
    /// - Returns: the raw value and its `rev`.
    /// - Throws: `unknown_op` today, `.notConnected`, ….
    public func get(rawAt channel: Channel) async throws(HeraldClientError) -> Retained<RawJSON> {
        let name = try channel.validatedConcrete().name
        let frame = try await ask("get") { writer in writer.string("ch", name) }
        return Retained(value: frame.raw("value"), rev: frame.int("rev") ?? 0)
    }

    /// Deletes a channel's retained value or list (`del`); mirrors see the value become nil.
    /// - Parameters:
    ///   - channel: a concrete channel.
    ///   - ifRev: only if the channel's `rev` is this (else the daemon's `conflict`).
    /// - Returns: the new `rev` (deletes count as changes, so `since` and mirrors see them).
    /// - Throws: `conflict`, `.badChannel`, `.notConnected`, ….
    @discardableResult
    public func delete(at channel: Channel, ifRev: Int? = nil) async throws(HeraldClientError) -> Int {
        let name = try channel.validatedConcrete().name
        let frame = try await ask("del") { writer in
            writer.string("ch", name)
            writer.int("if_rev", ifRev)
        }
        return frame.int("rev") ?? 0
    }

    /// Re-sends a channel's value (or list) to its subscribers as a `touch` event, without
    /// changing it or its `rev`, e.g. to wake up consumers after an outside change.
    /// - Parameter channel: a concrete channel holding state.
    /// - Returns: the channel's `rev` (unchanged).
    /// - Throws: the daemon's `not_found` (no state), `.badChannel`, `.notConnected`, ….
    @discardableResult
    public func touch(_ channel: Channel) async throws(HeraldClientError) -> Int {
        let name = try channel.validatedConcrete().name
        let frame = try await ask("touch") { writer in writer.string("ch", name) }
        return frame.int("rev") ?? 0
    }
}
