import HeraldArguments

/// Everything given on the `herald` command line, before the command runs.
struct Invocation {
    var command: String?
    var positionals: [String] = []
    var host = "127.0.0.1"
    var port = 7400
    var unixPath: String?
    var token: String?
    var name = "herald-cli"
    var json = false
    var help = false
    var receipt = false
    var count: Int?
    var group: String?
    var timeoutText: String?
    var ifRev: Int?
    // reply, handle, bench
    var dataText: String?
    var callbackText: String?
    var stop = false
    var size: Int?
    // presence
    var watch = false
    /// `--tls`, `--tls-ca FILE`, `--tls-insecure` (see `Invocation+TLS`).
    var tls = TLSFlags()
    /// Command-specific flags that were given, to reject those a command does not take.
    var commandFlags: [String] = []

    /// Flags every command takes.
    static let globalFlags: Set<String> = ["--host", "--port", "--unix", "--token", "--name", "--help", "-h",
                                           "--tls", "--tls-ca", "--tls-insecure"]

    /// Parses `arguments` (without the program name); flags may come before or after the command.
    static func parse(_ arguments: [String]) throws(ArgumentError) -> Invocation {
        var invocation = Invocation()
        var scanner = ArgumentScanner(arguments)
        while let token = scanner.next() {
            switch token {
            case .positional(let text):
                if invocation.command == nil { invocation.command = text } else { invocation.positionals.append(text) }
            case .flag(let flag):
                try invocation.take(flag, from: &scanner)
            }
        }
        return invocation
    }

    private mutating func take(_ flag: ArgumentScanner.Flag, from scanner: inout ArgumentScanner) throws(ArgumentError) {
        if !Self.globalFlags.contains(flag.name) { commandFlags.append(flag.name) }
        switch flag.name {
        case "--help", "-h":
            try flag.rejectValue()
            help = true
        case "--json":
            try flag.rejectValue()
            json = true
        case "--receipt":
            try flag.rejectValue()
            receipt = true
        case "--host": host = try scanner.value(for: flag)
        case "--unix": unixPath = try scanner.value(for: flag)
        case "--token": token = try scanner.value(for: flag)
        case "--name": name = try scanner.value(for: flag)
        case "--group": group = try scanner.value(for: flag)
        case "--port":
            port = try Self.integer(try scanner.value(for: flag), flag: flag.name, in: 1...65535)
        case "--count":
            count = try Self.integer(try scanner.value(for: flag), flag: flag.name, in: 1...Int.max)
        case "--if-rev":
            ifRev = try Self.integer(try scanner.value(for: flag), flag: flag.name, in: 0...Int.max)
        case "--data": dataText = try scanner.value(for: flag)
        case "--callback": callbackText = try scanner.value(for: flag)
        case "--stop":
            try flag.rejectValue()
            stop = true
        case "--watch":
            try flag.rejectValue()
            watch = true
        case "--size":
            size = try Self.integer(try scanner.value(for: flag), flag: flag.name, in: 1...1_000_000)
        case "--tls", "--tls-ca", "--tls-insecure":
            try tls.take(flag, from: &scanner)
        case "--timeout":
            // Its unit depends on the command (req: ms, like the protocol's timeout_ms; sub and
            // signal: seconds), which may come after the flag: checked in `timeoutSeconds`.
            timeoutText = try scanner.value(for: flag)
        default:
            throw .unknownFlag(flag.name)
        }
    }

    /// `--timeout` in seconds: for `req` the flag is integer milliseconds (1…3600000), for
    /// the other commands a positive number of seconds.
    func timeoutSeconds() throws(ArgumentError) -> Double? {
        guard let text = timeoutText else { return nil }
        if command == "req" {
            return Double(try Self.integer(text, flag: "--timeout", in: 1...3_600_000)) / 1000
        }
        guard let seconds = Double(text), seconds > 0, seconds.isFinite else {
            throw .badValue("--timeout", text, expected: "a positive number of seconds")
        }
        return seconds
    }

    private static func integer(_ text: String, flag: String, in range: ClosedRange<Int>) throws(ArgumentError) -> Int {
        guard let value = Int(text), range.contains(value) else {
            let upper = range.upperBound == Int.max ? "" : "\(range.upperBound)"
            throw .badValue(flag, text, expected: "an integer in \(range.lowerBound)...\(upper)")
        }
        return value
    }

    /// Fails when a flag was given that `command` does not take.
    func check(allowed: Set<String>, positionals range: ClosedRange<Int>, command: String) throws(ArgumentError) {
        if let stray = commandFlags.first(where: { !allowed.contains($0) }) {
            throw ArgumentError("\(command): \(stray) does not apply (see herald \(command) --help)")
        }
        if positionals.count < range.lowerBound {
            throw ArgumentError("\(command): missing argument (see herald \(command) --help)")
        }
        if positionals.count > range.upperBound {
            throw .unexpectedArgument(positionals[range.upperBound])
        }
    }
}
