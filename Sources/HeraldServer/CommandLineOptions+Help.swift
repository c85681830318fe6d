extension CommandLineOptions {
    /// The text `heraldd --help` prints: usage, then every flag with one line and its default.
    ///
    /// Built from the same flag table the parser uses, so a new flag shows up here by construction.
    public static let helpText: String = {
        let width = (DaemonFlag.allCases.map(\.usage.count).max() ?? 0) + 2
        let lines = DaemonFlag.allCases.map { flag in
            "  " + flag.usage + String(repeating: " ", count: width - flag.usage.count) + flag.summary
        }
        return """
            Usage: heraldd [options]
                   heraldd --reshard <old> <new> [--key-prefix <prefix>]

            Runs the Herald pub/sub daemon. Flags override the config file.
            With --reshard, moves a stopped cluster's channels to a new shard list instead
            (docs/operations.md, "Changing the shard list").

            Options:
            \(lines.joined(separator: "\n"))

            """
    }()
}
