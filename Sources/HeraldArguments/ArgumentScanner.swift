/// Walks command-line arguments and yields flags (with any `=value`) and positionals.
///
/// It knows no flag names: the caller decides which flags take a value and asks for it with
/// `value(for:)`, so one scanner serves `heraldd` and the future `herald` CLI with subcommands.
/// Spellings: `--name value`, `--name=value`, `-h` (one letter, no bundling), and `--` to end
/// flags (everything after is positional). `-` and negative numbers such as `-5` are positional.
public struct ArgumentScanner: Sendable {
    /// One flag as written on the command line.
    public struct Flag: Equatable, Sendable {
        /// The flag with its dashes, e.g. `--port` or `-h`; error messages echo it unchanged.
        public var name: String
        /// The text after the first `=`, or `nil` when the flag had none.
        public var inlineValue: String?

        /// Creates a flag token.
        /// - Parameters:
        ///   - name: The flag with its dashes.
        ///   - inlineValue: The text after `=`, if any.
        public init(name: String, inlineValue: String? = nil) {
            self.name = name
            self.inlineValue = inlineValue
        }

        /// Fails if the flag, being a switch, was given `=value`.
        /// - Throws: `ArgumentError.unexpectedValue` naming the flag.
        public func rejectValue() throws(ArgumentError) {
            if let inlineValue {
                throw .unexpectedValue(name, inlineValue)
            }
        }
    }

    /// What `next()` found.
    public enum Token: Equatable, Sendable {
        /// A flag; call `value(for:)` if it takes a value.
        case flag(Flag)
        /// An argument that is not a flag (or any argument after `--`).
        case positional(String)
    }

    private let arguments: [String]
    private var index = 0
    private var flagsEnded = false

    /// Creates a scanner over `arguments`, which must not include the program name (`argv[0]`).
    /// - Parameter arguments: Usually `Array(CommandLine.arguments.dropFirst())`.
    public init(_ arguments: [String]) {
        self.arguments = arguments
    }

    /// The arguments not yet consumed, e.g. to hand to a subcommand's own scanner.
    public var remaining: [String] {
        Array(arguments[index...])
    }

    /// Consumes and classifies the next argument.
    /// - Returns: The next token, or `nil` when all arguments are consumed.
    public mutating func next() -> Token? {
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if flagsEnded || !Self.looksLikeFlag(argument) {
                return .positional(argument)
            }
            if argument == "--" {
                flagsEnded = true
                continue
            }
            return .flag(Self.split(argument))
        }
        return nil
    }

    /// The value of a flag that takes one: its `=value`, else the next argument (consumed).
    ///
    /// A following argument that itself starts with `--` is taken as a forgotten value rather
    /// than swallowed, because `--unix --port 1` is far likelier a mistake than a path named `--port`.
    /// - Parameter flag: The flag `next()` just returned.
    /// - Returns: The value text, possibly empty when written as `--flag=`.
    /// - Throws: `ArgumentError.missingValue` naming the flag.
    public mutating func value(for flag: Flag) throws(ArgumentError) -> String {
        if let inline = flag.inlineValue {
            return inline
        }
        guard index < arguments.count, !arguments[index].hasPrefix("--") else {
            throw .missingValue(flag.name)
        }
        defer { index += 1 }
        return arguments[index]
    }

    /// `--x`, `--x=y` and `-x` are flags; `-`, `-5` and anything without a dash are not.
    private static func looksLikeFlag(_ argument: String) -> Bool {
        if argument.hasPrefix("--") { return true }
        guard argument.hasPrefix("-"), let second = argument.dropFirst().first else { return false }
        return !second.isNumber
    }

    private static func split(_ argument: String) -> Flag {
        guard argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") else {
            return Flag(name: argument)
        }
        let value = String(argument[argument.index(after: equals)...])
        return Flag(name: String(argument[..<equals]), inlineValue: value)
    }
}
