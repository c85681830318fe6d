import COpenSSL

/// A TLS failure worded for the person who has to fix it: what was being done, then OpenSSL's
/// own reason (e.g. `tls_key /etc/herald/key.pem: key values mismatch`).
public struct TLSError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The whole message.
    public var description: String

    /// Creates an error with a complete message.
    /// - Parameter description: what failed and why.
    public init(_ description: String) {
        self.description = description
    }

    /// An error naming `context`, with the reasons OpenSSL queued on this thread (the queue is
    /// emptied, so a later failure does not report this one's reasons).
    /// - Parameter context: what was being done, e.g. `tls_cert /path/cert.pem`.
    /// - Returns: `context: reason; reason…`, or `context: unknown OpenSSL error` when the queue is empty.
    static func fromQueue(_ context: String) -> TLSError {
        let reasons = drainReasons()
        return TLSError(context + ": " + (reasons.isEmpty ? "unknown OpenSSL error" : reasons.joined(separator: "; ")))
    }

    /// OpenSSL's reason strings for the errors queued on this thread, oldest first, without repeats.
    static func drainReasons() -> [String] {
        var reasons: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            let reason = ERR_reason_error_string(code).map { String(cString: $0) } ?? "error \(code)"
            if !reasons.contains(reason) { reasons.append(reason) }
        }
        return reasons
    }
}
