/// What the operator asked for on `heraldd`'s command line.
///
/// Parsing only checks each value's form (a number is a number, a level is a level); ranges are
/// checked by `apply(to:)` with the same rules as the config file, so both report alike.
public struct CommandLineOptions: Equatable, Sendable {
    /// `--config`: the JSON5 file to load, or `nil` for built-in defaults.
    public var configPath: String?
    /// `--host`: overrides `host`.
    public var host: String?
    /// `--port`: overrides `port`.
    public var port: Int?
    /// `--unix`: overrides `unix`.
    public var unix: String?
    /// `--data-dir`: overrides `data_dir`.
    public var dataDir: String?
    /// `--workers`: overrides `workers`.
    public var workers: Int?
    /// `--log-level`: overrides `log_level`.
    public var logLevel: LogLevel?
    /// `--check-config`: validate, report and exit instead of serving.
    public var checkConfig: Bool
    /// `--repair`: start even when the state files are damaged (`StateRepair`).
    public var repair: Bool = false
    /// `--hash-token`: print the `token_hash` for this token and exit.
    public var hashToken: String?
    /// `--reshard OLD NEW`: move channels from one shard list to another and exit (`Reshard`).
    public var reshard: ReshardLists?
    /// `--key-prefix`: the cluster's `key_prefix`, for `--reshard`.
    public var keyPrefix: String?
    /// `--version`: print the version and exit.
    public var showVersion: Bool
    /// `--help` or `-h`: print `helpText` and exit.
    public var showHelp: Bool

    /// Creates options with nothing overridden and no switches set.
    public init(
        configPath: String? = nil, host: String? = nil, port: Int? = nil, unix: String? = nil,
        dataDir: String? = nil, workers: Int? = nil, logLevel: LogLevel? = nil,
        checkConfig: Bool = false, showVersion: Bool = false, showHelp: Bool = false
    ) {
        self.configPath = configPath
        self.host = host
        self.port = port
        self.unix = unix
        self.dataDir = dataDir
        self.workers = workers
        self.logLevel = logLevel
        self.checkConfig = checkConfig
        self.showVersion = showVersion
        self.showHelp = showHelp
    }

    /// Parses `heraldd`'s arguments; a repeated flag keeps its last value.
    /// - Parameter args: The arguments without the program name (`argv[0]`).
    /// - Returns: The options found.
    /// - Throws: `ConfigError` naming the flag for an unknown flag, a missing value or a malformed value.
    public static func parse(_ args: [String]) throws(ConfigError) -> CommandLineOptions {
        do throws(ArgumentError) {
            var scanner = ArgumentScanner(args)
            var options = CommandLineOptions()
            while let token = scanner.next() {
                switch token {
                case .flag(let flag): try options.take(flag, from: &scanner)
                case .positional(let argument): throw .unexpectedArgument(argument)
                }
            }
            try options.checkReshard()
            return options
        } catch {
            throw ConfigError(error.description)
        }
    }

    /// Records one flag, consuming its value from the scanner when it takes one.
    private mutating func take(_ flag: ArgumentScanner.Flag, from scanner: inout ArgumentScanner) throws(ArgumentError) {
        guard let known = DaemonFlag.named(flag.name) else { throw .unknownFlag(flag.name) }
        switch known {
        case .checkConfig, .repair, .version, .help:
            try flag.rejectValue()
            setSwitch(known)
        case .config: configPath = try scanner.value(for: flag)
        case .hashToken: hashToken = try scanner.value(for: flag)
        case .reshard: reshard = try Self.lists(after: flag, from: &scanner)
        case .keyPrefix: keyPrefix = try scanner.value(for: flag)
        case .host: host = try scanner.value(for: flag)
        case .unix: unix = try scanner.value(for: flag)
        case .dataDir: dataDir = try scanner.value(for: flag)
        case .port: port = try Self.integer(try scanner.value(for: flag), flag: flag, key: .port)
        case .workers: workers = try Self.integer(try scanner.value(for: flag), flag: flag, key: .workers)
        case .logLevel:
            let text = try scanner.value(for: flag)
            guard let level = LogLevel(rawValue: text) else {
                throw .badValue(flag.name, text, expected: ConfigKey.logLevel.rule.expectation)
            }
            logLevel = level
        }
    }

    /// `--reshard`'s two values: OLD (inline after `=` or the next argument) and NEW.
    private static func lists(after flag: ArgumentScanner.Flag, from scanner: inout ArgumentScanner) throws(ArgumentError) -> ReshardLists {
        let old = try scanner.value(for: flag)
        do throws(ArgumentError) {
            return ReshardLists(old: old, new: try scanner.value(for: ArgumentScanner.Flag(name: flag.name)))
        } catch {
            throw ArgumentError("\(flag.name): missing NEW (give the old shard list, then the new one)")
        }
    }

    /// `--reshard` is a mode of its own: it takes `--key-prefix` and nothing else, and
    /// `--key-prefix` means nothing without it.
    private func checkReshard() throws(ArgumentError) {
        guard reshard != nil else {
            if keyPrefix != nil { throw ArgumentError("--key-prefix: only with --reshard") }
            return
        }
        let others: [(Bool, DaemonFlag)] = [
            (configPath != nil, .config), (host != nil, .host), (port != nil, .port), (unix != nil, .unix),
            (dataDir != nil, .dataDir), (workers != nil, .workers), (logLevel != nil, .logLevel),
            (checkConfig, .checkConfig), (repair, .repair), (hashToken != nil, .hashToken),
        ]
        if let other = others.first(where: \.0) {
            throw ArgumentError("--reshard: cannot be combined with \(other.1.rawValue) (it takes only --key-prefix)")
        }
    }

    private mutating func setSwitch(_ flag: DaemonFlag) {
        switch flag {
        case .checkConfig: checkConfig = true
        case .repair: repair = true
        case .version: showVersion = true
        case .help: showHelp = true
        default: break
        }
    }

    private static func integer(_ text: String, flag: ArgumentScanner.Flag, key: ConfigKey) throws(ArgumentError) -> Int {
        guard let value = Int(text) else {
            throw .badValue(flag.name, text, expected: key.rule.expectation)
        }
        return value
    }
}

/// The two shard lists of `heraldd --reshard OLD NEW`, as written (comma-separated
/// `redis://` URLs; `Reshard` reads them).
public struct ReshardLists: Equatable, Sendable {
    /// The list the cluster ran with.
    public var old: String
    /// The list it is to run with.
    public var new: String

    /// Creates the pair.
    public init(old: String, new: String) {
        self.old = old
        self.new = new
    }
}
