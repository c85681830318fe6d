/// A generic request for ops without a typed API yet (tools, the CLI, new daemon features).
extension HeraldClient {
    /// Sends `{"op":OP, …fields, "rid":…}` and returns the daemon's whole `ok` frame.
    /// - Parameters:
    ///   - op: the op name, e.g. `signal`.
    ///   - fields: top-level fields with raw JSON values, in order.
    ///   - timeout: seconds; nil uses `configuration.requestTimeout`.
    /// - Returns: the answer frame as JSON text (`{"ok":"signal",…}`).
    /// - Throws: the daemon's error (e.g. `unknown_op`), `.timeout`, `.notConnected`, ….
    public func call(_ op: String, _ fields: KeyValuePairs<String, RawJSON> = [:], timeout: Double? = nil) async throws(HeraldClientError) -> RawJSON {
        let frame = try await ask(op, timeout: timeout) { writer in
            for (key, value) in fields { writer.raw(key, value) }
        }
        return RawJSON(bytes: frame.bytes)
    }
}
