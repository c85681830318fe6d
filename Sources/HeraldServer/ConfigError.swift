/// A configuration or command-line problem, worded for the operator who has to fix it.
///
/// Start-up refuses to run on one of these; the description names the file or flag, the key
/// and the allowed values, so the fix needs no source reading.
public struct ConfigError: Error, CustomStringConvertible, Equatable, Sendable {
    /// The full message, e.g. `config/heraldd.json5: unknown key "prot"`.
    public var description: String

    /// Creates an error with a complete, operator-facing message.
    /// - Parameter description: The message, already naming the file or flag.
    public init(_ description: String) {
        self.description = description
    }
}
