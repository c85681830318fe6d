/// A generic request for ops without a typed API yet (tools, the CLI, new daemon features).
extension HeraldClient {
    /// Sends `{"op":OP, …fields, "rid":…}` and returns the daemon's whole `ok` frame.
    /// - Parameters:
    ///   - op: the op name, e.g. `signal`.
    ///   - fields: top-level fields with raw JSON values, in order.
    ///   - timeout: how long to wait for the answer; nil uses `configuration.requestTimeout`.
    /// - Returns: the answer frame as JSON text (`{"ok":"signal",…}`).
    /// - Throws: the daemon's error (e.g. `unknown_op`), `.timeout`, `.notConnected`, ….
    public func call(_ op: String, _ fields: KeyValuePairs<String, RawJSON> = [:], timeout: Duration? = nil) async throws(HeraldClientError) -> RawJSON {
        let frame = try await ask(op, timeout: timeout?.inSeconds) { writer in
            for (key, value) in fields { writer.raw(key, value) }
        }
        return RawJSON(bytes: frame.bytes)
    }

    /// The `Double` form of ``call(_:_:timeout:)-(_,_,Duration?)``: `timeout` in seconds.
    /// - Parameters:
    ///   - op: the op name.
    ///   - fields: top-level fields with raw JSON values, in order.
    ///   - timeout: seconds.
    /// - Returns: the answer frame as JSON text.
    /// - Throws: as the `Duration` form.
    @available(*, deprecated, message: "pass a Duration: timeout: .seconds(5)")
    public func call(_ op: String, _ fields: KeyValuePairs<String, RawJSON> = [:], timeout: Double) async throws(HeraldClientError) -> RawJSON {
        try await call(op, fields, timeout: .clamped(seconds: timeout))
    }
}
