/// A command-line mistake, naming the flag or argument at fault.
///
/// Separate from `ConfigError` so `ArgumentScanner` carries no daemon types and can move to a
/// module the `herald` CLI also imports.
public struct ArgumentError: Error, CustomStringConvertible, Equatable, Sendable {
    /// The operator-facing message, e.g. `--port: missing value`.
    public var description: String

    /// Creates an error with a complete message.
    /// - Parameter description: The message, already naming the flag.
    public init(_ description: String) {
        self.description = description
    }

    /// A flag nobody defined, usually a typo.
    /// - Parameter flag: The flag as written, e.g. `--prot`.
    /// - Returns: `unknown flag "--prot" (see --help)`.
    public static func unknownFlag(_ flag: String) -> ArgumentError {
        ArgumentError("unknown flag \"\(flag)\" (see --help)")
    }

    /// A flag that takes a value given none.
    /// - Parameter flag: The flag as written.
    /// - Returns: `--port: missing value`.
    public static func missingValue(_ flag: String) -> ArgumentError {
        ArgumentError("\(flag): missing value")
    }

    /// A switch given a value with `=`.
    /// - Parameters:
    ///   - flag: The flag as written.
    ///   - value: The value after `=`.
    /// - Returns: `--help: takes no value, got "yes"`.
    public static func unexpectedValue(_ flag: String, _ value: String) -> ArgumentError {
        ArgumentError("\(flag): takes no value, got \"\(value)\"")
    }

    /// A flag value of the wrong form or out of range.
    /// - Parameters:
    ///   - flag: The flag as written.
    ///   - value: The value as the operator wrote it.
    ///   - expected: The allowed values in words.
    /// - Returns: `--port: bad value "abc" (expected an integer in 0...65535)`.
    public static func badValue(_ flag: String, _ value: String, expected: String) -> ArgumentError {
        ArgumentError("\(flag): bad value \"\(value)\" (expected \(expected))")
    }

    /// A positional argument where the command takes none.
    /// - Parameter argument: The argument as written.
    /// - Returns: `unexpected argument "foo"`.
    public static func unexpectedArgument(_ argument: String) -> ArgumentError {
        ArgumentError("unexpected argument \"\(argument)\"")
    }
}
